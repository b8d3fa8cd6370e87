"""Robustness of the run stores (findings 2, 5, 11, 13 of the robustness hunt).

* A new run under an id the store already holds is refused (`StoreError` naming the fix) by
  every store, atomically, and the stored run is left as it was; a resumed run and the saves of
  one run as it goes still work.
* A damaged store (rows that do not decode, a dropped table) is a `StoreError` naming the store
  and the fix, from the API and from `afpc trace`/`why` (exit 1), never a raw exception or an
  "internal error".
* Read-only commands never create a store: a mistyped `--store` is an error naming it.
* `afp.stores.sqlite(None)` is a `TypeError`, not a file named `None`.

Each test failed before the fix (checked against the previous store, runner and CLI modules).
"""
from __future__ import annotations

import sqlite3
import threading

import pytest
from click.testing import CliRunner
from interp_support import call, make
from store_support import pg_url  # noqa: F401  (fixture)

from afp_dsl import stores
from afp_dsl.cli import main
from afp_dsl.runner import approve
from afp_dsl.trace import Event

KINDS = ("memory", "sqlite", "postgres")
SPEC = """
agent g { tools = [refund] }
tool refund { description = "refund" input { amount: number } check_in = args.amount > 100 }
"""


@pytest.fixture(params=KINDS)
def opener(request, tmp_path):
    """Opens (another handle on) one store of the kind under test."""
    opened = []
    if request.param == "memory":
        shared = stores.memory(max_runs=None)
        make_one = lambda: shared  # noqa: E731
    elif request.param == "sqlite":
        make_one = lambda: stores.sqlite(tmp_path / "runs.db")  # noqa: E731
    else:
        url = request.getfixturevalue("pg_url")
        make_one = lambda: stores.postgres(url)  # noqa: E731

    def open_():
        opened.append(make_one())
        return opened[-1]
    yield open_
    for s in opened:
        s.close()


def ev(run: str, seq: int, kind: str = "tool.called") -> Event:
    return Event(seq, f"{run}:{seq}", kind, 1, seq, (), None, {"n": seq})


def agent_on(store, script, ran, run_id="same"):
    agent, prov = make(SPEC, script, store=store,
                       tools={"refund": lambda amount: ran.append(amount) or "ok"})
    agent.effects.run_ids = lambda: run_id
    return agent, prov


# ---------------------------------------------------------------- finding 2: one run per id
def test_a_new_run_under_a_used_id_is_refused_and_the_stored_run_kept(opener):
    s = opener()
    s.save_run("r1", "a", None, "running", None, None, {}, [ev("r1", 1, "run.started")],
               new_run=True)
    s.save_run("r1", "a", None, "finished", "answered", "first", {},
               [ev("r1", 1, "run.started"), ev("r1", 2)])  # the same run, saved again
    with pytest.raises(stores.StoreError, match=r"already holds a run `r1`.*Effects\.live\(\)"):
        s.save_run("r1", "b", None, "finished", "answered", "second", {},
                   [ev("r1", 1, "run.started"), ev("r1", 2), ev("r1", 3)], new_run=True)
    r = opener().run("r1")
    assert (r["agent"], r["answer"], r["events"]) == ("a", "first", 2)
    assert [e.seq for e in s.events("r1")] == [1, 2]


def test_racing_first_saves_of_one_id_let_exactly_one_run_in(opener):
    handles = [opener() for _ in range(4)]
    won: list[int] = []
    gate = threading.Barrier(8)

    def start(i):
        gate.wait()
        try:
            handles[i % 4].save_run("r1", f"w{i}", None, "running", None, None, {},
                                    [ev("r1", 1, "run.started")], new_run=True)
            won.append(i)
        except stores.StoreError:
            pass
    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and handles[0].run("r1")["agent"] == f"w{won[0]}"


def test_an_agent_refuses_a_repeated_run_id_before_anything_runs(opener):
    ran: list = []
    agent, prov = agent_on(opener(), [call("refund", amount=5), "one", call("refund", amount=7),
                                      "two"], ran)
    assert agent.run("first").answer == "one"
    with pytest.raises(stores.StoreError, match=r"already holds a run `same`.*run_ids="):
        agent.run("second")
    assert ran == [5] and len(prov.requests) == 2  # the second run called neither model nor tool
    row, events = agent.store.run("same"), agent.store.events("same")
    assert (row["answer"], row["events"]) == ("one", len(events))
    assert events[0].payload["message"] == "first"


