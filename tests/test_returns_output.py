"""`impl = returns(VALUE)` is the tool's result on every call: a value its own `output` schema
refuses is AFP302 at the `returns`; a valid one, or no output schema, is fine."""
from __future__ import annotations

import pytest

import afp_dsl


@pytest.mark.parametrize("tool, words", [
    ('output { n: integer(min: 1) } impl = returns({ n: 0 })', "n: expected a number >= 1"),
    ('output { n: integer } impl = returns({ m: 1 })', "n: required but missing"),
    ('output = { type: "string" } impl = returns(3)', "result: expected string"),
    ('output { a: [string] } impl = returns({ a: ["x", 2] })', "a[1]: expected string"),
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


def test_the_report_never_quotes_the_returned_value() -> None:
    """A returned value may be a secret (semantics §9: no diagnostic holds one): the message says
    what was expected where, as the model is told of invalid arguments, never the value."""
    text = ('agent a { tools = [t] redact = [r] }\nredact r { keys = ["password"] }\n'
            'tool t { description = "d" output { password: integer }\n'
            '  impl = returns({ password: "hunter2hunter2" }) }\n')
    [d] = afp_dsl.check(text)
    assert d.code == "AFP302" and "password: expected integer" in d.message
    assert "hunter2" not in d.message + "".join(d.notes)
