"""Schema bounds that leave no value (`min: 5, max: 1`) are AFP301 at the constraint that
crosses them, in schema blocks and in raw JSON Schema maps; bounds that leave one value are not."""
from __future__ import annotations

import pytest

import afp_dsl


def _check(fields: str) -> list:
    return afp_dsl.check(_spec(fields))


def _spec(fields: str) -> str:
    return f'tool t {{ description = "d" input {{ {fields} }} }}\n'


@pytest.mark.parametrize("field, at", [
    ("n: integer(min: 5, max: 1)", "max: 1"),
    ("n: number(max: 1, min: 5)", "min: 5"),
    ("n: integer(exclusive_min: 1, exclusive_max: 2)", "exclusive_max: 2"),
    ("n: number(min: 2, exclusive_max: 2)", "exclusive_max: 2"),
    ("n: integer(min: 1.2, max: 1.8)", "max: 1.8"),
    ("s: string(min_length: 4, max_length: 2)", "max_length: 2"),
    ("a: [string](min_items: 3, max_items: 1)", "max_items: 1"),
])
def test_bounds_that_leave_no_value_are_reported_at_the_constraint(field: str, at: str) -> None:
    diags = _check(field)
    assert [d.code for d in diags] == ["AFP301"], diags
    assert diags[0].is_error and "no value can satisfy" in diags[0].message
    assert diags[0].message.startswith(f"`{at}`")
    text = _spec(field)
    assert text[diags[0].primary.span.start:diags[0].primary.span.end] == at.split(": ")[1]


@pytest.mark.parametrize("field", [
    "n: integer(min: 1, max: 1)", "n: number(exclusive_min: 1, exclusive_max: 2)",
    "n: integer(exclusive_min: 1, max: 2)", "s: string(min_length: 2, max_length: 2)",
    "a: [string](min_items: 0, max_items: 0)", "n: number(min: -1, exclusive_max: 0)",
])
def test_bounds_that_leave_a_value_are_fine(field: str) -> None:
    assert _check(field) == []


def test_raw_schema_bounds_that_leave_no_value_are_reported() -> None:
    diags = afp_dsl.check('tool t { description = "d" output = { type: "object", properties: {'
                          ' n: { type: "integer", exclusiveMinimum: 1, exclusiveMaximum: 2 },'
                          ' s: { type: "string", minLength: 1, maxLength: 1 } } } }\n')
    assert [d.code for d in diags] == ["AFP301"], diags
    assert "/properties/n" in diags[0].message and "exclusiveMaximum: 2" in diags[0].message
