""""Once" across processes: two workers resume the same check-in against one persistent store
(a SQLite file; a PostgreSQL server); exactly one runs the tool."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from interp_support import call, make
from store_support import pg_url  # noqa: F401  (fixture)

from afp_dsl import stores

HERE = Path(__file__).resolve().parent
SPEC = """
agent g { tools = [refund] }
tool refund { description = "refund" input { amount: number } check_in = args.amount > 100 }
"""

# A worker: resumes the check-in; once past every check and about to compare-and-set, it says
# "deciding" and waits for "go", so both workers race on the decision itself. The tool appends
# one line to a shared file, so the file counts how often it really ran.
WORKER = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [{tests!r}, {root!r}]
    from interp_support import make
    from afp_dsl import stores
    from afp_dsl.runner import approve, ResumeDecisionError

    def refund(amount):
        with open({ledger!r}, "a") as f:
            f.write(sys.argv[1] + "\\n")
        return "refunded"

    store = stores.from_url({url!r})
    decide = store.decide_checkin

    def gated(*args):
        print("deciding", flush=True)
        sys.stdin.readline()
        return decide(*args)
    store.decide_checkin = gated
    agent, _ = make({spec!r}, ["done"], tools={{"refund": refund}}, store=store)
    try:
        r = agent.resume({run!r}, approve({checkin!r}, by=sys.argv[1]))
        print(json.dumps({{"ok": r.outcome}}), flush=True)
    except ResumeDecisionError as e:
        print(json.dumps({{"refused": str(e)}}), flush=True)
    store.close()
""")


@pytest.fixture(params=("sqlite", "postgres"))
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "shared.db")
    return request.getfixturevalue("pg_url")


def test_two_processes_resuming_one_checkin_run_the_tool_once(store_url, tmp_path):
    store = stores.from_url(store_url)
    agent, _ = make(SPEC, [call("refund", amount=500)], store=store,
                    tools={"refund": lambda amount: "never here"})
    r = agent.run("refund please")
    assert r.paused
    ledger = tmp_path / "ledger.txt"
    code = WORKER.format(tests=str(HERE), root=str(HERE.parent), ledger=str(ledger),
                         url=store_url, spec=SPEC, run=r.run_id, checkin=r.checkin.id)
    procs = [subprocess.Popen([sys.executable, "-c", code, who], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who in ("ann", "bob")]
    for p in procs:  # both passed every check and are about to decide
        assert p.stdout.readline().strip() == "deciding", p.stderr.read()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted("ok" in o for o in outs) == [False, True], outs
    refused = next(o["refused"] for o in outs if "refused" in o)
    assert f"check-in `{r.checkin.id}` was already decided" in refused
    winner = next(who for who, o in zip(("ann", "bob"), outs) if "ok" in o)
    assert ledger.read_text().split() == [winner]
    row = store.checkin(r.checkin.id)
    assert row["state"] == "decided" and row["decision"]["by"] == winner
    assert store.run(r.run_id)["outcome"] == "answered" and store.checkpoint(r.run_id) is None
    store.close()


WRITER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{root!r}]
    from afp_dsl import stores
    from afp_dsl.trace import Event
    store = stores.from_url({url!r})
    who = sys.argv[1]
    for i in range(15):
        run = f"{{who}}-{{i}}"
        events = [Event(s, f"{{run}}:{{s}}", "llm.called", s // 2, s, (), None, {{"i": i}})
                  for s in range(1, 9)]
        store.save_run(run, who, None, "finished", "answered", None, {{}}, events)
    store.close()
""")


def test_several_processes_write_one_store_at_once(store_url):
    # no store yet: the three writers create and migrate it at once (one of them does)
    code = WRITER.format(root=str(HERE.parent), url=store_url)
    procs = [subprocess.Popen([sys.executable, "-c", code, who], stderr=subprocess.PIPE, text=True)
             for who in ("w1", "w2", "w3")]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    store = stores.from_url(store_url)
    runs = store.runs()
    assert sorted(r["run_id"] for r in runs) == sorted(f"w{w}-{i}" for w in (1, 2, 3)
                                                       for i in range(15))
    assert all(r["events"] == 8 and len(store.events(r["run_id"])) == 8 for r in runs)
    store.close()
