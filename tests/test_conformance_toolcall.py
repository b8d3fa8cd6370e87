"""Conformance: what the tool pipeline runs (§2 tools, §5 steps, §7 pipeline, §8 policies).

Each test pins one finding of the runtime audit: a call to a tool that was not offered (F04),
several procedures at once (F08), an `ask` at `after` (F09), `after` on failures (F11); the last
test pins the documented exemption of built-ins from `before *` / `after *` (F12).
"""
from __future__ import annotations

from interp_support import call, make, payloads, tool_texts

from afp_dsl import approve

SCOPED = """
agent g { graph = flow tool_scope = "active" }
tool secret_op { description = "dangerous" impl = returns("did it") }
tool go { description = "go" impl = returns("ok") }
skill a { description = "A." tools = [go] }
skill admin { description = "Admin." tools = [secret_op] }
graph flow { entry a  route a -> admin on go when result == "never" }
"""

STEPS = """
agent g { graph = flow }
tool s1 { description = "first" impl = returns("r1") }
tool s2 { description = "second" impl = returns("r2") }
skill p { description = "P." tools = [s1, s2] steps { s1 "one" s2 "two" } }
graph flow { entry p }
"""

TWO = """
agent g { skills = [p1, p2] }
tool a1 { description = "a1" impl = returns("x") }
tool a2 { description = "a2" impl = returns("x") }
tool b1 { description = "b1" impl = returns("x") }
tool b2 { description = "b2" impl = returns("x") }
skill p1 { description = "P1." tools = [a1, a2] steps { a1 "s a1" a2 "s a2" } }
skill p2 { description = "P2." tools = [b1, b2] steps { b1 "s b1" b2 "s b2" } }
"""

OPEN_BOTH = [("read_skill", {"id": "p1"}), ("read_skill", {"id": "p2"})]


def names(request):
    return [t.name for t in request.tools]


# ---------------------------------------------------------------- F04: not offered → refused
def test_a_tool_of_an_inactive_skill_is_refused_without_running():
    agent, prov = make(SCOPED, [call("secret_op"), "done"])
    r = agent.run("hi")
    assert names(prov.requests[0]) == ["go", "read_skill"]
    (ret,) = payloads(r, "tool.returned")
    assert ret["status"] == "invalid" and ret["executed"] is False
    assert tool_texts(prov.requests[1]) == [
        "Tool `secret_op` is not available now: skill `admin` is not active. "
        "Your tools now are: go, read_skill."]
    assert payloads(r, "tool.called")[0]["tool"] == "secret_op"
    assert r.trace.events[-1].payload["executions"] == {}


def test_a_later_step_tool_is_refused_and_the_current_step_is_named():
    agent, prov = make(STEPS, [call("s2"), "done", "done"])
    r = agent.run("hi")
    (ret,) = payloads(r, "tool.returned")[:1]
    assert ret["status"] == "invalid" and ret["executed"] is False
    assert tool_texts(prov.requests[1]) == [
        "Tool `s2` is not available now: skill `p` is on step 1 of 2, whose tool is `s1`. "
        "Your tools now are: s1, read_skill, skip_step."]
    assert payloads(r, "step.advanced") == []
    assert "s1" in names(prov.requests[1]) and "s2" not in names(prov.requests[1])


def test_a_tool_becomes_callable_once_its_skill_is_active():
    spec = SCOPED.replace("graph = flow ", "skills = [admin] graph = flow ")
    agent, prov = make(spec, [call("read_skill", id="admin"), call("secret_op"), "done"])
    r = agent.run("hi")
    rets = payloads(r, "tool.returned")
    assert [(x["tool"], x["status"], x["executed"]) for x in rets] == [
        ("read_skill", "success", False), ("secret_op", "success", True)]


