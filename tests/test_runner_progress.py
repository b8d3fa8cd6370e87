"""A store that outlives the process gets a run's events as the run goes, not only at its end.

Before every model call the runner saves the events recorded since its last save, status
`running`; a process killed mid-run so leaves its (redacted) trace up to its last model call.
An in-process store, or one that does not say it is `durable`, is written once, at the end.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from interp_support import call, make

from afp_dsl import stores

SPEC = """
agent g {
  system = "S"
  tools = [lookup]
  redact = [keys]
}
tool lookup {
  description = "look"
  input { id: string }
}
redact keys { keys = ["secret"] }
"""
SECRET = "sk-abcdefghijklmnop"


def _lookup(id: str) -> dict:
    return {"status": "found", "id": id, "secret": SECRET}


def _watching(provider, store_path: Path, seen: list) -> None:
    """Before each model call, read the store through another handle (as another process would)."""
    complete = provider.complete

    def watch(request):
        other = stores.sqlite(store_path)
        try:
            (row,) = other.runs()
            seen.append((row["status"], row["outcome"], row["events"],
                         [e.to_json() for e in other.events(row["run_id"])]))
        finally:
            other.close()
        return complete(request)
    provider.complete = watch


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_durable_store_holds_the_run_so_far_before_each_model_call(tmp_path, mode):
    path = tmp_path / "runs.db"
    agent, provider = make(SPEC, [call("lookup", id="A1"), call("lookup", id="A2"), "done"],
                           tools={"lookup": _lookup}, store=stores.sqlite(path))
    seen: list = []
    _watching(provider, path, seen)
    r = agent.run("find A1 and A2") if mode == "sync" else asyncio.run(agent.arun("find A1 and A2"))
    assert r.outcome == "answered" and len(seen) == 3
    final = [e.to_json() for e in r.trace]
    called = [i for i, e in enumerate(r.trace) if e.kind == "llm.called"]
    for k, (status, outcome, n, stored) in enumerate(seen):
        assert (status, outcome) == ("running", None)
        assert stored == final[:called[k] + 1] and n == len(stored)  # up to this model call
    assert SECRET not in repr(seen)  # what is saved as the run goes is redacted too
    row = agent.store.run(r.run_id)
    assert (row["status"], row["outcome"], row["events"]) == ("finished", "answered", len(final))
    assert [e.to_json() for e in agent.store.events(r.run_id)] == final


class Counting:
    """A store written through the `Store` methods only; it does not say it is durable."""

    def __init__(self) -> None:
        self.inner = stores.memory(None)
        self.saves: list[str] = []

    def __getattr__(self, name):
        if name == "durable":  # a store written to the Protocol alone has no such attribute
            raise AttributeError(name)
        return getattr(self.inner, name)

    def save_run(self, run_id, agent, spec, status, *rest) -> None:
        self.saves.append(status)
        self.inner.save_run(run_id, agent, spec, status, *rest)


def test_an_in_process_store_is_written_once_when_the_run_ends():
    assert stores.memory().durable is False and stores.MemoryStore.durable is False
    store = Counting()
    agent, _ = make(SPEC, [call("lookup", id="A1"), call("lookup", id="A2"), "done"],
                    tools={"lookup": _lookup}, store=store)
    assert agent.run("find").outcome == "answered"
    assert store.saves == ["finished"]  # not durable (no attribute): no saves as it goes


def test_a_resumed_run_appends_only_what_is_new(tmp_path):
    spec = SPEC.replace('input { id: string }', 'input { id: string }\n  check_in = args.id == "A2"')
    agent, _ = make(spec, [call("lookup", id="A1"), call("lookup", id="A2"), "done"],
                    tools={"lookup": _lookup}, store=stores.sqlite(tmp_path / "runs.db"))
    from afp_dsl.runner import approve
    r = agent.run("find")
    assert r.paused and agent.store.run(r.run_id)["status"] == "paused"
    r2 = agent.resume(r.run_id, approve(r.checkin, by="maya"))
    row = agent.store.run(r.run_id)
    assert (row["status"], row["events"]) == ("finished", len(r2.trace))
    assert [e.to_json() for e in agent.store.events(r.run_id)] == [e.to_json() for e in r2.trace]


KILLED = '''
import os, signal, sys
import afp_dsl as afp
from afp_dsl import stores

def lookup(id):
    if id == "KILL":
        os.kill(os.getpid(), signal.SIGKILL)  # no handler, no finally: the process is gone
    return {"status": "found", "id": id, "secret": "%s"}

program = afp.load(open("s.afp").read())
script = [[("lookup", {"id": "A1"})], [("lookup", {"id": "KILL"})], "done"]
agent = program.agent("g", provider=afp.providers.mock(script), tools={"lookup": lookup},
                      store=stores.sqlite(".afp/runs.db"))
agent.run("find A1")
''' % SECRET


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_process_leaves_its_trace_up_to_its_last_model_call(tmp_path):
    (tmp_path / "s.afp").write_text(textwrap.dedent(SPEC), encoding="utf-8")
    (tmp_path / "kill.py").write_text(KILLED, encoding="utf-8")
    proc = subprocess.run([sys.executable, "kill.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    store = stores.sqlite(tmp_path / ".afp" / "runs.db")
    (row,) = store.runs()
    assert (row["status"], row["outcome"], row["iterations"]) == ("running", None, 2)
    events = store.events(row["run_id"])
    kinds = [e.kind for e in events]
    assert kinds[0] == "run.started" and kinds[-1] == "llm.called"  # cut off waiting for the model
    assert [e.payload["result"]["id"] for e in events if e.kind == "tool.returned"] == ["A1"]
    assert row["events"] == len(events) and SECRET not in repr([e.payload for e in events])
    store.close()
    cli = [sys.executable, "-m", "afp_dsl.cli"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    listed = subprocess.run(cli + ["trace", "list", "--format", "json"], cwd=tmp_path,
                            capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    (shown,) = json.loads(listed.stdout)
    assert (shown["status"], shown["outcome"]) == ("running", "running")
    show = subprocess.run(cli + ["trace", "show", "last"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=120)
    head = show.stdout.splitlines()[0]  # no run.finished: the tally is counted from the events
    assert show.returncode == 0 and "running — 2 iterations, 2 LLM calls, 1 tool calls" in head
    assert head.endswith(" so far") and "?" not in head
    why = subprocess.run(cli + ["why", "last"], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=120)
    assert why.returncode == 0 and "Traceback" not in why.stderr, why.stderr


def test_an_unfinished_run_is_tallied_from_its_events():
    from afp_dsl.report_html import report
    from afp_dsl.trace import tally
    agent, _ = make(SPEC, [call("lookup", id="A1"), call("lookup", id="A2"), "done"],
                    tools={"lookup": _lookup})
    r = agent.run("find")
    fin = next(e.payload for e in r.trace if e.kind == "run.finished")
    cut = [e for e in r.trace if e.kind != "run.finished"]
    counted = tally(cut)
    assert counted["so_far"] is True
    assert [counted[k] for k in ("iterations", "llm_calls", "tool_calls", "tokens")] == \
        [fin[k] for k in ("iterations", "llm_calls", "tool_calls", "tokens")]
    page = report(cut, run={"run_id": r.run_id, "status": "running"})
    assert '<b>outcome</b> running' in page and f'<b>LLM calls</b> {fin["llm_calls"]}' in page


def test_resuming_a_running_or_unknown_run_says_which(tmp_path):
    from afp_dsl.runner import ResumeDecisionError
    store = stores.sqlite(tmp_path / "runs.db")
    agent, _ = make(SPEC, ["done"], tools={"lookup": _lookup}, store=store)
    store.save_run("r-9", "g", None, "running", None, None, {}, [])
    with pytest.raises(ResumeDecisionError, match="it is still running"):
        agent.resume("r-9")
    with pytest.raises(ResumeDecisionError, match="this store holds no such run"):
        agent.resume("r-404")
    r = agent.run("hi")
    with pytest.raises(ResumeDecisionError, match="it finished, or it was already resumed"):
        agent.resume(r.run_id)
