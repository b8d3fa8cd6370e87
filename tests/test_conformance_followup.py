"""Conformance, second pass: `afpc test` scripts, agent-backed check-ins, demo arguments, and
what the trace and its exports show (language §5; semantics §2, §3, §5, §11; tooling §5).

Each test pins a deviation a second audit found; each failed before its fix.
"""
from __future__ import annotations

import jsonschema
import pytest

import afp_dsl as afp
from afp_dsl import ir, otel, testing
from afp_dsl.cli_trace import overlay_mermaid
from afp_dsl.providers.mock_args import demo_args, minimal_value
from interp_support import call, make, payloads


def _run_tests(text: str) -> dict[str, object]:
    program = afp.load(text)
    tests = [d for d in program.ir.root_module.decls if isinstance(d, ir.Test)]
    return {t.name: testing.run_test(program, t) for t in tests}


# ---------------------------------------------------------------- language §5: test scripts
SCRIPTED = """
agent a { tools = [t] }
tool t { description = "d" input { x: string } impl = returns("ok") }
test runs_out {
  user "hi"
  model calls t { x: "1" }
  expect outcome error
}
"""


def test_a_script_that_runs_out_of_replies_fails_the_test_naming_the_call():
    (result,) = _run_tests(SCRIPTED).values()
    assert not result.passed
    assert any("no model reply for LLM call #2" in f for f in result.failures)


INNER = """
agent outer { tools = [ask_inner] }
agent inner { tools = [leaf] }
tool ask_inner { description = "inner" input { q: string } impl = agent(inner) }
tool leaf { description = "leaf" check_in = true impl = returns("leafval") }
test inner_decline {
  agent = outer
  user "go"
  model calls ask_inner { q: "x" }
  model calls leaf
  decline note "not now"
  model says "inner declined"
  model says "outer done"
  expect not called leaf
  expect called ask_inner 1
  expect outcome answered
}
"""


def test_declining_a_check_in_inside_an_agent_backed_tool_resumes_the_inner_run():
    (result,) = _run_tests(INNER).values()
    assert result.passed, result.failures


COUNTED = """
agent a { graph = g }
tool t2 { description = "x" impl = returns({ok: true}) }
skill s1 { description = "1" tools = [t2] }
skill s2 { description = "2" }
graph g { entry s1  route s1 -> s2 }
test count_read_skill {
  user "go"
  model calls read_skill { id: "s2" }
  model says "done"
  expect called read_skill 1
}
"""


def test_expect_called_counts_an_accepted_built_in_call():
    assert [d.code for d in afp.check(COUNTED) if d.is_error] == []
    (result,) = _run_tests(COUNTED).values()
    assert result.passed, result.failures


# ---------------------------------------------------------------- semantics §11: demo arguments
def test_demo_arguments_satisfy_numeric_bounds():
    for schema in [{"type": "number", "exclusiveMaximum": 0},
                   {"type": "integer", "exclusiveMinimum": 1.5},
                   {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
                   {"type": "integer", "minimum": 3, "maximum": 2000},
                   {"type": "number", "exclusiveMinimum": 2, "minimum": 2}]:
        value = minimal_value(schema)
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


@pytest.mark.parametrize("field", [
    'zip: string(pattern: "^[0-9]{5}$")',
    'code: string(pattern: "^[A-Z]+$", min_length: 3)',
    'ref: string(pattern: "^[a-z]{2}-\\\\d+$")',
    'rows: [{ sku: string(pattern: "^SKU-[0-9]{3}$") }](min_items: 1)',
])
def test_demo_arguments_pass_the_schema_of_a_declared_field(field):
    """§11: schema-valid minimal arguments (a pattern the candidates missed made the call invalid)."""
    spec = f'agent g {{ tools = [t] }}\ntool t {{ description = "t" input {{ {field} }} }}'
    r = afp.load(spec).agent(tools={"t": lambda **kw: "ran"}).run("go")
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["success"], payloads(r, "tool.args_invalid")


def test_demo_arguments_follow_refs_branches_and_multiples():
    schema = {"type": "object", "required": ["a", "b", "c"],
              "properties": {"a": {"$ref": "#/$defs/A"},
                             "b": {"anyOf": [{"type": "string", "pattern": "^q"}, {"type": "integer"}]},
                             "c": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 2}},
              "$defs": {"A": {"type": "integer", "multipleOf": 7, "minimum": 1}}}
    args = demo_args(schema)
    assert args is not None and jsonschema.Draft202012Validator(schema).is_valid(args), args


def test_demo_skips_a_tool_it_finds_no_valid_arguments_for():
    spec = ('agent g { tools = [t, u] }\n'
            'tool t { description = "t" input = { type: "object", required: ["a"], properties: '
            '{ a: { type: "string", pattern: "^(?=z)y" } } } }\n'
            'tool u { description = "u" input { n: integer } }')
    r = afp.load(spec).agent(tools={"t": lambda **kw: "T", "u": lambda **kw: "U"}).run("go")
    assert [p["tool"] for p in payloads(r, "tool.called")] == ["u"]
    assert payloads(r, "tool.args_invalid") == []


