"""tooling.md §3, "did you mean" for every unknown name: a field of data checked against a schema
(a test's scripted arguments, AFP405; the value of `returns(...)` or a default, AFP302) that the
schema does not declare, close to a declared field the data lacks, is named with that field."""
from __future__ import annotations

import pytest

import afp_dsl

TOOL = 'tool t {{ description = "t" input {{ order_id: string, opts?: {{ depth?: integer }} }} {more} }}\n'
AGENT = 'agent a { tools = [t] }\n'


def _one(text: str, code: str):
    [d] = [d for d in afp_dsl.check(text) if d.code == code]
    return d


@pytest.mark.parametrize("args, help", [
    ('{ ordr_id: "x" }', "did you mean `order_id` instead of `ordr_id`?"),
    ('{ order_id: "x", opts: { dpeth: 2 } }', "did you mean `opts.depth` instead of `opts.dpeth`?"),
])
def test_scripted_arguments_with_a_misspelt_field_suggest_the_declared_one(args: str, help: str):
    text = TOOL.format(more="") + AGENT + f'test x {{ user "hi" model calls t {args} model says "ok" }}\n'
    d = _one(text, "AFP405")
    assert d.help == help
    assert any("not an allowed field" in n for n in d.notes)  # (the notes stay as the model reads them)


def test_scripted_arguments_far_from_every_field_keep_the_plain_help():
    text = TOOL.format(more="") + AGENT + 'test x { user "hi" model calls t { zzz: 1 } model says "ok" }\n'
    assert _one(text, "AFP405").help == "fix the arguments, unless the test means to send invalid ones"


def test_a_returned_value_with_a_misspelt_field_suggests_the_declared_one():
    more = 'output { status: "found" | "missing" } impl = returns({ stauts: "found" })'
    d = _one(TOOL.format(more=more), "AFP302")
    assert "status: required but missing" in d.message
    assert d.help == "did you mean `status` instead of `stauts`?"


@pytest.mark.parametrize("schema", [
    'input { opts?: { mode: "a" | "b" } = { mdoe: "a" } }',
    'output = { type: "object", properties: { opts: { type: "object", properties: { mode: '
    '{ type: "string" } }, additionalProperties: false, default: { mdoe: "a" } } } }',
])
def test_a_default_with_a_misspelt_field_suggests_the_declared_one(schema: str):
    d = _one(f'tool t {{ description = "t" {schema} }}\n', "AFP302")
    assert d.help == "did you mean `mode` instead of `mdoe`?"