def test_a_resumed_run_continues_its_id_and_a_new_one_may_not_take_it(opener):
    ran: list = []
    agent, _ = agent_on(opener(), [call("refund", amount=200), "done", "other"], ran)
    r = agent.run("refund please")
    assert r.paused
    r2 = agent.resume(r.run_id, approve(r.checkin, by="maya"))
    assert r2.outcome == "answered" and ran == [200]
    assert [e.seq for e in agent.store.events("same")] == [e.seq for e in r2.trace]
    with pytest.raises(stores.StoreError, match="already holds"):
        agent.run("again")
    assert agent.store.run("same")["answer"] == "done"


def test_two_agents_with_counter_ids_sharing_a_file_do_not_mix_runs(tmp_path):
    db = tmp_path / "shared.db"  # two processes, each with `Effects()`: both would write run-1
    one = stores.sqlite(db)
    make(SPEC, ["first"], store=one)[0].run("message first")
    other, _ = make(SPEC, ["second"], store=stores.sqlite(db))
    with pytest.raises(stores.StoreError, match="Effects.live"):
        other.run("message second")
    assert one.run("r-1")["answer"] == "first"
    assert one.events("r-1")[0].payload["message"] == "message first"


class _Blind:
    """A durable store that does not see the run (as if another process saved it just after
    the runner looked): the first save itself must refuse, and the interrupted-run save too."""

    durable = True

    def __init__(self, inner):
        self.inner, self.path = inner, inner.path

    def run(self, run_id):
        return None

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_first_save_refuses_a_taken_id_and_leaves_that_run_alone(tmp_path):
    inner = stores.sqlite(tmp_path / "runs.db")
    inner.save_run("same", "other", None, "finished", "answered", "theirs", {},
                   [ev("same", 1, "run.started"), ev("same", 2)])
    ran: list = []
    agent, prov = agent_on(_Blind(inner), ["mine"], ran)
    with pytest.raises(stores.StoreError, match="already holds a run `same`"):
        agent.run("hello")
    row = inner.run("same")
    assert (row["agent"], row["status"], row["answer"], row["events"]) == \
        ("other", "finished", "theirs", 2)
    assert prov.requests == []  # refused at the save before the first model call


# ---------------------------------------------------------------- finding 5: damaged stores
def _corrupt(kind, store, url, sql):
    if kind == "sqlite":
        with sqlite3.connect(store.path) as db:
            db.execute(sql)
    else:
        import psycopg
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)


DAMAGE = [
    ("UPDATE event_batches SET body='not json'", "events",
     r"events \(the batch at seq 1\) are not valid JSON"),
    ("UPDATE event_batches SET body='[1,2,3]'", "events", "events .* do not decode"),
    ("UPDATE event_batches SET body='[[1,\"x\"]]'", "events", "events .* do not decode"),
    ("UPDATE event_batches SET body='{}'", "events", "events .* do not decode"),
    ("UPDATE event_batches SET body='[[1,\"k\",\"t\",[],null,{}]]'", "events", "do not decode"),
    ("UPDATE runs SET meta='not json'", "run", r"runs\.meta\) of run `r1` is not valid JSON"),
    ("UPDATE runs SET meta='[1]'", "runs", r"runs\.meta\) of run `r1` is not a JSON object"),
    ("UPDATE checkpoints SET body='garbage'", "checkpoint", "checkpoint of run `r1` is not valid"),
    ("UPDATE checkpoints SET body='[1,2]'", "checkpoint", "checkpoint of run `r1` is not a JSON"),
    ("UPDATE checkins SET decision='{'", "checkin", "decision of check-in `c1` is not valid"),
]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("sql,reader,message", DAMAGE)
def test_a_damaged_row_is_a_store_error_naming_it(kind, sql, reader, message, request, tmp_path):
    url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    s = stores.postgres(url) if url else stores.sqlite(tmp_path / "runs.db")
    s.save_run("r1", "a", None, "paused", "paused", None, {}, [ev("r1", 1), ev("r1", 2)])
    s.put_checkpoint("r1", {"state": {}})
    s.open_checkin("c1", "r1", "fp")
    s.decide_checkin("c1", "fp", {"approved": True})
    _corrupt(kind, s, url, sql)
    read = {"events": lambda: s.events("r1"), "run": lambda: s.run("r1"), "runs": s.runs,
            "checkpoint": lambda: s.checkpoint("r1"), "checkin": lambda: s.checkin("c1")}[reader]
    with pytest.raises(stores.StoreDamaged, match=message) as info:
        read()
    assert isinstance(info.value, stores.StoreError) and "is damaged" in str(info.value)
    assert "restore it from a backup" in str(info.value)
    s.close()


