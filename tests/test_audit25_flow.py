"""Audit (session 25): runs, context, skills, the graph cursor, steps and the budget at run time
(semantics §1–§6), each test written from a line of the spec."""
from __future__ import annotations

import pytest
from interp_support import call, kinds, make, payloads, tool_texts

# ---------------------------------------------------------------- §5: denials never advance
DENIED_SKIP = """
agent g { graph = m policies = [nope] }
tool one { description = "first tool" impl = returns("1") }
tool two { description = "second tool" impl = returns("2") }
skill proc {
  description = "a procedure"
  tools = [one, two]
  steps { one "do one"  two "then two" }
  %s
}
graph m { entry proc }
policy nope { after skip_step { deny when args.reason == "meh" because "no skipping" } }
"""


@pytest.mark.parametrize("on_skip", ["", 'on_skip = "advance"', 'on_skip = "hold"'])
def test_a_skip_an_after_link_denies_does_not_advance_nor_claim_it(on_skip):
    """semantics §5: "Errors, denials and refusals never advance" — a `skip_step` an `after`
    link denies leaves the step current and records no `step.skipped`."""
    agent, prov = make(DENIED_SKIP % on_skip, [call("skip_step", reason="meh"), "x", "y"])
    r = agent.run("hi")
    assert tool_texts(prov.requests[1]) == ["no skipping"]
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["denied"]
    assert payloads(r, "step.skipped") == [] and payloads(r, "step.advanced") == []
    tools = {t.name: t.description for t in prov.requests[1].tools}
    assert tools["one"].startswith("[Step 1 of 2 — do one]") and "two" not in tools
    assert payloads(r, "steps.unfinished")[-1]["step"] == 1


@pytest.mark.parametrize("on_skip,step", [("", 2), ('on_skip = "hold"', 1)])
def test_a_skip_the_after_links_pass_is_applied_after_them(on_skip, step):
    agent, prov = make(DENIED_SKIP % on_skip, [call("skip_step", reason="done already"), "x", "y"])
    r = agent.run("hi")
    skipped = payloads(r, "step.skipped")
    assert [(p["step"], p["reason"]) for p in skipped] == [(1, "done already")]
    assert [t.description for t in prov.requests[1].tools][0].startswith(f"[Step {step} of 2")
    k = kinds(r)
    assert k.index("policy.decided") < k.index("step.skipped") < k.index("tool.returned")


def test_the_last_skip_counts_the_steps_skipped_before_it():
    agent, prov = make(DENIED_SKIP % "", [call("skip_step", reason="a"), call("skip_step", reason="b"),
                                          "done"])
    agent.run("hi")
    assert tool_texts(prov.requests[2])[-1] == (
        "Step 2 skipped: b. That was the last step — the 'proc' procedure is complete "
        "(2 step(s) skipped).")


def test_after_a_denied_skip_the_next_step_tool_of_the_same_reply_does_not_run():
    """The pointer did not move, so the next step's tool is still not the current one."""
    agent, prov = make(DENIED_SKIP % "", [[("skip_step", {"reason": "meh"}), ("two", {})],
                                          "x", "y"])
    r = agent.run("hi")
    assert [(p["tool"], p["status"], p["executed"]) for p in payloads(r, "tool.returned")] == [
        ("skip_step", "denied", False), ("two", "invalid", False)]
    assert payloads(r, "step.advanced") == []


# ---------------------------------------------------------------- §2: the system prompt's pieces
BANNER = """
agent g { system = "SYSTEM" graph = m context = [tone] }
steering tone { prompt = "TONE" }
tool one { description = "first tool" impl = returns("1") }
tool two { description = "second tool" impl = returns("2") }
skill proc { description = "P" body = "BODY" tools = [one, two] steps { one "do one"  two } }
graph m { entry proc }
"""


def test_the_system_prompt_ends_with_the_current_step_banner_alone():
    """semantics §2: system, context, skill bodies, "then the current step banner if any" —
    the banner of §5, `[Step k of n — note]`, joined by a blank line."""
    agent, prov = make(BANNER, [call("one"), "done", "stop"])
    agent.run("hi")
    assert prov.requests[0].system == "SYSTEM\n\nTONE\n\nBODY\n\n[Step 1 of 2 — do one]"
    assert prov.requests[1].system == "SYSTEM\n\nTONE\n\nBODY\n\n[Step 2 of 2]"
