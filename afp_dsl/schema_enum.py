"""The literals of a union (`"x" | "y"`, an `enum`) that a field's constraints leave allowed.

Role:       used by schema-block lowering (`lower_schema`) as each constraint is added to a
            literal union: a constraint that no literal satisfies leaves no value (AFP301, like
            `min` above `max`).
Invariants: pure; a constraint is judged as JSON Schema 2020-12 applies it: a string constraint
            passes every literal that is not a string, a number bound every one that is not a
            number; `format` is an annotation and passes all; a literal is dropped only when it is
            sure to fail (a pattern that cannot be run drops nothing).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_STRING = frozenset(("minLength", "maxLength", "pattern"))
_NUMBER = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
_KEYWORDS = _STRING | _NUMBER


def _passes(value: Any, keyword: str, raw: Any) -> bool:
    """Does `value` satisfy `keyword: raw`? (True when the keyword does not apply to it.)"""
    if keyword in _STRING:
        if not isinstance(value, str):
            return True
        if keyword == "pattern":
            try:
                return re.search(raw, value) is not None
            except (re.error, TypeError, RecursionError):
                return True
        return len(value) >= raw if keyword == "minLength" else len(value) <= raw
    if keyword not in _NUMBER or isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if keyword == "minimum":
        return value >= raw
    if keyword == "maximum":
        return value <= raw
    return value > raw if keyword == "exclusiveMinimum" else value < raw


def enum_left(schema: Mapping, keyword: str, raw: Any) -> tuple:
    """The literals of `schema`'s `enum` that its constraints and `keyword: raw` all allow (every
    literal when `keyword` is no constraint judged here, or there is no `enum`)."""
    values = schema.get("enum")
    if not isinstance(values, (list, tuple)):
        return ()
    if keyword not in _KEYWORDS:
        return tuple(values)
    given = [(k, schema[k]) for k in _KEYWORDS if k in schema] + [(keyword, raw)]
    return tuple(v for v in values if all(_passes(v, k, r) for k, r in given))
