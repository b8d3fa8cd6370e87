"""Conformance: failures, retries and records of the run loop (semantics §1, §6, §10, §12).

A provider or host failure after a completed iteration ends with `error` and the checkpoint of the
last completed iteration; a retry repeats the failed iteration (its cursor decision made once) or
the failed wrap-up call; every `caused_by` chain leads back to `run.started`; totals in
`run.finished` match the trace.
"""
from __future__ import annotations

import copy

from interp_support import call, kinds, make, moves, payloads, tool_texts

from afp_dsl.runner import approve
from afp_dsl.trace import tally

GRAPH = """
agent g { graph = flow }
tool t { description = "t" impl = returns("r") }
skill a { description = "A." body = "A BODY" tools = [t] }
skill b { description = "B." body = "B BODY" tools = [t] }
skill c { description = "C." body = "C BODY" }
graph flow { entry a  route a -> b on t  route b -> c on t }
"""

BUDGET = """
agent g { tools = [t] max_iterations = 2 }
tool t { description = "t" impl = returns("r") }
"""

UNBOUND = """
agent g { tools = [t, u] }
tool t { description = "t" impl = returns("ok") }
tool u { description = "u" }
"""


def _chains_reach_the_start(trace) -> list[str]:
    """Events from which walking `caused_by` never reaches `run.started`."""
    by_id = {e.id: e for e in trace}
    start = next(e.id for e in trace if e.kind == "run.started")
    reached: dict[str, bool] = {start: True}

    def reaches(eid: str, seen: frozenset = frozenset()) -> bool:
        if eid in reached:
            return reached[eid]
        e = by_id.get(eid)
        ok = e is not None and any(reaches(c, seen | {eid}) for c in e.caused_by if c not in seen)
        reached[eid] = ok
        return ok

    return [f"{e.seq} {e.kind}" for e in trace if not reaches(e.id)]


# ---------------------------------------------------------------- F02: the retried iteration
def test_a_retry_decides_the_cursor_of_the_failed_iteration_once():
    agent, prov = make(GRAPH, [call("t"), "done"], fail_at=2)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is not None
    r2 = agent.resume(r.checkpoint)
    assert r2.outcome == "answered" and r2.answer == "done"
    assert moves(r2) == [(None, "a", "entry"), ("a", "b", "route")]
    assert [e.iteration for e in r2.trace if e.kind == "route.evaluated"] == [2]
    assert "B BODY" in prov.requests[-1].system and "C BODY" not in prov.requests[-1].system


# ---------------------------------------------------------------- F03: the retried wrap-up call
def test_a_failed_wrap_up_call_is_retried_as_the_wrap_up_call():
    agent, prov = make(BUDGET, [call("t"), call("t"), "wrapped answer"], fail_at=3)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is not None
    r2 = agent.resume(r.checkpoint)
    assert (r2.outcome, r2.answer) == ("max_iterations", "wrapped answer")
    assert prov.requests[-1].tools == ()
    assert prov.requests[-1].messages[-1].content.startswith("Your action budget")
    assert kinds(r2).count("budget.exhausted") == 1
    assert payloads(r2, "tool.returned") == payloads(r, "tool.returned")  # no tool ran again


def test_a_failed_wrap_up_call_after_a_budget_of_one_can_be_retried():
    """§10: a provider failure after a completed call leaves a checkpoint; with
    `max_iterations = 1` the wrap-up call follows call 1, which completed."""
    spec = BUDGET.replace("max_iterations = 2", "max_iterations = 1")
    agent, prov = make(spec, [call("t"), "wrapped answer"], fail_at=2)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is not None
    r2 = agent.resume(r.checkpoint)
    assert (r2.outcome, r2.answer) == ("max_iterations", "wrapped answer")
    assert prov.requests[-1].tools == () and payloads(r2, "tool.returned") == []


def test_the_wrap_up_call_cites_the_context_it_is_sent_and_why_shows_it():
    """§12: the answer's explanation holds the context pieces that were in its call; the wrap-up
    call is sent the last iteration's system text, also when it is retried."""
    spec = BUDGET.replace("agent g {", 'agent g { system = "Be brief."')
    for fail_at in (None, 3):
        agent, _ = make(spec, [call("t"), call("t"), "wrapped answer"], fail_at=fail_at)
        r = agent.run("hi")
        if fail_at is not None:
            r = agent.resume(r.checkpoint)
        composed = [e.id for e in r.trace if e.kind == "context.composed"]
        wrap = [e for e in r.trace if e.kind == "llm.called"][-1]
        assert composed[-1] in wrap.caused_by
        text = r.why()
        reply = text.index("model replied (LLM call #")  # (the answer's, first)
        assert text.index("context of iteration 2", reply) < text.index("tool results", reply)


def test_a_checkpoint_of_the_old_shape_still_resumes():
    agent, prov = make(GRAPH, [call("t"), "done"], fail_at=2)
    r = agent.run("hi")
    data = copy.deepcopy(r.checkpoint.data)
    data["version"] = 1
    for field in ("decided", "wrapping", "mark", "turn"):
        data["state"].pop(field, None)
    agent.store.put_checkpoint(r.run_id, data)
    r2 = agent.resume(r.run_id)
    assert r2.outcome == "answered" and moves(r2) == [(None, "a", "entry"), ("a", "b", "route")]