def test_demo_answers_after_a_steps_nudge_instead_of_calling_again():
    """§11 "if no tool has run yet": the nudge is the loop's message, not a new request."""
    spec = ('agent g { graph = m tools = [note] }\n'
            'tool note { description = "n" input { text: string } }\n'
            'tool one { description = "1" }\ntool two { description = "2" }\n'
            'skill proc { description = "p" tools = [one, two] steps { one "do one"  two "then two" } }\n'
            'graph m { entry proc }')
    r = afp.load(spec).agent(tools={"note": lambda text: "N", "one": lambda: "1",
                                    "two": lambda: "2"}).run("go")
    assert r.outcome == "answered"
    assert len(payloads(r, "tool.called")) == 1
    assert [p["action"] for p in payloads(r, "steps.unfinished")] == ["nudged", "accepted"]


def test_demo_wrap_up_quotes_the_person_s_message_not_the_budget_notice():
    """§11 "otherwise answer quoting": with no tool result, the demo quotes what the person
    asked, not the wrap-up message the loop wrote after the last call asked for a tool."""
    spec = ('agent g { tools = [t] max_iterations = 1 }\n'
            'tool t { description = "t" impl = returns("r") }')
    r = afp.load(spec).agent(provider=afp.providers.mock()).run("hello there")
    assert (r.outcome, r.answer) == ("max_iterations", "Got it — hello there")


# ---------------------------------------------------------------- semantics §2: skipped reasons
def test_a_when_that_fails_at_run_time_is_recorded_with_its_reason():
    spec = ('agent a { tools = [t] context = [f1] }\n'
            'tool t { description = "t" impl = returns({n: "str"}) }\n'
            'fact f1 { data = ["x"]  when = last.result.n > 3 }')
    agent, _ = make(spec, [call("t"), "done"])
    skipped = payloads(agent.run("hi"), "context.composed")[-1]["skipped"][0]["conditions"][0]
    assert "needs two numbers" in skipped["reason"]


# ---------------------------------------------------------------- semantics §3: the menu
def test_the_menu_lists_the_current_skill_as_refused_and_its_refusal_says_why():
    spec = ('agent a { graph = g }\nskill s1 { description = "one" }\n'
            'skill s2 { description = "two" }\ngraph g { entry s1  route s1 -> s2 }')
    agent, provider = make(spec, [call("read_skill", id="s1"), "done"])
    result = agent.run("hi")
    menu = next(t.description for t in provider.requests[0].tools if t.name == "read_skill")
    reach, refused = menu.split("Not reachable from here")
    assert "s1" not in reach and "  - s1: one" in refused
    (read,) = [p for p in payloads(result, "tool.returned") if p["tool"] == "read_skill"]
    assert read["status"] == "invalid" and "is the current skill already" in str(read.get("read", read["result"]))


# ---------------------------------------------------------------- semantics §5: step banner
def test_a_step_tool_that_is_also_a_baseline_tool_carries_its_banner():
    spec = ('agent a { tools = [t1] graph = g }\n'
            'tool t1 { description = "T1" impl = returns(1) }\n'
            'tool t2 { description = "T2" impl = returns(2) }\n'
            'skill s { description = "s" tools = [t1, t2] steps { t2 "first"  t1 "then" } }\n'
            'graph g { entry s }')
    agent, _ = make(spec, [call("t2"), call("t1"), "done"])
    second = payloads(agent.run("hi"), "context.composed")[1]["tools"]
    assert {"name": "t1", "origin": "step", "skill": "s"} in second


# ---------------------------------------------------------------- tooling §5: exports
TWO = """
agent a { system = "A" graph = ga }
agent b { system = "B" graph = gb }
tool t { description = "t" impl = returns({ n: 1 }) }
skill s1 { description = "s1 d" tools = [t] }
skill s2 { description = "s2 d" }
graph ga { entry s1 }
graph gb { entry s1  route s1 -> s2 on t }
"""


def test_the_report_draws_the_graph_of_the_agent_that_ran():
    program = afp.load(TWO)
    agent = program.agent("b", provider=afp.providers.mock([[("t", {})], "done"]))
    drawn = overlay_mermaid(program, list(agent.run("hi").trace))
    assert drawn is not None and "n_s2" in drawn


def test_a_failed_model_call_keeps_its_chat_span_after_a_retry():
    spec = 'agent a { tools = [t] }\ntool t { description = "t" impl = returns({ n: 1 }) }'
    agent, _ = make(spec, [call("t"), "ok"], fail_at=2)
    retried = agent.resume(agent.run("hi").checkpoint)
    chats = [(dict(s.attributes)["afp.llm.call"], s.status.status_code.name)
             for s in otel.spans(retried.trace) if s.name.startswith("chat")]
    assert chats == [(1, "UNSET"), (2, "ERROR"), (3, "UNSET")]
