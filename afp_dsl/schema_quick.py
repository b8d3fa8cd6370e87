"""A quick "surely valid" for JSON values against the JSON Schema subset that schema blocks produce.

Role:       lets the checker skip importing jsonschema (slower to import than the rest of
            `afpc check` together) when a test's scripted arguments are valid, the usual case;
            anything else goes to jsonschema, which alone reports problems.
Invariants: `surely_valid(s, v)` is True only when jsonschema's Draft 2020-12 validator finds
            no error (property-tested against it); any keyword, type or value it does not fully
            understand makes it answer None ("ask jsonschema"), never False.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

_ANNOTATIONS = frozenset({"description", "default", "title", "examples", "format", "$comment"})
_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})
_KNOWN = _ANNOTATIONS | _NUMBERS | _COUNTS | {"type", "properties", "required", "additionalProperties",
                                               "items", "enum", "pattern"}


class _Unsure(Exception):
    """Something outside the subset: jsonschema decides."""


def surely_valid(schema: Any, value: Any) -> bool | None:
    """True when `value` is valid under `schema`; None when unsure or (possibly) invalid."""
    try:
        return True if _valid(schema, value) else None
    except (_Unsure, RecursionError, TypeError, ValueError, re.error):
        return None


def _valid(schema: Any, value: Any) -> bool:
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict) or not _KNOWN.issuperset(schema):
        raise _Unsure
    if "additionalProperties" in schema and not _closed(schema, value):
        return False
    return all(check(schema[key], value) for key, check in _CHECKS if key in schema)


def _is_type(name: Any, value: Any) -> bool:
    t = type(value)
    if name == "string":
        return t is str
    if name == "integer":
        return t is int or (t is float and math.isfinite(value) and value.is_integer())
    if name == "number":
        return t is int or t is float
    if name == "boolean":
        return t is bool
    if name == "null":
        return value is None
    if name == "object":
        return t is dict
    if name == "array":
        return t is list
    raise _Unsure


def _type(want: Any, value: Any) -> bool:
    return any(_is_type(n, value) for n in want) if isinstance(want, list) else _is_type(want, value)


def _enum(options: Any, value: Any) -> bool:
    """Scalars only, compared by JSON type and value (True is not 1; 1 is 1.0)."""
    if not isinstance(options, list) or not _scalar(value) or not all(_scalar(o) for o in options):
        raise _Unsure
    return any(_same(o, value) for o in options)


def _scalar(v: Any) -> bool:
    return v is None or type(v) in (str, bool, int, float)


def _same(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool or a is None or b is None:
        return a is b
    if type(a) is str or type(b) is str:
        return type(a) is type(b) and a == b
    return a == b


def _properties(props: Any, value: Any) -> bool:
    if type(value) is not dict:
        return True
    if not isinstance(props, dict):
        raise _Unsure
    return all(_valid(props[k], v) for k, v in value.items() if k in props)


def _required(names: Any, value: Any) -> bool:
    return type(value) is not dict or all(n in value for n in names)


def _closed(schema: dict, value: Any) -> bool:
    """`additionalProperties: false` (the only form schema blocks write)."""
    if schema["additionalProperties"] is not False:
        raise _Unsure
    props = schema.get("properties", {})
    return type(value) is not dict or all(k in props for k in value)


def _items(schema: Any, value: Any) -> bool:
    return type(value) is not list or all(_valid(schema, v) for v in value)


def _pattern(pattern: Any, value: Any) -> bool:
    return type(value) is not str or re.search(pattern, value) is not None


def _bound(op: str) -> Callable[[Any, Any], bool]:
    def check(bound: Any, value: Any) -> bool:
        if type(value) not in (int, float):
            return True
        if type(bound) not in (int, float):
            raise _Unsure
        return {"minimum": value >= bound, "maximum": value <= bound,
                "exclusiveMinimum": value > bound, "exclusiveMaximum": value < bound}[op]
    return check


def _count(op: str) -> Callable[[Any, Any], bool]:
    kind = str if op in ("minLength", "maxLength") else list

    def check(n: Any, value: Any) -> bool:
        if type(value) is not kind:
            return True
        if type(n) is not int:
            raise _Unsure
        return len(value) >= n if op.startswith("min") else len(value) <= n
    return check


_CHECKS = (("type", _type), ("enum", _enum), ("required", _required), ("properties", _properties),
           ("items", _items), ("pattern", _pattern),
           *((k, _bound(k)) for k in sorted(_NUMBERS)), *((k, _count(k)) for k in sorted(_COUNTS)))
