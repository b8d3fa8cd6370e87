"""Conformance: steps (§5) and the iteration budget (§6)."""
from __future__ import annotations

from interp_support import call, kinds, make, payloads, tool_texts

from afp_dsl.interp import WRAP_UP
from afp_dsl.runtime import Stub, Stubs

PROC = """
agent g { graph = m tools = [note] }
tool note { description = "take a note" impl = returns("noted") }
tool one { description = "first tool" impl = returns("1") }
tool two { description = "second tool" impl = returns("2") }
tool leave { description = "leave" impl = returns("bye") }
skill proc {
  description = "a procedure"
  tools = [one, two, leave]
  steps {
    one "do one"
    two "then two"
  }
  %s
}
skill out { description = "out" }
graph m {
  entry proc
  route proc -> out on leave
}
"""


def proc(script, on_skip=""):
    return make(PROC % on_skip, script)


def names(request):
    return [t.name for t in request.tools]


def test_only_the_current_step_tool_is_offered_with_a_banner():
    agent, prov = proc(["ok"])
    agent.run("hi")
    tools = {t.name: t for t in prov.requests[0].tools}
    assert names(prov.requests[0]) == ["note", "one", "read_skill", "skip_step"]
    assert tools["one"].description == "[Step 1 of 2 — do one] first tool"


def test_success_advances_and_tells_the_model_what_is_next():
    agent, prov = proc([call("one"), call("two"), "done"])
    r = agent.run("hi")
    assert tool_texts(prov.requests[1])[0] == (
        "1 Step 1 of 2 done. Now on step 2 of 2: then two (tool: `two`).")
    assert "two" in names(prov.requests[1]) and "one" not in names(prov.requests[1])
    assert tool_texts(prov.requests[2])[1].endswith("Step 2 of 2 done. All 2 steps complete.")
    assert [p["step"] for p in payloads(r, "step.advanced")] == [1, 2]
    assert "steps.unfinished" not in kinds(r)


def test_errors_never_advance():
    agent, prov = proc([call("one"), "done", "really done"])
    stubs = Stubs()
    stubs.add("one", Stub(fails="disk full"))
    agent.session.stubs = stubs
    r = agent.run("hi")
    assert tool_texts(prov.requests[1]) == ["disk full"]
    assert payloads(r, "step.advanced") == []


def test_skip_step_advance():
    agent, prov = proc([call("skip_step", reason="already done"), "x", "y"])
    r = agent.run("hi")
    assert tool_texts(prov.requests[1])[0] == (
        "Step 1 skipped: already done. Now on step 2 of 2: then two (tool: `two`).")
    assert payloads(r, "step.skipped")[0]["policy"] == "advance"


def test_skip_step_hold_keeps_the_step():
    agent, prov = proc([call("skip_step", reason="cannot"), "x", "y"], 'on_skip = "hold"')
    agent.run("hi")
    assert "stays current (declared policy 'hold')" in tool_texts(prov.requests[1])[0]
    assert "one" in names(prov.requests[1])


def test_skip_step_says_what_it_would_skip_and_under_which_policy():
    """The original's `skipStepDescription`: the step, the steps left, the declared policy
    (its test checks for `declared policy: 'advance'`). Before: one fixed sentence."""
    for on_skip, then in (("", "the procedure moves to the next step (declared policy: 'advance')"),
                          ('on_skip = "hold"', "the step stays current until it runs or the run "
                                               "ends (declared policy: 'hold')")):
        agent, prov = proc(["ok"], on_skip)
        agent.run("hi")
        tools = {t.name: t for t in prov.requests[0].tools}
        assert tools["skip_step"].description == (
            f"Skip step 1 of 2 ('one' — do one) with a recorded reason. 2 step(s) remain in the "
            f"'proc' procedure. On skip, {then}.")


def test_skipping_the_last_step_says_the_procedure_is_complete_and_counts_the_skips():
    agent, prov = proc([call("skip_step", reason="on file"), call("skip_step", reason="no printer"),
                        "done"])
    agent.run("hi")
    assert tool_texts(prov.requests[2])[1] == (
        "Step 2 skipped: no printer. That was the last step — the 'proc' procedure is complete "
        "(2 step(s) skipped).")
    agent, prov = proc([call("one"), call("skip_step", reason="no printer"), "done"])
    agent.run("hi")
    assert tool_texts(prov.requests[2])[1].endswith("is complete (1 step(s) skipped).")