def test_a_batch_runs_the_step_an_earlier_call_of_it_made_current():
    """The original's `skill-steps` test: `batch([charge, export])` advances the procedure twice
    and completes it. Before: `s2` was refused as not offered to the reply (it was on step 1)."""
    agent, prov = make(STEPS, [[("s1", {}), ("s2", {})], "done"])
    r = agent.run("hi")
    assert r.outcome == "answered" and r.answer == "done"
    assert [(x["tool"], x["status"], x["executed"]) for x in payloads(r, "tool.returned")] == [
        ("s1", "success", True), ("s2", "success", True)]
    assert [(x["step"], x["next"]) for x in payloads(r, "step.advanced")] == [(1, "s2"), (2, None)]
    assert "All 2 steps complete" in tool_texts(prov.requests[1])[1]


def test_a_batch_calling_a_step_it_already_finished_is_refused_saying_so():
    agent, prov = make(STEPS, [[("s1", {}), ("s2", {}), ("s2", {})], "done"])
    r = agent.run("hi")
    assert [(x["tool"], x["status"]) for x in payloads(r, "tool.returned")] == [
        ("s1", "success"), ("s2", "success"), ("s2", "invalid")]
    assert tool_texts(prov.requests[1])[2] == (
        "Tool `s2` was not offered to this reply: skill `p` was on step 1 of 2 when you sent it, "
        "and an earlier call of this reply moved it on past its last step. Call `s2` again.")


def test_a_step_tool_refused_after_the_step_moved_on_to_another_names_the_step_now():
    spec = STEPS.replace('tools = [s1, s2] steps { s1 "one" s2 "two" }',
                         'tools = [s1, s2, s3] steps { s1 "one" s2 "two" s3 "three" }')
    spec += 'tool s3 { description = "third" impl = returns("r3") }\n'
    agent, prov = make(spec, [[("s1", {}), ("s3", {})], "done", "done"])
    agent.run("hi")
    assert tool_texts(prov.requests[1])[1] == (
        "Tool `s3` is not available now: an earlier call of this reply moved skill `p` on to "
        "step 2 of 3, whose tool is `s2`.")


def test_a_resumed_batch_runs_the_step_an_earlier_call_made_current():
    spec = STEPS.replace("graph = flow", "graph = flow tools = [t]")
    spec += 'tool t { description = "t" check_in = true impl = returns("ok") }\n'
    agent, prov = make(spec, [[("s1", {}), ("t", {}), ("s2", {})], "done", "done"])
    paused = agent.run("hi")
    r = agent.resume(paused.checkpoint, approve(paused.checkin, by="maya"))
    assert [(x["tool"], x["status"]) for x in payloads(r, "tool.returned")] == [
        ("s1", "success"), ("t", "success"), ("s2", "success")]
    assert "All 2 steps complete" in tool_texts(prov.requests[1])[2]


def test_a_resumed_batch_is_judged_by_the_tools_offered_to_its_reply():
    spec = """
    agent g { tools = [t] skills = [admin] tool_scope = "active" }
    tool t { description = "t" check_in = true impl = returns("ok") }
    tool secret_op { description = "dangerous" impl = returns("did it") }
    skill admin { description = "Admin." tools = [secret_op] }
    """
    batch = [("read_skill", {"id": "admin"}), ("t", {}), ("secret_op", {})]
    agent, prov = make(spec, [batch, "done"])
    r = agent.run("hi")
    assert r.outcome == "paused"
    r2 = agent.resume(r.checkpoint, approve(r.checkin, by="maya"))
    assert [(p["tool"], p["status"]) for p in payloads(r2, "tool.returned")] == [
        ("read_skill", "success"), ("t", "success"), ("secret_op", "invalid")]
    # what the model reads does not contradict the pick's confirmation (nor list the tool)
    assert tool_texts(prov.requests[1])[2] == (
        "Tool `secret_op` was not offered to this reply: skill `admin`, which an earlier call of "
        "this reply loaded, is active from your next call. Call `secret_op` again.")


def test_a_tool_of_a_skill_loaded_earlier_in_the_same_reply_is_refused_saying_so():
    spec = SCOPED.replace("graph = flow ", "skills = [admin] graph = flow ")
    agent, prov = make(spec, [[("read_skill", {"id": "admin"}), ("secret_op", {})],
                              call("secret_op"), "done"])
    r = agent.run("hi")
    assert tool_texts(prov.requests[1])[1] == (
        "Tool `secret_op` was not offered to this reply: skill `admin`, which an earlier call of "
        "this reply loaded, is active from your next call. Call `secret_op` again.")
    assert [(x["tool"], x["status"]) for x in payloads(r, "tool.returned")][-1] == (
        "secret_op", "success")


