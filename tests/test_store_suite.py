"""The one store test suite: memory, SQLite and PostgreSQL pass the same `Store` contract."""
from __future__ import annotations

import threading

import pytest
from interp_support import call, make
from store_support import pg_url  # noqa: F401  (fixture)

from afp_dsl import stores
from afp_dsl.runner import approve
from afp_dsl.source import Span
from afp_dsl.trace import Event

KINDS = ("memory", "sqlite", "postgres")


@pytest.fixture(params=KINDS)
def opener(request, tmp_path):
    """A function opening (another handle on) one store of the kind under test."""
    opened = []
    if request.param == "memory":
        shared = stores.memory(max_runs=None)
        make_one = lambda **kw: shared if not kw else stores.MemoryStore(None, **kw)  # noqa: E731
    elif request.param == "sqlite":
        make_one = lambda **kw: stores.sqlite(tmp_path / "runs.db", **kw)  # noqa: E731
    else:
        url = request.getfixturevalue("pg_url")
        make_one = lambda **kw: stores.postgres(url, **kw)  # noqa: E731

    def open_(**kw):
        s = make_one(**kw)
        opened.append(s)
        return s
    yield open_
    for s in opened:
        s.close()


def ev(seq: int, kind: str = "tool.called", iteration: int = 1, payload=None) -> Event:
    return Event(seq, f"r1:{seq}", kind, iteration, seq * 2, (f"r1:{seq - 1}",) if seq > 1 else (),
                 Span("a.afp", 3, 9) if seq % 2 else None,
                 payload or {"n": seq, "ü": "ß ✓", "odd": "\ud800", "t": (1, None, 2.5)})


def test_every_store_satisfies_the_protocol(opener):
    assert isinstance(opener(), stores.Store)


def test_a_saved_run_reads_back_with_its_summary(opener):
    s = opener()
    events = [ev(1, "run.started", 0), ev(2, iteration=1), ev(3, iteration=2),
              ev(4, "run.finished", 2)]
    s.save_run("r1", "desk", "/x/spec.afp", "finished", "answered", "hi", {"error": None}, events)
    s.save_run("odd", "desk", None, "finished", "error", "bad \ud800 text",
               {"error": "bad \udc80 bytes"}, [])  # a sloppy decoder's text is still stored
    assert s.run("odd")["answer"] in ("bad \ud800 text", "bad \ufffd text")
    r = s.run("r1")
    assert {k: r[k] for k in ("run_id", "agent", "spec", "status", "outcome", "answer", "meta")} \
        == {"run_id": "r1", "agent": "desk", "spec": "/x/spec.afp", "status": "finished",
            "outcome": "answered", "answer": "hi", "meta": {"error": None}}
    assert (r["iterations"], r["time"], r["events"]) == (2, 8, 4)
    assert r["started"] is None and r["updated"] is None
    assert [e.to_json() for e in s.events("r1")] == [e.to_json() for e in events]
    assert s.events("r1")[1].payload["odd"] == "\ud800"
    t = s.trace("r1")
    assert t.run_id == "r1" and len(t) == 4 and t.by_id("r1:3").source == Span("a.afp", 3, 9)


def test_saving_again_appends_only_new_events_and_keeps_identity(opener):
    s = opener()
    s.save_run("r1", "desk", "spec", "paused", "paused", None, {}, [ev(1), ev(2)])
    first = s.run("r1")
    s.save_run("r0", "other", None, "finished", "answered", "x", {}, [ev(1)])
    s.save_run("r1", "desk", "spec", "finished", "answered", "done", {"k": 1},
               [ev(1), ev(2), ev(3), ev(4, iteration=4)])  # a resume continues iteration 1
    r = s.run("r1")
    assert (r["status"], r["outcome"], r["answer"], r["meta"]) == ("finished", "answered", "done",
                                                                   {"k": 1})
    assert (r["events"], r["iterations"], r["order"]) == (4, 4, first["order"])
    assert [e.seq for e in s.events("r1")] == [1, 2, 3, 4]


