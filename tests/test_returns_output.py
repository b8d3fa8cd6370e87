"""`impl = returns(VALUE)` is the tool's result on every call: a value its own `output` schema
refuses is AFP302 at the `returns`; a valid one, or no output schema, is fine."""
from __future__ import annotations

import pytest

import afp_dsl


@pytest.mark.parametrize("tool, words", [
    ('output { n: integer(min: 1) } impl = returns({ n: 0 })', "0 is less than the minimum of 1"),
    ('output { n: integer } impl = returns({ m: 1 })', "'n' is a required property"),
    ('output = { type: "string" } impl = returns(3)', "3 is not of type 'string'"),
    ('output { a: [string] } impl = returns({ a: ["x", 2] })', "(at `/a/1`)"),
])
def test_a_returned_value_that_fails_the_output_schema_is_reported(tool: str, words: str) -> None:
    text = f'tool t {{ description = "d" {tool} }}\n'
    diags = afp_dsl.check(text)
    assert [d.code for d in diags] == ["AFP302"], diags
    d = diags[0]
    assert d.is_error and "returns does not satisfy its `output` schema" in d.message
    assert words in d.message
    assert text[d.primary.span.start:d.primary.span.end].startswith("returns(")


@pytest.mark.parametrize("tool", [
    'output { n: integer(min: 1) } impl = returns({ n: 1 })',
    'impl = returns({ anything: 1 })',
    'output = { type: "object" } impl = returns({ n: 0 })',
])
def test_a_returned_value_that_fits_is_fine(tool: str) -> None:
    assert afp_dsl.check(f'tool t {{ description = "d" {tool} }}\n') == []


def test_an_invalid_output_schema_is_reported_once() -> None:
    diags = afp_dsl.check('tool t { description = "d" output = { type: "nope" } impl = returns(1) }\n')
    assert [d.code for d in diags] == ["AFP301"], diags