# ---------------------------------------------------------------- F08: every procedure restricted
def test_every_running_procedure_offers_only_its_current_step():
    agent, prov = make(TWO, [OPEN_BOTH, "done", "done"])
    agent.run("hi")
    tools = {t.name: t.description for t in prov.requests[1].tools}
    assert list(tools) == ["a1", "b1", "read_skill", "skip_step"]
    assert tools["a1"] == "[Step 1 of 2 — s a1] a1"
    assert tools["b1"] == "[Step 1 of 2 — s b1] b1"
    system = prov.requests[1].system
    assert system.endswith("[Step 1 of 2 — s a1]\n\n[Step 1 of 2 — s b1]")


def test_the_second_procedure_advances_on_its_own_step_tool():
    agent, prov = make(TWO, [OPEN_BOTH, call("b1"), call("b2"), "done", "done"])
    r = agent.run("hi")
    assert [(p["skill"], p["step"]) for p in payloads(r, "step.advanced")] == [
        ("p2", 1), ("p2", 2)]
    assert tool_texts(prov.requests[2])[-1].endswith(
        "Step 1 of 2 done. Now on step 2 of 2: s b2 (tool: `b2`).")
    assert "b2" in names(prov.requests[2]) and "a1" in names(prov.requests[2])


def test_skip_step_skips_the_first_procedure_unless_a_skill_is_named():
    agent, prov = make(TWO, [OPEN_BOTH, call("skip_step", reason="not needed"),
                             call("skip_step", reason="no", skill="p2"), "done", "done"])
    r = agent.run("hi")
    assert [(p["skill"], p["step"]) for p in payloads(r, "step.skipped")] == [
        ("p1", 1), ("p2", 1)]
    skip = {t.name: t for t in prov.requests[1].tools}["skip_step"]
    assert skip.schema["properties"]["skill"]["enum"] == ["p1", "p2"]


def test_skip_step_naming_no_running_procedure_is_refused_without_echoing_it():
    """Its `skill` enum lists the running procedures, so another name is an invalid argument
    (semantics §7 stage 3, as for any tool: `tool.args_invalid`, the standard text)."""
    agent, prov = make(TWO, [OPEN_BOTH, call("skip_step", reason="x", skill="nope"), "done",
                             "done"])
    r = agent.run("hi")
    text = tool_texts(prov.requests[2])[-1]
    assert text.startswith("Invalid arguments for tool `skip_step` — the call was not executed.")
    assert '- skill: expected one of "p1", "p2"' in text
    assert "nope" not in text
    assert payloads(r, "step.skipped") == []
    assert [p["problems"] for p in payloads(r, "tool.args_invalid")] == [
        ['skill: expected one of "p1", "p2"']]


def test_skip_step_arguments_are_checked_against_its_schema_before_anything_moves():
    """A non-string reason is `tool.args_invalid` with the standard text and nothing moves; an
    extra field is tolerated, as by the original framework (its schemas enforce
    `additionalProperties` only when they say so), and the step is skipped."""
    spec_calls = [call("skip_step", reason=42), call("skip_step", reason="fine", note="extra"),
                  "done"]
    agent, prov = make(STEPS, spec_calls)
    r = agent.run("hi")
    problems = [p["problems"] for p in payloads(r, "tool.args_invalid")]
    assert problems == [["reason: expected string"]]
    assert [p["reason"] for p in payloads(r, "step.skipped")] == ["fine"]
    assert tool_texts(prov.requests[1])[-1].startswith("Invalid arguments for tool `skip_step`")


def test_read_skill_tolerates_an_extra_field():
    spec = 'agent g { skills = [sk] }\nskill sk { description = "S" body = "SK BODY" }'
    agent, prov = make(spec, [call("read_skill", id="sk", why="need it"), "done"])
    r = agent.run("hi")
    assert payloads(r, "tool.args_invalid") == [] and "SK BODY" in prov.requests[1].system