def test_skip_step_teaching_results_as_the_original_words_them():
    agent, prov = proc([call("skip_step", reason="   "), "x", "y"])
    r = agent.run("hi")
    assert "`reason` is required and must be non-empty" in tool_texts(prov.requests[1])[0]
    assert payloads(r, "step.skipped") == []
    agent, prov = proc([call("one"), call("two"), call("skip_step", reason="why not"), "done"])
    r = agent.run("hi")
    assert "no step procedure is active" in tool_texts(prov.requests[3])[2]
    assert payloads(r, "step.skipped") == []


def test_nudge_once_then_accept_and_record_unfinished():
    agent, prov = proc(["premature", "still premature"])
    r = agent.run("hi")
    nudge = prov.requests[1].messages[-1]
    assert nudge.role == "user" and nudge.content.startswith("Step 1 of 'proc' has not run")
    assert [p["action"] for p in payloads(r, "steps.unfinished")] == ["nudged", "accepted"]
    assert r.answer == "still premature"


LAST = """
agent g { graph = m context = [sorry] }
tool look { description = "look" }
tool two { description = "two" impl = returns("2") }
skill proc { description = "p" tools = [look, two] steps { look "look"  two "two" } }
graph m { entry proc }
instruction sorry { when = last.tool == "look" and last.status == "failure" prompt = "APOLOGIZE" }
"""


def _fail(**_):
    raise RuntimeError("db down")


def test_the_nudge_turn_still_reads_the_last_tool_result():
    # `last` is the previous tool result: the nudge's turn ran no tool, but the failure stands
    agent, prov = make(LAST, [call("look"), "sorry", "still sorry"], tools={"look": _fail})
    result = agent.run("hi")
    assert [r for r in payloads(result, "steps.unfinished")][0]["action"] == "nudged"
    assert ["APOLOGIZE" in r.system for r in prov.requests] == [False, True, True]
    # ...and a retry of the nudge's turn, from its checkpoint, reads it too
    agent, prov = make(LAST, [call("look"), "sorry", "still sorry"], tools={"look": _fail},
                       fail_at=3)
    failed = agent.run("hi")
    assert failed.outcome == "error"
    done = agent.resume(failed.checkpoint)
    assert done.outcome == "answered" and "APOLOGIZE" in prov.requests[-1].system


def test_a_cursor_move_resets_the_pointer():
    spec = (PROC % "").replace("route proc -> out on leave",
                               "route proc -> out on leave\n  route out -> proc on note")
    # (`leave` is offered once the steps are done: a procedure offers only its current step)
    agent, prov = make(spec, [call("one"), call("two"), call("leave"), call("note"), "done",
                              "done"])
    agent.run("hi")
    assert "leave" in names(prov.requests[2])
    tools = {t.name: t for t in prov.requests[4].tools}
    assert tools["one"].description.startswith("[Step 1 of 2")



def test_a_persistent_base_left_mid_procedure_goes_on_where_it_was():
    """The cursor leaves the base `proc` after step 1 (`route proc -> out on one`); the base
    stays active, so its procedure goes on at step 2 (before, the move reset it to step 1,
    and the nudge said step 1 had not run though it had)."""
    spec = (PROC % "").replace("route proc -> out on leave", "route proc -> out on one")
    agent, prov = make(spec, [call("one"), call("two"), "done"])
    r = agent.run("hi")
    assert r.outcome == "answered"
    assert ("proc", "out", "route") in [(p["from"], p["to"], p["cause"])
                                        for p in payloads(r, "cursor.moved")]
    tools = {t.name: t for t in prov.requests[1].tools}
    assert tools["two"].description.startswith("[Step 2 of 2") and "one" not in tools
    assert [p["step"] for p in payloads(r, "step.advanced")] == [1, 2]
    assert "steps.unfinished" not in kinds(r)


def test_a_fired_self_loop_restarts_the_procedure():
    """AFP206: a self-loop never moves the cursor; it resets the skill's steps."""
    spec = (PROC % "").replace("route proc -> out on leave", "route proc -> proc on two")
    agent, prov = make(spec, [call("one"), call("two"), "done", "stopping"])
    r = agent.run("hi")
    moved = [(p["from"], p["to"], p["cause"]) for p in payloads(r, "cursor.moved")]
    assert ("proc", "proc", "route") in moved
    tools = {t.name: t for t in prov.requests[2].tools}
    assert tools["one"].description.startswith("[Step 1 of 2")
    assert [p["step"] for p in payloads(r, "steps.unfinished")] == [1, 1]