# ---------------------------------------------------------------- F13: a host failure
def test_a_host_failure_is_resumable_from_the_last_completed_iteration():
    agent, _ = make(UNBOUND, [call("t"), [("t", {}), ("u", {})], "never"])
    r = agent.run("hi")
    assert r.outcome == "error" and r.error.startswith("AFP501 tool `u` is not bound")
    assert r.checkpoint is not None
    assert kinds(r)[-3:] == ["tool.called", "tool.returned", "run.finished"]
    failed = payloads(r, "tool.returned")[-1]
    assert (failed["tool"], failed["status"], failed["executed"]) == ("u", "failure", False)
    assert "AFP501" in failed["result"]["error"]
    fixed, prov = make(UNBOUND, [call("u"), "done"], tools={"u": lambda: "bound"},
                       store=agent.store)
    r2 = fixed.resume(r.checkpoint)
    assert (r2.outcome, r2.answer) == ("answered", "done")
    retried = prov.requests[0]  # the iteration as it began: the failed batch is not in it
    assert [m.role for m in retried.messages] == ["user", "assistant", "tool"]
    assert tool_texts(prov.requests[1]) == ["ok", "bound"]
    assert [e.seq for e in r2.trace] == list(range(1, len(r2.trace) + 1))


def test_a_host_failure_in_the_first_iteration_has_no_checkpoint():
    agent, _ = make(UNBOUND, [call("u"), "never"])
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is None
    assert kinds(r)[-2:] == ["tool.returned", "run.finished"]


# ---------------------------------------------------------------- F07: why reaches the message
def test_every_caused_by_chain_reaches_run_started():
    spec = """
    agent g { graph = flow  tools = [t]  redact = [keys] }
    tool t { description = "t" impl = returns({ token: "s3cr3t-value" }) }
    tool pay { description = "pay" check_in = true impl = returns("paid") }
    skill a { description = "A." body = "A BODY" tools = [t] }
    skill b { description = "B." body = "B BODY" tools = [pay] steps { pay "pay it" } }
    graph flow { entry a  route a -> b on t  route b -> a }
    redact keys { keys = ["token"] }
    """
    agent, _ = make(spec, [call("t"), "early", call("pay"), "done"], fail_at=2)
    r = agent.run("hello")
    assert r.outcome == "error" and _chains_reach_the_start(r.trace) == []
    r2 = agent.resume(r.checkpoint)
    assert r2.outcome == "paused" and _chains_reach_the_start(r2.trace) == []
    r3 = agent.resume(r2.checkpoint, approve(r2.checkin))
    assert r3.outcome == "answered" and _chains_reach_the_start(r3.trace) == []
    assert {"cursor.moved", "redaction.applied", "steps.unfinished", "run.resumed"} <= set(kinds(r3))
    for fixture in ((BUDGET, [call("t"), call("t"), "w"]), (UNBOUND, [call("t"), call("u")])):
        r4 = make(*fixture)[0].run("hi")
        assert _chains_reach_the_start(r4.trace) == [], r4.outcome


def test_the_first_context_and_the_cold_start_are_caused_by_the_message():
    agent, _ = make(GRAPH, [call("t"), "done"])
    r = agent.run("hi")
    start = r.trace[0].id
    cold, moved = [e for e in r.trace if e.kind == "cursor.moved"]
    first, second = [e for e in r.trace if e.kind == "context.composed"]
    assert start in cold.caused_by and start in first.caused_by
    assert moved.id in second.caused_by
    assert next(e.id for e in r.trace if e.kind == "tool.returned") in second.caused_by


# ---------------------------------------------------------------- F18: totals match the trace
def test_totals_of_a_provider_error_and_its_retry_match_the_trace():
    agent, _ = make(BUDGET.replace("max_iterations = 2", "max_iterations = 5"),
                    [call("t"), call("t"), "done"], fail_at=2)
    r = agent.run("hi")
    fin = payloads(r, "run.finished")[-1]
    counted = tally(r.trace)
    assert (fin["llm_calls"], fin["tool_calls"]) == (counted["llm_calls"], counted["tool_calls"])
    assert fin["llm_calls"] == 2
    r2 = agent.resume(r.checkpoint)
    fin2 = payloads(r2, "run.finished")[-1]
    counted2 = tally(r2.trace)
    assert (fin2["llm_calls"], fin2["tool_calls"]) == (counted2["llm_calls"], counted2["tool_calls"])
    assert fin2["llm_calls"] == 4 and fin2["tokens"] == counted2["tokens"]


def test_totals_of_a_host_failure_match_the_trace():
    agent, _ = make(UNBOUND, [call("t"), call("u"), "never"])
    r = agent.run("hi")
    fin = payloads(r, "run.finished")[-1]
    assert fin["tool_calls"] == tally(r.trace)["tool_calls"] == 2


def test_a_python_impl_that_cannot_be_imported_names_the_fix():
    spec = 'agent g { tools = [t] }\ntool t { description = "t" impl = python("nosuchmod_afp:fn") }\n'
    agent, _ = make(spec, [call("t"), "never"])
    r = agent.run("hi")
    assert r.outcome == "error" and r.error.startswith("AFP501 tool `t` is not bound")
    assert "make `nosuchmod_afp` importable" in r.error and "tools={'t': fn}" in r.error