def test_skip_step_keeps_its_schema_with_one_procedure():
    agent, prov = make(STEPS, ["done", "done"])
    agent.run("hi")
    skip = {t.name: t for t in prov.requests[0].tools}["skip_step"]
    assert list(skip.schema["properties"]) == ["reason"]


# ---------------------------------------------------------------- F09: ask at `after` is a denial
HOST = """
agent g { tools = [t] policies = [hp] }
tool t { description = "t" impl = returns("r") }
policy hp { impl = python("interp_host:ask_after") }
"""


def test_an_ask_at_after_is_a_denial_with_the_law_text():
    agent, prov = make(HOST, [call("t"), "done"])
    r = agent.run("hi")
    (row,) = payloads(r, "policy.decided")
    assert row["moment"] == "after" and row["outcome"] == "deny"
    assert "no pause here to carry that ask: check the result?" in row["reason"]
    assert r.outcome == "answered"
    assert tool_texts(prov.requests[1]) == [row["reason"]]  # (the reason, verbatim)


# ---------------------------------------------------------------- F11: `after` on every execution
FAILS = """
agent g { tools = [t, big] policies = [p] }
tool t { description = "t" }
tool big { description = "big" max_result_chars = 3 impl = returns("0123456789") }
policy p {
  after t { deny when status == "failure" because "failures are hidden" }
  after big { deny when status == "invalid" because "too big is hidden" }
}
"""


def _boom():
    raise RuntimeError("internal detail")


def test_after_policies_run_when_the_tool_raised():
    agent, prov = make(FAILS, [call("t"), "done"], tools={"t": _boom})
    r = agent.run("hi")
    (row,) = payloads(r, "policy.decided")
    assert (row["moment"], row["outcome"]) == ("after", "deny")
    assert tool_texts(prov.requests[1]) == ["failures are hidden"]
    (ret,) = payloads(r, "tool.returned")
    assert ret["executed"] is True and ret["result"] == {"error": "internal detail"}


def test_after_policies_run_when_the_result_was_too_large():
    agent, prov = make(FAILS, [call("big"), "done"])
    r = agent.run("hi")
    (row,) = payloads(r, "policy.decided")
    assert (row["moment"], row["outcome"], row["tool"]) == ("after", "deny", "big")
    assert tool_texts(prov.requests[1]) == ["too big is hidden"]
    assert payloads(r, "tool.returned")[0]["executed"] is True


def test_an_allowing_after_chain_leaves_a_failure_as_it_was():
    spec = FAILS.replace('status == "failure"', 'status == "success"')
    agent, prov = make(spec, [call("t"), "done"], tools={"t": _boom})
    r = agent.run("hi")
    assert tool_texts(prov.requests[1]) == ["internal detail"]
    assert payloads(r, "tool.returned")[0]["status"] == "failure"


# ------------------------------------------------ F12: built-ins go through the policies too
def test_star_policies_see_the_built_ins():
    """semantics §7: every call goes through the pipeline, the `read_skill` gate included, so a
    `before *` block (any tool) decides a `read_skill` call: denied, nothing is loaded."""
    spec = """
    agent g { skills = [s] policies = [p] }
    skill s { description = "S." body = "S BODY" }
    policy p { before * { deny when true because "nothing runs" } }
    """
    agent, prov = make(spec, [call("read_skill", id="s"), "done"])
    r = agent.run("hi")
    (row,) = payloads(r, "policy.decided")
    assert (row["moment"], row["outcome"], row["tool"]) == ("before", "deny", "read_skill")
    assert payloads(r, "tool.returned")[0]["status"] == "denied"
    assert tool_texts(prov.requests[1]) == ["nothing runs"]
    assert "S BODY" not in prov.requests[1].system


