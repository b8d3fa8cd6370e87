"""A quick "surely valid" for JSON values against the JSON Schema subset that schema blocks produce.

Role:       `checker(schema)` compiles a schema of that subset once into a function value → bool;
            the interpreter runs it on every tool call and the checker on test arguments, so that
            valid values (the usual case) need no jsonschema call, nor its import. Anything else
            goes to jsonschema, which alone decides and words problems.
Invariants: a checker returns True only when jsonschema's Draft 2020-12 validator finds no error
            (property-tested against it); `checker` returns None for any keyword, type or value
            outside the subset, and a checker answers False when unsure, never "invalid".
"""
from __future__ import annotations

import re
from typing import Any, Callable

from .regex_quiet import compile_quietly

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "default", "title", "examples", "format", "$comment"})
_BOUNDS = {"minimum": lambda v, b: v >= b, "maximum": lambda v, b: v <= b,
           "exclusiveMinimum": lambda v, b: v > b, "exclusiveMaximum": lambda v, b: v < b}
_COUNTS = {"minLength": (str, True), "maxLength": (str, False),
           "minItems": (list, True), "maxItems": (list, False)}
_KNOWN = _ANNOTATIONS | set(_BOUNDS) | set(_COUNTS) | {
    "type", "properties", "required", "additionalProperties", "items", "enum", "pattern"}
# JSON types as exact Python types (bool is not a number; tuples are not arrays here).
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "null": (type(None),), "object": (dict,),
                                       "array": (list,)}


class _Outside(Exception):
    """The schema uses something outside the subset."""


def surely_valid(schema: Any, value: Any) -> bool | None:
    """True when `value` is valid under `schema`; None when unsure or (possibly) invalid."""
    check = checker(schema)
    return True if check is not None and check(value) else None


def checker(schema: Any) -> Check | None:
    """The compiled check of a schema in the subset, or None."""
    try:
        return _compile(schema)
    except (_Outside, RecursionError, re.error, TypeError):
        return None


def _compile(schema: Any) -> Check:
    if schema is True or (_is_map(schema) and not schema):
        return lambda v: True
    if not _is_map(schema) or not _KNOWN.issuperset(schema.keys()):
        raise _Outside
    checks = [c for c in (_type(schema), _enum(schema), _object(schema), _items(schema),
                          _pattern(schema), *_bounds(schema), *_counts(schema)) if c is not None]
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _is_map(x: Any) -> bool:
    return hasattr(x, "keys") and hasattr(x, "get") and not isinstance(x, type)


def _type(schema: Any) -> Check | None:
    if "type" not in schema:
        return None
    want = schema["type"]
    names = [want] if isinstance(want, str) else list(want) if isinstance(want, (list, tuple)) else None
    if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        raise _Outside
    exact = tuple(t for n in names for t in _TYPES[n])
    whole_floats = "integer" in names and "number" not in names
    if whole_floats:  # 2.0 is an integer to JSON Schema
        return lambda v: type(v) in exact or (type(v) is float and v.is_integer())
    return lambda v: type(v) in exact


def _enum(schema: Any) -> Check | None:
    if "enum" not in schema:
        return None
    options = schema["enum"]
    if not isinstance(options, (list, tuple)) or not all(_scalar(o) for o in options):
        raise _Outside
    options = tuple(options)
    return lambda v: _scalar(v) and any(_same(o, v) for o in options)


def _scalar(v: Any) -> bool:
    return v is None or type(v) in (str, bool, int, float)


def _same(a: Any, b: Any) -> bool:
    """JSON equality of scalars: True is not 1, 1 is 1.0."""
    if type(a) is bool or type(b) is bool or a is None or b is None:
        return a is b
    if type(a) is str or type(b) is str:
        return type(a) is type(b) and a == b
    return a == b


def _object(schema: Any) -> Check | None:
    keys = ("properties", "required", "additionalProperties")
    if not any(k in schema for k in keys):
        return None
    props = schema.get("properties", {})
    required = schema.get("required", ())
    closed = schema.get("additionalProperties", True)
    if not _is_map(props) or (closed is not True and closed is not False) or not isinstance(
            required, (list, tuple)) or not all(isinstance(r, str) for r in required):
        raise _Outside
    required = tuple(required)
    fields = {name: _compile(sub) for name, sub in props.items()}

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return True
        for name in required:
            if name not in v:
                return False
        for name, item in v.items():
            field = fields.get(name)
            if field is None:
                if closed is False:
                    return False
            elif not field(item):
                return False
        return True
    return check


def _items(schema: Any) -> Check | None:
    if "items" not in schema:
        return None
    item = _compile(schema["items"])
    return lambda v: type(v) is not list or all(item(x) for x in v)


def _pattern(schema: Any) -> Check | None:
    if "pattern" not in schema:
        return None
    if not isinstance(schema["pattern"], str):
        raise _Outside
    search = compile_quietly(schema["pattern"]).search  # jsonschema uses re.search too
    return lambda v: type(v) is not str or search(v) is not None


def _bounds(schema: Any) -> list[Check]:
    out = []
    for key, holds in _BOUNDS.items():
        if key in schema:
            bound = schema[key]
            if type(bound) not in (int, float):
                raise _Outside
            out.append(lambda v, b=bound, h=holds: type(v) not in (int, float) or h(v, b))
    return out


def _counts(schema: Any) -> list[Check]:
    out = []
    for key, (kind, at_least) in _COUNTS.items():
        if key in schema:
            n = schema[key]
            if type(n) is not int or n < 0:
                raise _Outside
            if at_least:
                out.append(lambda v, n=n, k=kind: type(v) is not k or len(v) >= n)
            else:
                out.append(lambda v, n=n, k=kind: type(v) is not k or len(v) <= n)
    return out