def test_a_dropped_table_names_the_fix(tmp_path):
    s = stores.sqlite(tmp_path / "runs.db")
    s.save_run("r1", "a", None, "finished", "answered", None, {}, [ev("r1", 1)])
    _corrupt("sqlite", s, None, "DROP TABLE event_batches")
    with pytest.raises(stores.StoreError, match="no such table.*restore it from a backup"):
        s.events("r1")


# ---------------------------------------------------------------- the CLI
def _cli(args, cwd, monkeypatch):
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("AFP_STORE", raising=False)
    return CliRunner().invoke(main, args)


READERS = [["trace", "list"], ["trace", "show", "last"], ["why", "last"],
           ["trace", "export", "last", "--format", "jsonl"]]


@pytest.mark.parametrize("args,sql", [
    (args, sql) for sql in ("UPDATE event_batches SET body='not json'",
                            "UPDATE runs SET meta='[1]'", "DROP TABLE runs")
    for args in READERS if not ("body" in sql and args == ["trace", "list"])])  # (lists summaries)
def test_cli_readers_report_a_damaged_store_with_exit_1(args, sql, tmp_path, monkeypatch):
    s = stores.sqlite(tmp_path / "r.db")
    s.save_run("r1", "a", None, "finished", "answered", "x", {}, [ev("r1", 1, "run.started")])
    s.close()
    _corrupt("sqlite", s, None, sql)
    res = _cli([*args, "--store", "r.db"], tmp_path, monkeypatch)
    assert res.exit_code == 1, res.output
    assert "internal error" not in res.output and "store `r.db`" in res.output
    assert "restore it from a backup" in res.output


@pytest.mark.parametrize("store", ["nonexist.db", "sub/dir/x.db", "sqlite:///nope/x.db", None])
@pytest.mark.parametrize("args", READERS)
def test_cli_readers_never_create_a_store(args, store, tmp_path, monkeypatch):
    if store is None and args == ["trace", "list"]:
        return  # (an absent default store lists no runs: the next test)
    res = _cli([*args] + (["--store", store] if store else []), tmp_path, monkeypatch)
    assert res.exit_code == 1, res.output
    assert "no run store at `" in res.output and "check the path" in res.output
    assert list(tmp_path.iterdir()) == []  # no file, no folder


@pytest.mark.parametrize("fmt,out,err", [("text", "", "no runs recorded\n"), ("json", "[]\n", "")])
def test_trace_list_without_the_default_store_lists_no_runs(fmt, out, err, tmp_path,
                                                            monkeypatch):
    """Before: in a folder where no run was recorded yet, `afpc trace list` exited 1 with "no
    run store at .afp/runs.db". Now it prints what an empty store prints, exit 0, and still
    creates nothing; a store that is named (`--store`, `AFP_STORE`) must exist."""
    res = _cli(["trace", "list", "--format", fmt], tmp_path, monkeypatch)
    assert (res.exit_code, res.stdout, res.stderr) == (0, out, err), res.output
    assert list(tmp_path.iterdir()) == []
    named = _cli(["trace", "list", "--format", fmt, "--store", ".afp/runs.db"], tmp_path,
                 monkeypatch)
    assert named.exit_code == 1 and "no run store at `.afp/runs.db`" in named.stderr
    monkeypatch.setenv("AFP_STORE", "runs.db")
    env = CliRunner().invoke(main, ["trace", "list", "--format", fmt])
    assert env.exit_code == 1 and "AFP_STORE" in env.stderr, env.output
    assert list(tmp_path.iterdir()) == []


def test_trace_list_names_what_is_at_the_default_path_when_it_is_no_store(tmp_path, monkeypatch):
    """Only a default store that is absent lists as empty: a folder there is still named."""
    (tmp_path / ".afp" / "runs.db").mkdir(parents=True)
    res = _cli(["trace", "list"], tmp_path, monkeypatch)
    assert res.exit_code == 1 and "is a folder" in res.stderr, res.output