def test_saving_only_the_newest_events_keeps_the_summary_of_all(opener):
    s = opener()  # the runner's saves while a run goes pass only what is new since the last one
    s.save_run("r1", "desk", "spec", "running", None, None, {}, [ev(1, "run.started", 0), ev(2)])
    assert (s.run("r1")["status"], s.run("r1")["outcome"], s.run("r1")["events"]) == ("running", None, 2)
    s.save_run("r1", "desk", "spec", "running", None, None, {}, [ev(3, iteration=2)])
    s.save_run("r1", "desk", "spec", "running", None, None, {}, [])  # nothing new
    r = s.run("r1")
    assert (r["events"], r["iterations"], r["time"]) == (3, 2, 6)
    s.save_run("r1", "desk", "spec", "finished", "answered", "ok", {},
               [ev(1, "run.started", 0), ev(2), ev(3, iteration=2), ev(4, "run.finished", 2)])
    r = s.run("r1")  # the last save passes everything again: only seq 4 is new
    assert (r["status"], r["events"], r["iterations"], r["time"]) == ("finished", 4, 2, 8)
    assert [e.seq for e in s.events("r1")] == [1, 2, 3, 4]


def test_runs_are_listed_oldest_first_and_limit_keeps_the_newest(opener):
    s = opener()
    for i in range(5):
        s.save_run(f"run-{i}", "a", None, "finished", "answered", None, {}, [ev(1)])
    assert [r["run_id"] for r in s.runs()] == [f"run-{i}" for i in range(5)]
    assert [r["run_id"] for r in s.runs(limit=2)] == ["run-3", "run-4"]
    assert len(s.runs(limit=9)) == 5


def test_limit_zero_keeps_no_run_and_a_bad_limit_is_refused_alike(opener):
    """Before, `runs(0)` listed every run (`if limit:`), and `runs(-1)` every run (SQLite),
    all but the oldest (memory) or a `StoreError` (PostgreSQL)."""
    s = opener()
    for i in range(3):
        s.save_run(f"run-{i}", "a", None, "finished", "answered", None, {}, [ev(1)])
    assert s.runs(limit=0) == []
    with pytest.raises(ValueError, match="`limit` must be 0 or more"):
        s.runs(limit=-1)
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError, match="`limit` must be a count of runs"):
            s.runs(limit=bad)


