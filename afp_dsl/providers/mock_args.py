"""Small schema-valid arguments for the mock provider's demo mode (semantics §11).

Role:       `demo_args(schema)` finds small arguments that pass a tool's input schema, or None
            when none is found (the demo then tries the next tool, or answers); `minimal_value`
            is the best-effort guess it starts from (it raises ValueError for a value too big
            to be a small argument). Split from `mock`.
Invariants: deterministic (the same schema, the same value); whatever `demo_args` returns passes
            the schema (checked with jsonschema, the validator the tool pipeline uses).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jsonschema

from ..regex_quiet import parse_quietly, quiet

_STRING_CANDIDATES = ("x", "", "AB-1", "a@example.com", "2024-01-01", "1", "a")
_MAX_DEPTH = 20  # nesting followed through `$ref`, `anyOf`, items and properties


def demo_args(schema: Any) -> dict | None:
    """Arguments valid against `schema` (a tool's input schema), or None when none is found."""
    if not isinstance(schema, Mapping):
        return {}
    try:
        with quiet():  # (the validators compile the schema's patterns)
            validator = jsonschema.Draft202012Validator(schema)
            value = minimal_value(schema, schema)
            if not isinstance(value, dict):
                value = {}
            return value if validator.is_valid(value) else None
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot use: no demo call for it
        return None


def minimal_value(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """A small value valid against `schema` when one is easy to find (best effort); `root`
    is the document its local `$ref`s point into."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return None
    root = schema if root is None else root
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return minimal_value(_resolve(root, ref), root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _first_branch(schema[key], root, depth)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = kind[0] if kind else "null"
    make = _MINIMAL.get(kind)
    return make(schema, root, depth + 1) if make else None


def _first_branch(branches: list, root: Any, depth: int) -> Any:
    """The value of the first branch that its own branch accepts (else the first's guess)."""
    values = [minimal_value(b, root, depth + 1) for b in branches]
    for branch, value in zip(branches, values):
        try:
            if isinstance(branch, Mapping) and "$ref" not in branch and \
                    jsonschema.Draft202012Validator(branch).is_valid(value):
                return value
        except Exception:  # noqa: BLE001 - best effort: the caller validates the whole
            continue
    return values[0] if values else None


def _resolve(root: Any, ref: str) -> Any:
    """A local `#/a/b` reference in `root`, else None."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


_LONGEST = 4096  # a longer minimal string is no small demo argument: the tool is passed over


def _min_string(s: Mapping, root: Any, depth: int) -> str:
    n = int(s.get("minLength", 0) or 0)
    if n > _LONGEST:
        raise ValueError("too long for a demo argument")
    pattern = s.get("pattern")
    made = _from_pattern(pattern, n) if isinstance(pattern, str) else None
    try:  # (no `jsonschema.validate`: it checks the schema against the metaschema every time)
        fits = jsonschema.Draft202012Validator(s).is_valid
        for cand in _STRING_CANDIDATES + ("x" * max(n, 1),) + ((made,) if made is not None else ()):
            if fits(cand):
                return cand
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot use: the caller checks anyway
        pass
    return "x" * max(n, 1)


def _min_number(s: Mapping, root: Any = None, depth: int = 0, integer: bool = False) -> Any:
    """The number nearest 0 from the lower bound (or 0) that the bounds allow: for an
    exclusive bound the next whole number, or the middle of a range too narrow for it; then
    up to a multiple of `multipleOf`."""
    lo, lo_x = _bound(s, "minimum", "exclusiveMinimum", max)
    hi, hi_x = _bound(s, "maximum", "exclusiveMaximum", min)
    if lo is None:
        v = 0 if hi is None or 0 < hi or (0 == hi and not hi_x) else (hi if not hi_x else hi - 1)
    else:
        v = (math.floor(lo) + 1 if lo_x else math.ceil(lo)) if integer else (lo + 1 if lo_x else lo)
    if hi is not None and lo is not None and (v > hi or (hi_x and v >= hi)) and not integer:
        v = (lo + hi) / 2
    step = _num(s.get("multipleOf"))
    if step and step > 0 and v % step:
        v = math.ceil(v / step) * step
    return int(v) if integer else v


def _bound(s: Mapping, inclusive: str, exclusive: str, pick: Any) -> tuple[Any, bool]:
    """The tighter of a schema's inclusive and exclusive bound (`pick`: max for a lower bound,
    min for an upper), and whether it is exclusive (on a tie, the exclusive one is tighter)."""
    a, b = _num(s.get(inclusive)), _num(s.get(exclusive))
    if b is None:
        return a, False
    if a is None or pick(a, b) == b:
        return b, True
    return a, False


def _num(x: Any) -> Any:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _min_array(s: Mapping, root: Any, depth: int) -> list:
    n = int(s.get("minItems", 0) or 0)
    if n > _LONGEST:
        raise ValueError("too many items for a demo argument")
    return [minimal_value(s.get("items", {}), root, depth)] * n


def _min_object(s: Mapping, root: Any, depth: int) -> dict:
    props = s.get("properties", {}) or {}
    return {k: minimal_value(props.get(k, {}), root, depth) for k in s.get("required", ()) or ()}


_MINIMAL = {
    "string": _min_string, "integer": lambda s, r, d: _min_number(s, integer=True),
    "number": lambda s, r, d: _min_number(s), "boolean": lambda s, r, d: False,
    "null": lambda s, r, d: None, "array": _min_array, "object": _min_object,
}


# ---------------------------------------------------------------- strings from patterns
def _from_pattern(pattern: str, length: int = 0) -> str | None:
    """A short string the regex's plain parts spell (literals, classes, least repeats, first
    alternatives; the first repeat that may grow grows until `length` is reached), or None
    for a pattern it cannot spell. Reads the parse tree of Python's own `re` (private, but the
    one parser that reads `re` syntax exactly); any surprise there is None, and the caller
    validates what it gets anyway."""
    try:
        from re import _constants as c, _parser as p  # type: ignore[attr-defined]
        items = parse_quietly(p.parse, pattern)
        short = _spell(items, c, 0, [0])
        return short if len(short) >= length else _spell(items, c, 0, [length - len(short)])
    except Exception:  # noqa: BLE001 - an unreadable or unusual pattern: no guess
        return None


def _spell(items: Any, c: Any, depth: int, grow: list[int]) -> str:
    """`grow[0]`: how many more repeats the first repeats that may grow still add."""
    if depth > _MAX_DEPTH:
        raise ValueError("too deep")
    out = []
    for op, av in items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op is c.ANY:
            out.append("x")
        elif op is c.IN:
            out.append(_one_of(av, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            lo, hi = av[0], av[1]
            more = min(grow[0], hi - lo) if grow[0] > 0 and hi > lo else 0
            grow[0] -= more
            out.append(_spell(av[2], c, depth + 1, [0]) * (lo + more))
        elif op is c.SUBPATTERN:
            out.append(_spell(av[-1], c, depth + 1, grow))
        elif op is c.ATOMIC_GROUP:
            out.append(_spell(av, c, depth + 1, grow))
        elif op is c.BRANCH:
            out.append(_spell(av[1][0], c, depth + 1, grow))
        elif op is not c.AT:
            raise ValueError(f"cannot spell {op}")
    return "".join(out)


_CANDIDATES = "a0A_x- ."


def _one_of(items: Any, c: Any) -> str:
    """A character of a `[...]` class: the first of a few common ones it takes."""
    negate = bool(items) and items[0][0] is c.NEGATE
    parts = items[1:] if negate else items
    for ch in _CANDIDATES:
        if _in_class(ch, parts, c) != negate:
            return ch
    raise ValueError("no common character fits")


def _in_class(ch: str, parts: Any, c: Any) -> bool:
    code = ord(ch)
    tests = {c.CATEGORY_DIGIT: ch.isdigit(), c.CATEGORY_NOT_DIGIT: not ch.isdigit(),
             c.CATEGORY_WORD: ch.isalnum() or ch == "_",
             c.CATEGORY_NOT_WORD: not (ch.isalnum() or ch == "_"),
             c.CATEGORY_SPACE: ch.isspace(), c.CATEGORY_NOT_SPACE: not ch.isspace()}
    for op, av in parts:
        if (op is c.LITERAL and av == code) or (op is c.RANGE and av[0] <= code <= av[1]) or (
                op is c.CATEGORY and tests.get(av, False)):
            return True
    return False