def test_cli_a_bare_sqlite_url_a_blank_one_and_a_memory_store_are_errors(tmp_path, monkeypatch):
    for url, said, code in (("sqlite:///", "names no file", 1), ("memory:", "private in-process", 1),
                            (" ", "is empty; name a store", 2), ("", "is empty; name a store", 2)):
        res = _cli(["trace", "list", "--store", url], tmp_path, monkeypatch)
        assert res.exit_code == code and said in res.output, res.output  # (blank: a usage error)
    assert list(tmp_path.iterdir()) == []


def test_cli_a_run_without_events_is_not_suggested_as_itself(tmp_path, monkeypatch):
    s = stores.sqlite(tmp_path / "r.db")
    s.save_run("r1", "a", None, "running", None, None, {}, [])
    res = _cli(["trace", "show", "r1", "--store", "r.db"], tmp_path, monkeypatch)
    assert res.exit_code == 1 and "has no events stored" in res.output, res.output
    assert "did you mean" not in res.output


# ---------------------------------------------------------------- finding 11: sqlite(None)
@pytest.mark.parametrize("bad,error", [(None, TypeError), (5, TypeError), (b"x.db", TypeError),
                                       ("", ValueError)])
def test_sqlite_needs_a_path(bad, error, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match="`path`"):
        stores.sqlite(bad)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite:///runs.db", "postgresql://u@h/db"])
def test_sqlite_given_a_url_says_to_use_from_url(url, tmp_path, monkeypatch):
    """Before: `stores.sqlite("sqlite:///runs.db")` made a folder named `sqlite:` holding
    `runs.db` (and `"sqlite:///"` a file named `sqlite:`), without a word."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"is a URL; pass it to `afp\.stores\.from_url"):
        stores.sqlite(url)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", ["10", 2.5, True])
def test_memory_max_runs_must_be_an_int(bad):
    """Before: `memory(max_runs="10")` raised "'<' not supported between 'str' and 'int'"."""
    with pytest.raises(TypeError, match=r"`max_runs` must be a number of runs \(an `int`"):
        stores.memory(max_runs=bad)


def test_from_url_for_a_reader_opens_only_an_existing_store(tmp_path):
    with pytest.raises(stores.StoreError, match="no run store at"):
        stores.from_url(str(tmp_path / "missing.db"), create=False)
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(stores.StoreError, match="not a run store"):
        stores.from_url(str(tmp_path / "other.db"), create=False)
    stores.sqlite(tmp_path / "runs.db").close()
    assert stores.from_url(str(tmp_path / "runs.db"), create=False).runs() == []


# ---------------------------------------------------------------- robustness campaign 777001
@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("make_it,said", [
    (lambda p: __import__("os").mkfifo(p), "is a named pipe (FIFO), not a regular file"),
    (lambda p: p.mkdir(), "is a folder")])
def test_a_store_path_that_is_no_regular_file_says_what_it_is(make_it, said, tmp_path,
                                                               monkeypatch):
    """A FIFO given as the store was "disk I/O error" to `afpc run` and "it does not exist" to
    the readers; a folder was "unable to open database file" to `afpc run`."""
    make_it(tmp_path / "s.db")
    with pytest.raises(stores.StoreError, match=__import__("re").escape(said)):
        stores.sqlite(tmp_path / "s.db")
    for args in (["trace", "list"], ["why", "last"]):
        res = _cli([*args, "--store", "s.db"], tmp_path, monkeypatch)
        assert res.exit_code == 1 and said in res.output, res.output
    (tmp_path / "a.afp").write_text(SPEC, encoding="utf-8")
    res = _cli(["run", "a.afp", "-m", "hi", "--store", "s.db"], tmp_path, monkeypatch)
    assert res.exit_code == 1 and said in res.output and "I/O" not in res.output, res.output


def test_a_run_id_holding_a_lone_surrogate_is_no_run_of_the_sqlite_store(tmp_path):
    """`store.run("\\ud800")` raised UnicodeEncodeError (an "internal error" when an OTLP export
    looked up an inner run under a damaged call id): no stored run has such an id."""
    s = stores.sqlite(tmp_path / "runs.db")
    s.save_run("r1", "a", None, "finished", "answered", None, {}, [ev("r1", 1)])
    assert s.run("r\ud800") is None and s.events("r\ud800") == []


def _damage_payload(db: str, seq: int, change) -> None:
    import json
    with sqlite3.connect(db) as conn:
        for first, body in list(conn.execute("SELECT first_seq, body FROM event_batches")):
            items = json.loads(body)
            for item in items:
                if item[0] == seq:
                    change(item[5])
            conn.execute("UPDATE event_batches SET body=? WHERE first_seq=?",
                         (json.dumps(items), first))


@pytest.mark.parametrize("kind,change", [
    ("cursor.moved", lambda p: p.update(to=[1])),
    ("cursor.moved", lambda p: p.update(to=-1)),
    ("cursor.moved", lambda p: p.update({"from": {"a": 1}})),
    ("run.finished", lambda p: p.update(tokens=1.5)),
    ("run.finished", lambda p: p.update(tokens={"a": 1}))])
def test_a_hand_edited_event_payload_is_read_not_an_internal_error(kind, change, tmp_path,
                                                                   monkeypatch):
    """A skill name that is a list or a number in `cursor.moved` made `graph --run` and the HTML
    export raise TypeError (unhashable, unsortable), `tokens` that is no list made `trace show`
    raise: readers take a damaged payload's odd field as unknown, as for other fields."""
    from pathlib import Path
    spec = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(main, ["run", str(spec), "-m", "charged twice for AB-12",
                                    "--store", "s.db", "--json"])
    assert ran.exit_code == 0, ran.output
    events = stores.sqlite("s.db").events(stores.sqlite("s.db").runs()[0]["run_id"])
    seq = next(e.seq for e in events if e.kind == kind and isinstance(e.payload, dict)
               and (kind != "cursor.moved" or e.payload.get("to")))
    _damage_payload("s.db", seq, change)
    for args in (["graph", str(spec), "--run", "last"], ["trace", "show", "last"],
                 ["why", "last"], *(["trace", "export", "last", "--format", f] for f in
                                    ("html", "jsonl", "otlp-json", "thinking"))):
        res = _cli([*args, "--store", "s.db"], tmp_path, monkeypatch)
        assert res.exit_code == 0 and "internal error" not in res.output, (args, res.output)