BUDGET = """
agent g { max_iterations = 2 tools = [work] %s }
tool work { description = "work" impl = returns("worked") }
"""


def test_budget_last_call_tools_do_not_run_and_wrap_up_answers():
    agent, prov = make(BUDGET % "", [call("work"), call("work"), "best effort"])
    r = agent.run("hi")
    assert r.outcome == "max_iterations" and r.answer == "best effort"
    assert sum(1 for p in payloads(r, "tool.returned") if p["executed"]) == 1
    assert prov.requests[2].tools == ()
    assert prov.requests[2].messages[-1].content == WRAP_UP
    (ex,) = payloads(r, "budget.exhausted")
    assert ex["action"] == "wrapped-up" and ex["pending"] == ["work"]


def test_budget_without_wrap_up_uses_the_last_text():
    agent, prov = make(BUDGET % "wrap_up = false",
                       [call("work"), {"text": "partial answer", "calls": [("work", {})]}])
    r = agent.run("hi")
    assert r.outcome == "max_iterations" and r.answer == "partial answer"
    assert len(prov.requests) == 2
    assert payloads(r, "budget.exhausted")[0]["action"] == "cut-short"


BARE = """
agent g { graph = m }
tool quiet { description = "" impl = returns("") }
tool loud { description = "loud" impl = returns("L") }
skill p { description = "p" tools = [quiet, loud] steps { quiet "say nothing" loud "speak" } }
graph m { entry p }
"""


def test_a_step_tool_with_no_description_or_an_empty_result_gets_no_stray_space():
    """The banner was followed by a space and nothing (`[Step 1 of 2 — say nothing] `), and
    an empty result read ` Step 1 of 2 done. ...` with a leading space."""
    agent, prov = make(BARE, [call("quiet"), "done", "really"])
    agent.run("hi")
    tools = {t.name: t for t in prov.requests[0].tools}
    assert tools["quiet"].description == "[Step 1 of 2 — say nothing]"
    assert tool_texts(prov.requests[1])[0] == (
        "Step 1 of 2 done. Now on step 2 of 2: speak (tool: `loud`).")


NOTELESS = """
agent g { graph = m }
tool s1 { description = "first" impl = returns("R1") }
tool s2 { description = "second" impl = returns("R2") }
skill p { description = "P" body = "BODY" tools = [s1, s2] steps { s1  s2 "  " } }
skill a { description = "A" }
graph m { entry a  route a -> p }
"""


def test_a_step_without_a_note_reads_without_a_dangling_separator():
    """The note is optional (language §5.3 as decided in docs): no sentence the model reads may
    hold an empty note (`[Step 1 of 2 — ]`, `step 1 of 2: .`, `has not run —  (tool`)."""
    agent, prov = make(NOTELESS, [call("read_skill", id="p"), call("s1"), "stop", "stop"])
    r = agent.run("go")
    seen = [tool_texts(q)[-1:] for q in prov.requests[1:3]] + [[prov.requests[3].messages[-1].content]]
    assert seen == [["Skill 'p' activated for the next iteration. You are on step 1 of 2. "
                     "Its tool: `s1`."],
                    ["R1 Step 1 of 2 done. Now on step 2 of 2 (tool: `s2`)."],
                    ["Step 2 of 'p' has not run (tool: `s2`). Finish the remaining steps, or say "
                     "why you are stopping."]]
    assert [t.description for t in prov.requests[1].tools if t.name == "s1"] == ["[Step 1 of 2] first"]
    assert prov.requests[2].system.endswith("\n\n[Step 2 of 2]")
    assert [p["action"] for p in payloads(r, "steps.unfinished")] == ["nudged", "accepted"]
    from afp_dsl.prompts import is_prompt  # (the demo mock tells the loop's nudge from a person)
    assert is_prompt(seen[2][0])


def test_an_empty_steps_block_is_a_warning():
    import afp_dsl as afp
    diags = afp.check("agent g { skills = [p] }\ntool s1 { description = \"s\" impl = returns(\"x\") }\n"
                      "skill p { description = \"P\" tools = [s1] steps { } }\n")
    assert [(d.code, d.severity.value, d.message) for d in diags] == [
        ("AFP106", "warning", "an empty `steps` block has no effect: the skill runs no procedure")]
