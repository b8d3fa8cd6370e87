"""AFP308 untyped-comparison: an ordered comparison in a `check_in` (or a `before`/`after` rule)
reads an argument whose type the input schema leaves open; language §6 converts nothing, so
`"5000" > 1000` is false and the run does not pause."""
from __future__ import annotations

import pytest
from check_support import analyse
from interp_support import call, make

TOOL = 'agent a {{ tools = [pay] }}\ntool pay {{ description = "pay" {input} check_in = {cond} }}\n'


def _codes(input_: str, cond: str = "args.amount > 1000") -> list[str]:
    _, diags = analyse(TOOL.format(input=input_, cond=cond))
    return [d.code for d in diags]


@pytest.mark.parametrize("input_", [
    "", "input { amount: any }", "input { n: string, ... }",
    'input = { type: "object", properties: { amount: { description: "how much" } } }',
    'input = { type: "object", additionalProperties: { description: "x" } }'])
def test_an_argument_of_unknown_type_is_a_warning(input_):
    assert _codes(input_) == ["AFP308"]


@pytest.mark.parametrize("input_,cond", [
    ("input { amount: number }", "args.amount > 1000"),
    ("input { amount: string }", 'args.amount > "m"'),
    ('input = { type: "object", properties: { amount: { anyOf: [{ type: "number" }, '
     '{ type: "string" }] } } }', "args.amount > 1000"),
    ('input = { type: "object", additionalProperties: { type: "number" } }', "args.amount > 1"),
    ('input = { type: "object", patternProperties: { "^a": { type: "number" } } }',
     "args.amount > 1"),
    ("input { amount: any }", "args.amount == 1000"),  # (not ordered)
    ("input { amount: any }", "args.amount > args.amount"),  # (no literal: AFP305 says it)
    ("", "message matches /x/ and iteration > 3"),  # (not an argument)
])
def test_a_declared_type_or_another_comparison_is_not(input_, cond):
    assert "AFP308" not in _codes(input_, cond)


def test_an_unknown_field_is_reported_once_as_such():
    assert _codes("input { amont: number }") == ["AFP304"]


def test_the_warning_is_the_run_time_truth_a_string_does_not_pause():
    spec = TOOL.format(input="input { amount: any }", cond="args.amount > 1000")
    for amount, outcome in (("5000", "answered"), (5000, "paused")):
        agent, _ = make(spec, [call("pay", amount=amount), "done"], tools={"pay": lambda amount: "ok"})
        assert agent.run("pay").outcome == outcome
