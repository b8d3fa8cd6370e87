"""Policy links that hand on a rewritten value (semantics §8: "each link sees the previous
link's output"; a non-text rewrite at the message boundary is a denial).

A host link answers `afp_dsl.rewrite(value, because)` or `("allow", because, value)`: the next
links, then the run, see the value: the message at `input`, the arguments at `before` (what
validation, the tool's check-in and the tool get), the result the model reads at `after` (the
record keeps the real one), the answer at `output`.
"""
from __future__ import annotations

import pytest

import afp_dsl
import interp_host
from interp_support import call, make, payloads, tool_texts

SPEC = """
agent g { tools = [pay] policies = [%s] }
tool pay { description = "pay" input { amount: number } impl = python("interp_host:pay") %s }
policy scrub { impl = python("interp_host:scrub_ssn") }
policy cap { impl = python("interp_host:cap_amount") }
policy see { impl = python("interp_host:see") }
policy mask { impl = python("interp_host:mask_result") }
policy bad { impl = python("interp_host:bad_rewrite") }
policy no_reason { impl = python("interp_host:no_reason") }
policy not_json { impl = python("interp_host:not_json") }
policy over_50 { before pay { deny when args.amount > 50 because "over 50" } }
policy ask_big { before pay { ask when args.amount >= 100 because "big" } }
"""


@pytest.fixture(autouse=True)
def _clear():
    interp_host.SEEN.clear()
    interp_host.CALLS.clear()


def seen(moment: str) -> list[dict]:
    """What the `see` link was given at `moment`, in order."""
    return [x for x in interp_host.SEEN if x["moment"] == moment]


def run(policies: str, script: list, message: str = "hi", check_in: str = ""):
    agent, prov = make(SPEC % (policies, check_in), script)
    return agent.run(message), prov


def test_an_input_rewrite_is_what_later_links_and_the_model_see():
    r, prov = run("scrub, see", ["done"], message="my SSN is 123-45-6789")
    assert seen("input")[0]["message"] == "my SSN is [ssn]"
    assert [m.content for m in prov.requests[0].messages if m.role == "user"] == ["my SSN is [ssn]"]
    row = payloads(r, "policy.decided")[0]
    assert (row["policy"], row["outcome"], row["reason"], row["changed"]) == ("scrub", "allow", "SSNs stay out", True)
    assert row["value"] == "my SSN is [ssn]"
    assert "changed" not in payloads(r, "policy.decided")[1]  # (`see` allowed as it was)


def test_an_output_rewrite_is_the_answer():
    r, _ = run("scrub", ["your SSN 123-45-6789 is on file"])
    assert r.outcome == "answered" and r.answer == "your SSN [ssn] is on file"


def test_a_before_rewrite_is_what_the_next_link_validation_and_the_tool_get():
    r, prov = run("cap, see", [call("pay", amount=500), "ok"])
    assert seen("before")[0]["args"] == {"amount": 100}
    assert payloads(r, "tool.called")[0]["args"] == {"amount": 500}  # (what the model asked)
    rows = [x for x in payloads(r, "policy.decided") if x["moment"] == "before"]
    assert [(x["policy"], x.get("changed")) for x in rows] == [("cap", True), ("see", None)]
    assert rows[0]["value"] == {"amount": 100} and rows[0]["reason"] == "capped at 100"
    assert interp_host.CALLS == [100] and tool_texts(prov.requests[1]) == ["paid 100"]
    assert seen("after")[0]["args"] == {"amount": 100}  # ...and `after` sees what it got


def test_a_rule_after_a_rewrite_reads_the_rewritten_arguments():
    r, _ = run("cap, over_50", [call("pay", amount=500), "ok"])
    assert [(x["policy"], x["outcome"]) for x in payloads(r, "policy.decided")] == [
        ("cap", "allow"), ("over_50", "deny")]
    r, _ = run("over_50, cap", [call("pay", amount=20), "ok"])  # (order: over_50 first, allows)
    assert payloads(r, "tool.returned")[0]["status"] == "success"


