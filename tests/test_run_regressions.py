"""Regressions the run property tests found (tests/test_run_properties.py), each as the plain
input that showed it: what was wrong is in each test's docstring."""
from __future__ import annotations

import math


from afp_dsl.envelopes import described
from afp_dsl.providers.base import Reply, ToolCall

from interp_support import make
from run_props_support import (
    Hopeless, TOKEN, Unprintable, UnprintableError, agent_for, assert_sound, cycle,
    host_tools, nested)


# ---------------------------------------------------------------- regressions found by the properties
def test_a_retry_after_a_provider_error_continues_the_sequence():
    """The checkpoint of a provider error was taken before `run.finished`: the retry reused its seq
    (two events `r-1:14`) and the store, keyed by seq, lost the retry's `run.resumed`."""
    agent = agent_for([[("lookup", {"id": "AB"})]], host_tools(), max_iterations=3)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is not None
    r2 = agent.resume(r.checkpoint)
    seqs = [e.seq for e in r2.trace]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [e.kind for e in agent.store.events(r.run_id)].count("run.resumed") == 1
    assert_sound(agent, r2)


def test_a_resumed_run_relearns_secrets_of_results_holding_nan():
    """Resuming relearned secrets from the history's tool texts with the guards' strict JSON parse,
    which refuses NaN: a secret under `token` beside a NaN reached the retry's error message."""
    tools = {"pay": lambda amount, password="": {"paid": math.nan, "token": TOKEN}}
    agent = agent_for([[("pay", {"amount": 5})]], tools)  # (NaN arguments are refused: §7.3)
    r = agent.run("pay")
    r2 = agent.resume(r.checkpoint)
    assert r2.outcome == "error" and "[REDACTED]" in r2.error
    assert_sound(agent, r2, secrets=(TOKEN,))


STEPPED = """
agent g { graph = m redact = [r] }
tool t0 { description = "T" }
skill s0 { description = "S0" tools = [t0] steps { t0 "do it" } }
graph m { entry s0 }
redact r { keys = ["token"] }
"""


def test_follow_up_and_resumed_runs_relearn_a_secret_from_a_result_with_a_step_note():
    """(tests/test_spec_properties.py) A step's note after a JSON result made the history's text
    no JSON for `relearn`'s `json.loads`: a follow-up run recorded the model's copy of the
    secret raw, and a resumed run's error quoted it."""
    tools = {"t0": lambda: {"token": TOKEN}}
    agent, _ = make(STEPPED, [[("t0", {})], "ok"] + [f"it was {TOKEN}"] * 2, tools=tools)
    conv = agent.conversation()
    conv.run("hi")
    r = conv.run("again")  # (the steps start again: a nudge, then the answer)
    assert r.answer == f"it was {TOKEN}" and TOKEN not in r.trace.to_json()
    agent, _ = make(STEPPED, [[("t0", {})]], tools=tools)  # (then the script runs out: `error`)
    r = agent.run("hi")
    assert "Step 1 of 1 done" in r.error and TOKEN not in r.error
    r = agent.resume(r.checkpoint)
    assert r.outcome == "error" and "[REDACTED]" in r.error and TOKEN not in r.trace.to_json()


def test_values_no_json_holds_are_refused_with_a_message_naming_the_problem():
    for value, problem in [(10**5000, "integer too long"), (cycle("list"), "a cycle"),
                           (nested(150), "more than 100 levels"), (Hopeless(), "no JSON form"),
                           (described(Hopeless(), description="d"), "result envelope raised")]:
        agent = agent_for([[("lookup", {"id": "AB"})], "done"], {"lookup": lambda id, count=1: value})
        r = agent.run("hi")
        (ret,) = [e.payload for e in r.trace if e.kind == "tool.returned"]
        assert ret["status"] == "failure" and problem in ret["read"], ret
        assert_sound(agent, r)


def test_a_host_policy_calling_sys_exit_is_a_denial_and_the_run_goes_on():
    """A host link's SystemExit ended the host process (as a tool body's did), mid-run."""
    for moment in ("before", "after", "output"):
        agent = agent_for([[("lookup", {"id": "AB"})], "ok"], host_tools(),
                          answers={moment: SystemExit(0)})
        r = agent.run("hi")
        rows = [e.payload for e in r.trace if e.kind == "policy.decided" and e.payload["policy"] == "host"]
        assert [row["outcome"] for row in rows] == ["deny"], rows
        assert "called sys.exit(0)" in rows[0]["reason"]
        assert r.outcome in ("answered", "denied"), (r.outcome, r.error)
        assert_sound(agent, r)


def test_a_host_policy_whose_answer_or_error_cannot_be_shown_is_a_denial():
    """A host link raising an exception whose `str` raises crashed the run (`policy._exc_text`)."""
    for answers in ({"before": UnprintableError()}, {"after": Hopeless()},
                    {"output": ValueError(Unprintable())}):
        agent = agent_for([[("lookup", {"id": "AB"})], "ok"], host_tools(), answers=answers)
        r = agent.run("hi")
        rows = [e.payload for e in r.trace if e.kind == "policy.decided" and e.payload["policy"] == "host"]
        assert [row["outcome"] for row in rows] == ["deny"] and rows[0]["reason"], rows
        assert_sound(agent, r)


def test_an_envelope_is_recorded_as_its_json_so_redaction_sees_its_keys():
    agent = agent_for([[("lookup", {"id": "AB"})], "done"],
                      {"lookup": lambda id, count=1: described({"token": TOKEN}, description="d")})
    r = agent.run("hi")
    (ret,) = [e.payload for e in r.trace if e.kind == "tool.returned"]
    assert ret["result"]["value"] == {"token": "[REDACTED]"}
    assert TOKEN in agent.session.provider.requests[-1].messages[-1].content  # the model reads it
    assert_sound(agent, r, secrets=(TOKEN,))


def test_a_reply_the_interpreter_cannot_use_is_a_provider_error_naming_it():
    for script, says in [([Reply(tool_calls=(ToolCall("c", "lookup", [1, 2]),))], "not a JSON object"),
                         ([[("lookup", {"deep": nested(150)})]], "more than 100 levels"),
                         ([Reply(tool_calls=(ToolCall("\ud800", "pay", {"amount": 200}),))],
                          "lone surrogate"),  # (the check-in id, made of it, broke the SQLite store)
                         (["x", "y"], None)]:
        agent = agent_for(script, host_tools(), durable=True)
        r = agent.run("hi")
        assert (r.outcome == "error") == (says is not None) and (says is None or says in r.error)
        assert_sound(agent, r)