def test_stamps_come_from_the_callers_stamp(opener):
    ticks = iter(["2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"])
    s = opener(stamp=lambda: next(ticks))
    s.save_run("r1", "a", None, "paused", "paused", None, {}, [ev(1)])
    s.save_run("r1", "a", None, "finished", "answered", None, {}, [ev(1), ev(2)])
    r = s.run("r1")
    assert (r["started"], r["updated"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z")


def test_unknown_runs_are_none_and_empty(opener):
    s = opener()
    assert s.run("nope") is None and s.events("nope") == [] and len(s.trace("nope")) == 0
    assert s.checkpoint("nope") is None and s.checkin("nope") is None


def test_checkpoints_are_stored_apart_replaced_and_deleted(opener):
    s = opener()
    s.save_run("r1", "a", None, "paused", "paused", None, {}, [ev(1)])
    s.put_checkpoint("r1", {"state": {"secret": "RAW-1"}})
    s.put_checkpoint("r1", {"state": {"secret": "RAW-2"}})
    assert s.checkpoint("r1") == {"state": {"secret": "RAW-2"}}
    assert "RAW" not in "".join(e.to_json() for e in s.events("r1"))
    s.delete_checkpoint("r1")
    s.delete_checkpoint("r1")
    assert s.checkpoint("r1") is None


def test_a_checkin_is_decided_once_for_the_matching_call(opener):
    s = opener()
    s.open_checkin("c1", "r1", "fp-1")
    assert s.checkin("c1") == {"id": "c1", "run_id": "r1", "fp": "fp-1", "state": "pending",
                               "decision": None}
    assert not s.decide_checkin("c1", "fp-other", {"approved": True})
    assert not s.decide_checkin("c-unknown", "fp-1", {"approved": True})
    assert s.decide_checkin("c1", "fp-1", {"approved": True, "by": "maya"})
    assert not s.decide_checkin("c1", "fp-1", {"approved": False})
    s.open_checkin("c1", "r1", "fp-1")  # re-opening does not reset a decision
    row = s.checkin("c1")
    assert row["state"] == "decided" and row["decision"] == {"approved": True, "by": "maya"}


def test_a_decision_blanks_the_fingerprint_of_the_raw_arguments(opener):
    """The fingerprint is a hash of the raw arguments (a PIN could be found from it by trying
    every value); it is needed only while the check-in waits (semantics §9)."""
    s = opener()
    s.open_checkin("c1", "r1", "3f" * 32)
    assert s.checkin("c1")["fp"] == "3f" * 32
    assert s.decide_checkin("c1", "3f" * 32, {"approved": True})
    row = s.checkin("c1")
    assert row["fp"] == "" and row["state"] == "decided"
    assert not s.decide_checkin("c1", "3f" * 32, {}) and not s.decide_checkin("c1", "", {})


def test_racing_threads_decide_a_checkin_once(opener):
    s = opener()
    s.open_checkin("c1", "r1", "fp")
    handles = [s] + [opener() for _ in range(3)]  # separate connections where the kind has them
    won: list[bool] = []
    gate = threading.Barrier(8)

    def decide(store, i):
        gate.wait()
        won.append(store.decide_checkin("c1", "fp", {"by": i}))
    threads = [threading.Thread(target=decide, args=(handles[i % 4], i)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == [False] * 7 + [True]


def test_another_handle_sees_what_one_wrote(opener):
    a, b = opener(), opener()
    a.save_run("r1", "a", None, "paused", "paused", None, {}, [ev(1)])
    a.put_checkpoint("r1", {"x": 1})
    a.open_checkin("c1", "r1", "fp")
    assert b.run("r1")["status"] == "paused" and b.checkpoint("r1") == {"x": 1}
    assert b.decide_checkin("c1", "fp", {}) and not a.decide_checkin("c1", "fp", {})


SPEC = """
agent g { tools = [refund] }
tool refund { description = "refund" input { amount: number } check_in = args.amount > 100 }
"""


def test_an_agent_pauses_resumes_and_the_store_records_the_run(opener):
    ran = []
    agent, _ = make(SPEC, [call("refund", amount=200), "done"], store=opener(),
                    tools={"refund": lambda amount: ran.append(amount) or "ok"})
    r = agent.run("refund please")
    assert r.paused and agent.store.checkpoint(r.run_id) is not None
    assert agent.store.checkin(r.checkin.id)["state"] == "pending"
    assert agent.store.run(r.run_id)["status"] == "paused"
    r2 = agent.resume(r.run_id, approve(r.checkin, by="maya"))
    assert r2.outcome == "answered" and ran == [200]
    row = agent.store.run(r.run_id)
    assert (row["agent"], row["status"], row["outcome"], row["answer"]) == \
        ("g", "finished", "answered", "done")
    assert row["events"] == len(r2.trace)
    assert row["iterations"] == max(e.iteration for e in r2.trace)
    assert row["time"] == r2.trace[-1].time
    assert agent.store.checkpoint(r.run_id) is None
    assert [e.to_json() for e in agent.store.events(r.run_id)] == [e.to_json() for e in r2.trace]


def test_a_postgres_url_without_psycopg_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    with pytest.raises(stores.StoreError, match=r"pip install 'afp-dsl\[postgres\]'"):
        stores.from_url("postgresql://afp@127.0.0.1/afp")


def test_a_run_id_holding_a_lone_surrogate_is_no_run(opener):
    """No stored run has an id holding a lone surrogate (ids are encodable text), so a lookup under
    a damaged id (an inner run's call id in a hand-edited trace) finds nothing instead of failing
    to encode it."""
    s = opener()
    s.save_run("r1", "a", None, "finished", "answered", None, {}, [ev(1)])
    assert s.run("r\ud800") is None and s.events("r\ud800") == []


def test_deleting_a_checkpoint_says_whether_this_call_deleted_it(opener):
    """Of two processes resuming one `error` run, the one whose delete took the checkpoint goes
    on: `delete_checkpoint` answers True once, then False (atomic in every store)."""
    s = opener()
    s.put_checkpoint("r1", {"state": {"run_id": "r1"}})
    assert s.delete_checkpoint("r1") is True
    assert s.delete_checkpoint("r1") is False
    assert s.checkpoint("r1") is None


def test_text_columns_take_any_str_a_nul_and_a_path_not_valid_utf8(opener):
    """Before: PostgreSQL refused an answer holding a NUL ("text fields cannot contain NUL"), so
    the run's final save failed; both SQL stores failed with an internal UnicodeEncodeError on a
    spec path that is not valid UTF-8 (`os.fsdecode` keeps its bytes as lone surrogates)."""
    s = opener()
    spec = "/specs/caf\udce9.afp"
    s.save_run("r1", "desk", spec, "finished", "answered", "a\x00b", {}, [ev(1)])
    r = s.run("r1")
    assert r["answer"] in ("a\x00b", "a\ufffdb") and r["spec"] in (spec, "/specs/caf\ufffd.afp")
    assert [e.seq for e in s.events("r1")] == [1]