def test_a_rewrite_before_an_ask_survives_the_pause():
    agent, _ = make(SPEC % ("cap, ask_big, see", ""), [call("pay", amount=500), "ok"])
    paused = agent.run("hi")
    assert paused.outcome == "paused" and paused.checkin is not None
    done = agent.resume(paused.checkpoint, afp_dsl.approve(paused.checkin, by="dana"))
    assert done.outcome == "answered"
    assert [x["args"] for x in seen("before")] == [{"amount": 100}]  # (after the resume)
    assert [x["args"] for x in seen("after")] == [{"amount": 100}]


def test_the_person_asked_sees_the_arguments_the_call_will_run_with():
    # a rewrite before the ask: the check-in shows (and records) what approval lets run
    agent, _ = make(SPEC % ("cap, ask_big", "check_in = args.amount >= 100"),
                    [call("pay", amount=500), "ok"])
    paused = agent.run("hi")
    assert paused.checkin.args == {"amount": 100}
    assert payloads(paused, "checkin.requested")[0]["args"] == {"amount": 100}
    assert payloads(paused, "tool.called")[0]["args"] == {"amount": 500}  # (what the model asked)
    again = agent.resume(paused.checkpoint, afp_dsl.approve(paused.checkin))  # the tool's own gate
    assert again.outcome == "paused" and again.checkin.args == {"amount": 100}
    done = agent.resume(again.checkpoint, afp_dsl.approve(again.checkin))
    assert done.outcome == "answered" and interp_host.CALLS == [100]


def test_an_after_rewrite_is_what_the_model_reads_and_the_record_keeps_the_result():
    r, prov = run("mask", [call("pay", amount=5), "ok"])
    returned = payloads(r, "tool.returned")[0]
    assert returned["result"] == "paid 5" and returned["read"] == '{"masked":true}'
    assert tool_texts(prov.requests[1]) == ['{"masked":true}']


@pytest.mark.parametrize("policies, script, why", [
    ("bad", ["done"], "a rewrite of the message to a value of type int; at the message boundary it must be text"),
    ("bad", [call("pay", amount=1), "ok"], "a rewrite of the message to a value of type int"),
    ("no_reason", [call("pay", amount=1), "ok"], "a rewrite without its reason"),
])
def test_a_rewrite_a_moment_cannot_take_is_a_denial(policies, script, why):
    r, _ = run(policies, script)
    row = payloads(r, "policy.decided")[0]
    assert row["outcome"] == "deny" and why in row["reason"] and "changed" not in row


def test_non_object_arguments_and_non_json_data_are_denials():
    from afp_dsl.policy_host import _rewrite_problem
    assert "arguments are an object" in _rewrite_problem("before", [1, 2], "x")
    assert "holding a value of type set" in _rewrite_problem("before", {"amount": {1, 2}}, "x")
    assert "the number nan" in _rewrite_problem("after", {"x": float("nan")}, "x")
    assert "a key of type int" in _rewrite_problem("after", {1: "x"}, "x")
    assert _rewrite_problem("after", [1, "a", None, {"b": [True, 1.5]}], "x") is None
    r, _ = run("not_json", [call("pay", amount=1), "ok"])
    assert payloads(r, "tool.returned")[0]["status"] == "denied"


def test_the_rewritten_value_is_a_copy_and_is_redacted_when_recorded():
    spec = (SPEC % ("cap", "") + 'redact r { keys = ["amount"] }\n').replace(
        "policies = [cap]", "policies = [cap] redact = [r]")
    agent, _ = make(spec, [call("pay", amount=500), "ok"])
    r = agent.run("hi")
    row = payloads(r, "policy.decided")[0]
    assert row["changed"] is True and row["value"]["amount"] != 100  # (redacted by key)