@pytest.mark.parametrize("bad", [1, b"runs.db", ["runs.db"], 2.5])
def test_a_store_that_is_no_url_or_path_is_a_type_error_naming_what_to_pass(bad):
    with pytest.raises(TypeError, match=r"must be a URL or path .*runs\.db"):
        stores.from_url(bad)


def test_from_url_of_an_empty_string_is_blank_not_the_default(tmp_path, monkeypatch):
    """Before: `from_url("")` (an unset variable, most likely) opened `.afp/runs.db` in the working
    folder; `None` still names the default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AFP_STORE", raising=False)
    with pytest.raises(stores.StoreError, match="is blank"):
        stores.from_url("")
    assert not (tmp_path / ".afp").exists()
    stores.from_url(None).close()
    assert (tmp_path / ".afp" / "runs.db").exists()


@pytest.mark.parametrize("args", [["why", "{}"], ["trace", "show", "{}"],
                                  ["trace", "export", "{}", "--format", "jsonl"],
                                  ["resume", "{}", "--approve"],
                                  ["graph", "s.afp", "--run", "{}"]])
@pytest.mark.parametrize("blank", ["", "  "])
def test_cli_a_blank_run_id_is_a_usage_error_naming_the_fix(args, blank, tmp_path, monkeypatch):
    (tmp_path / "s.afp").write_text('agent a {\n  system = "x"\n}\n')
    res = _cli([a.replace("{}", blank) for a in args], tmp_path, monkeypatch)
    assert res.exit_code == 2, res.output  # (before: exit 1, "no run `` in the store")
    assert "is empty; give a run id (`afpc trace list` lists them)" in res.output
    assert ("`last`" in res.output) == (args[0] != "resume")  # (resume refuses `last`)
    assert list(tmp_path.iterdir()) == [tmp_path / "s.afp"]  # no store made


def test_a_store_url_in_a_folder_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    """`--store /srv/runz/x.db` (a typo) made the folders and started an empty store there."""
    import pytest
    from afp_dsl.store import StoreError, from_url
    with pytest.raises(StoreError, match="the folder .* does not exist; create it first"):
        from_url(str(tmp_path / "runz" / "x.db"))
    assert not (tmp_path / "runz").exists()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AFP_STORE", raising=False)
    from_url(None).close()  # the default's folder, `.afp/`, is afp's own: made
    assert (tmp_path / ".afp" / "runs.db").is_file()
    from_url(str(tmp_path / "here.db")).close()  # an existing folder
