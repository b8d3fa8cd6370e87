"""A run cut short by an exception the core does not handle keeps its evidence in the store."""
from __future__ import annotations

import asyncio

import pytest
from interp_support import call, make

SPEC = """
agent g {
  system = "S"
  tools = [lookup]
}
tool lookup {
  description = "look"
  input { id: string }
  impl = returns({ status: "found", secret: "sk-abcdefghijklmnop" })
}
redact keys { keys = ["secret"] }
"""


class Stop(BaseException):
    """Stands for Ctrl-C or a cancelled task (not an `Exception`: the core lets it through)."""


def _interrupting(agent, provider, at: int) -> None:
    complete = provider.complete

    def cut(request):
        if len(provider.requests) + 1 == at:
            raise Stop()
        return complete(request)
    provider.complete = cut


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_interrupted_run_is_saved_with_its_events_so_far(mode) -> None:
    agent, provider = make(SPEC.replace("agent g {", "agent g {\n  redact = [keys]"),
                           [call("lookup", id="A1"), "done"])
    _interrupting(agent, provider, at=2)
    with pytest.raises(Stop):
        agent.run("find A1") if mode == "sync" else asyncio.run(agent.arun("find A1"))
    (run,) = agent.store.runs()
    assert (run["status"], run["outcome"]) == ("interrupted", "error")
    assert "interrupted (Stop) during iteration 2" in run["meta"]["error"]
    kinds = [e.kind for e in agent.store.events(run["run_id"])]
    assert kinds[0] == "run.started" and "tool.returned" in kinds and "run.finished" not in kinds
    stored = repr([e.payload for e in agent.store.events(run["run_id"])])
    assert "sk-abcdefghijklmnop" not in stored  # still only redacted events


def test_a_run_that_ends_normally_is_not_marked_interrupted() -> None:
    agent, _ = make(SPEC, [call("lookup", id="A1"), "done"])
    r = agent.run("find A1")
    assert agent.store.run(r.run_id)["status"] == "finished"


def test_the_cli_marks_an_interrupted_run(tmp_path) -> None:
    import json
    import subprocess
    import sys
    (tmp_path / "host.py").write_text("def boom(**args):\n    raise KeyboardInterrupt\n", encoding="utf-8")
    (tmp_path / "s.afp").write_text(SPEC.replace('impl = returns({ status: "found", secret: "sk-abcdefghijklmnop" })',
                                                 'impl = python("host:boom")'), encoding="utf-8")
    env_cmd = [sys.executable, "-m", "afp_dsl.cli"]
    run = subprocess.run(env_cmd + ["run", "s.afp", "-m", "find A1"], cwd=tmp_path, capture_output=True,
                         text=True, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 130 and "interrupted" in run.stderr and "Traceback" not in run.stderr
    listed = subprocess.run(env_cmd + ["trace", "list", "--format", "json"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    (row,) = json.loads(listed.stdout)
    assert (row["status"], row["outcome"]) == ("interrupted", "error (interrupted)")
    shown = subprocess.run(env_cmd + ["trace", "show", "last"], cwd=tmp_path, capture_output=True, text=True)
    assert shown.returncode == 0 and "error (interrupted)" in shown.stdout.splitlines()[0]


GATED = """
agent g { tools = [login] redact = [secrets] }
tool login { description = "login" input { password: string } check_in = true }
redact secrets { keys = ["password"] }
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_interrupted_resume_of_a_decided_check_in_deletes_its_raw_checkpoint(mode, tmp_path):
    """The decision is spent, so the run can never go on: before, its raw checkpoint (the
    password) stayed in the store for good (semantics §9: kept only while resumable)."""
    from afp_dsl import stores
    from afp_dsl.runner import ResumeDecisionError, approve

    def login(password):
        raise Stop()
    path = tmp_path / "runs.db"
    agent, _ = make(GATED, [call("login", password="PW-CANARY-4242"), "in"],
                    store=stores.sqlite(path), tools={"login": login})
    r = agent.run("log me in")
    assert r.paused and agent.store.checkpoint(r.run_id) is not None
    with pytest.raises(Stop):
        resume = agent.resume if mode == "sync" else (lambda *a: asyncio.run(agent.aresume(*a)))
        resume(r.checkpoint, approve(r.checkin))
    assert agent.store.run(r.run_id)["status"] == "interrupted"
    assert agent.store.checkpoint(r.run_id) is None
    with pytest.raises(ResumeDecisionError, match=r"no checkpoint to resume: the run was "
                       r"interrupted \(Stop\) during iteration 1, and an interrupted run keeps no "
                       r"state to go on from: run the message again"):
        agent.resume(r.run_id, approve(r.checkin))
    assert all(b"PW-CANARY-4242" not in p.read_bytes() for p in tmp_path.iterdir())
    agent.store.close()