def test_a_rule_about_arguments_lets_a_built_in_through_and_an_ask_on_one_is_a_denial():
    spec = """
    agent g { skills = [s] policies = [p, q] }
    skill s { description = "S." body = "S BODY" }
    policy p { before * { deny when args.amount > 500 because "too much" } }
    policy q { before read_skill { ask when args.id == "s" because "a person picks skills" } }
    """
    agent, prov = make(spec.replace("ask when", "allow when"), [call("read_skill", id="s"), "done"])
    r = agent.run("hi")  # (`args.amount` is null on a read_skill call: the rule does not hold)
    assert payloads(r, "tool.returned")[0]["status"] == "success"
    assert "S BODY" in prov.requests[1].system
    agent, prov = make(spec, [call("read_skill", id="s"), "done"])
    r = agent.run("hi")  # (a built-in cannot pause: §8, an ask no pause can carry is a denial)
    assert r.outcome == "answered"
    assert [row["outcome"] for row in payloads(r, "policy.decided")][-1] == "deny"
    assert payloads(r, "tool.returned")[0]["status"] == "denied"


# ------------------------------------- no `input`: the default schema (language §5.2, original)
def test_a_tool_without_input_takes_extra_arguments_and_an_empty_block_forbids_them():
    """The default is `{"type": "object", "properties": {}}`, as the original framework's
    `defineTool` default: extra arguments pass; `input {}` compiles with
    `additionalProperties: false` like every schema block."""
    spec = """
agent g { tools = [loose, strict] }
tool loose { description = "no input" impl = returns("ok") }
tool strict { description = "empty input" input {} impl = returns("ok") }
"""
    agent, prov = make(spec, [call("loose", extra=1), call("strict", extra=1), "done"])
    r = agent.run("hi")
    sent = {t.name: dict(t.schema) for t in prov.requests[0].tools}
    assert sent["loose"] == {"type": "object", "properties": {}}
    assert sent["strict"]["additionalProperties"] is False
    assert [(p["tool"], p["status"]) for p in payloads(r, "tool.returned")] == [
        ("loose", "success"), ("strict", "invalid")]


def test_after_policies_see_an_accepted_pick_not_a_refused_one():
    spec = """
    agent g { graph = m policies = [p] }
    skill a { description = "A." }
    skill b { description = "B." body = "B BODY" }
    skill c { description = "C." }
    graph m { entry a route a -> b }
    policy p { after read_skill { deny when result.id == "b" because "hidden" } }
    """
    agent, prov = make(spec, [call("read_skill", id="c"), call("read_skill", id="b"), "done"])
    r = agent.run("hi")
    rows = payloads(r, "policy.decided")
    assert [(row["moment"], row["outcome"]) for row in rows] == [("after", "deny")]  # (c: refused)
    assert tool_texts(prov.requests[2])[-1] == "hidden"
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["invalid", "denied"]


def test_after_links_see_the_arguments_a_before_link_rewrote_on_a_built_in():
    """semantics §8: each link sees the previous link's output, at `after` too (a built-in's
    call as any other's)."""
    import interp_host
    spec = """
    agent g { skills = [a1, b] policies = [see, pick] }
    skill a1 { description = "A." body = "A BODY" }
    skill b { description = "B." body = "B BODY" }
    policy see { impl = python("interp_host:see") }
    policy pick { impl = python("interp_host:pick_b") }
    """
    interp_host.SEEN.clear()
    agent, prov = make(spec, [call("read_skill", id="a1"), "done"])
    agent.run("hi")
    assert "B BODY" in prov.requests[1].system and "A BODY" not in prov.requests[1].system
    after = [seen for seen in interp_host.SEEN if seen["moment"] == "after"]
    assert [seen["args"] for seen in after] == [{"id": "b"}]


def test_an_absence_or_a_partial_coverage_advances_the_step():
    """semantics §5 and §7: an absence and a partial coverage are answers, not errors."""
    import afp_dsl
    spec = """
    agent g { graph = m }
    tool s1 { description = "first" }
    tool s2 { description = "second" impl = returns("r2") }
    skill p { description = "P" tools = [s1, s2] steps { s1 "a" s2 "b" } }
    graph m { entry p }
    """
    for body in (lambda: afp_dsl.absent("nothing"), lambda: afp_dsl.coverage([1], total=3)):
        agent, prov = make(spec, [call("s1"), "end"], tools={"s1": body})
        r = agent.run("hi")
        assert [p["step"] for p in payloads(r, "step.advanced")] == [1]
        assert tool_texts(prov.requests[1])[0].endswith("Now on step 2 of 2: b (tool: `s2`).")
