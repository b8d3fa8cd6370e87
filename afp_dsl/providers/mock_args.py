"""Small schema-valid arguments for the mock provider's demo mode (semantics §11).

Role:       `demo_args(schema)` finds small arguments that pass a tool's input schema, or None
            when none is found (the demo then tries the next tool, or answers); `minimal_value`
            is the best-effort guess it starts from (it raises ValueError for a value too big
            to be a small argument). Split from `mock`.
Invariants: deterministic (the same schema, the same value); whatever `demo_args` returns passes
            the schema (checked with jsonschema, the validator the tool pipeline uses).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import jsonschema

from ..regex_quiet import quiet
from .mock_pattern import spell_pattern

_STRING_CANDIDATES = ("x", "", "AB-1", "a@example.com", "2024-01-01", "1", "a")
_FORMATS = {  # a valid example per `format` (tried first: a host tool may check the format)
    "email": "a@example.com", "idn-email": "a@example.com", "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z", "time": "00:00:00Z", "duration": "P1D",
    "uri": "https://example.com", "iri": "https://example.com",
    "uri-reference": "https://example.com", "iri-reference": "https://example.com",
    "uri-template": "https://example.com", "hostname": "example.com",
    "idn-hostname": "example.com", "ipv4": "127.0.0.1", "ipv6": "::1",
    "uuid": "00000000-0000-0000-0000-000000000000", "json-pointer": "/a",
    "relative-json-pointer": "0", "regex": "x"}
_SEQ = (list, tuple)  # (a frozen schema holds tuples)
_MAX_DEPTH = 20  # nesting followed through `$ref`, `anyOf`, items and properties
_BUDGET = 2000  # subschemas a search may visit (branches and `$ref`s can multiply them)
_CHECKS = jsonschema.Draft202012Validator.FORMAT_CHECKER


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
    root = schema if root is None else root
    return _Maker(root).value(schema, depth)


class _Maker:
    """Values for the subschemas of one document; `fits(s)` checks a value against a subschema
    with the document's `$ref`s resolvable and formats checked (False when it cannot tell)."""

    def __init__(self, root: Any):
        self.root = root
        self.budget = _BUDGET
        try:
            self._root = jsonschema.Draft202012Validator(
                root if isinstance(root, (Mapping, bool)) else {}, format_checker=_CHECKS)
        except Exception:  # noqa: BLE001 - an unusable document: every check says no
            self._root = None

    def fits(self, schema: Any) -> Any:
        try:
            valid = self._root.evolve(schema=schema).is_valid if self._root is not None else None
        except Exception:  # noqa: BLE001 - a subschema jsonschema cannot use
            valid = None

        def check(value: Any) -> bool:
            try:
                return valid is not None and valid(value)
            except Exception:  # noqa: BLE001 - a subschema jsonschema cannot use
                return False
        return check

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return None
        self.budget -= 1
        if self.budget < 0:  # (a schema whose branches multiply at each level: no demo call)
            raise ValueError("too large a schema for a demo argument")
        schema = self.flat(schema, depth)
        if "const" in schema:
            return schema["const"]
        fits = self.fits(schema) if any(k in schema for k in ("default", "enum", "if")) else None
        if fits is not None and "default" in schema and fits(schema["default"]):
            return schema["default"]
        if fits is not None and isinstance(schema.get("enum"), _SEQ) and schema["enum"]:
            return next((v for v in schema["enum"] if fits(v)), schema["enum"][0])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), _SEQ) and schema[key]:
                return self.branch(schema, key, depth)
        value = self.typed(schema, depth)
        if fits is not None and "if" in schema and not fits(value):  # (`then` or `else` must hold)
            for more in (schema.get("then"), schema.get("else")):
                if isinstance(more, Mapping):
                    other = self.typed(merged({k: v for k, v in schema.items()
                                               if k not in ("if", "then", "else")}, more), depth)
                    if fits(other):
                        return other
        return value

    def typed(self, schema: Mapping, depth: int) -> Any:
        kind = schema.get("type", "object" if _objectish(schema) else "string")
        if isinstance(kind, _SEQ):
            kind = next((k for k in kind if self.fits(schema)(self.typed(
                dict(schema, type=k), depth))), kind[0] if kind else "null")
        make = _MINIMAL.get(kind)
        return make(self, schema, depth + 1) if make else None

    def flat(self, schema: Mapping, depth: int) -> Mapping:
        """`schema` with its `$ref` and `allOf` folded into it (their keywords added)."""
        ref, parts = schema.get("$ref"), schema.get("allOf")
        if not isinstance(ref, str) and not isinstance(parts, _SEQ):
            return schema
        out = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        if isinstance(ref, str):
            target = _resolve(self.root, ref)
            if isinstance(target, Mapping) and depth < _MAX_DEPTH:
                out = merged(out, self.flat(target, depth + 1))
        for part in parts if isinstance(parts, _SEQ) else ():
            if isinstance(part, Mapping) and depth < _MAX_DEPTH:
                out = merged(out, self.flat(part, depth + 1))
        return out

    def branch(self, schema: Mapping, key: str, depth: int) -> Any:
        """A value of the first branch (with the keywords beside `anyOf`/`oneOf`) that the
        whole schema accepts (for `oneOf`: that no other branch does), else the first guess."""
        rest = {k: v for k, v in schema.items() if k != key}
        whole = self.fits(schema)
        guesses = [self.value(merged(rest, b) if isinstance(b, Mapping) else b, depth + 1)
                   for b in schema[key]]
        halves = [g + 0.5 for g in guesses if _num(g) is not None]  # (`number` but not `integer`)
        return next((g for g in guesses + halves if whole(g)), guesses[0])


def merged(a: Mapping, b: Mapping) -> dict:
    """`a` with `b`'s keywords added: `required` joined, shared `properties` both applied
    (`allOf`), the tighter of two bounds; otherwise `a`'s keyword wins."""
    out = dict(a)
    for k, v in b.items():
        if k not in out:
            out[k] = v
        elif k == "required" and isinstance(v, _SEQ) and isinstance(out[k], _SEQ):
            out[k] = list(dict.fromkeys([*out[k], *v]))
        elif k == "properties" and isinstance(v, Mapping) and isinstance(out[k], Mapping):
            props = dict(out[k])
            for name, sub in v.items():
                props[name] = {"allOf": [props[name], sub]} if name in props else sub
            out[k] = props
        elif k in _TIGHTER and _num(v) is not None and _num(out[k]) is not None:
            out[k] = _TIGHTER[k](out[k], v)
    return out


_TIGHTER = {k: max for k in ("minimum", "exclusiveMinimum", "minLength", "minItems",
                             "minProperties")}
_TIGHTER.update({k: min for k in ("maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                  "maxProperties")})


def _objectish(schema: Mapping) -> bool:
    return any(k in schema for k in ("properties", "required", "minProperties",
                                     "additionalProperties", "patternProperties"))


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


def _min_string(m: _Maker, s: Mapping, depth: int) -> str:
    n = int(s.get("minLength", 0) or 0)
    if n > _LONGEST:
        raise ValueError("too long for a demo argument")
    return next(_strings(m, s, n), "x" * max(n, 1))


def _strings(m: _Maker, s: Mapping, n: int) -> Any:
    """Strings `s` accepts, in order of preference (its format's example first)."""
    pattern = s.get("pattern")
    made = spell_pattern(pattern, n) if isinstance(pattern, str) else None
    fmt = s.get("format")
    example = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    fits, plain = m.fits(s), m.fits({k: v for k, v in s.items() if k != "format"})
    cands = ((example,) if example else ()) + _STRING_CANDIDATES + ("x" * max(n, 1),) + (
        (made,) if made is not None else ())
    yield from (c for c in cands if fits(c))
    yield from (c for c in cands if plain(c))  # (a format only some hosts check)


def _min_number(s: Mapping, integer: bool = False) -> Any:
    """The number nearest 0 from the lower bound (or 0) that the bounds allow: for an
    exclusive bound the next whole number, or the middle of a range too narrow for it; then
    up to a multiple of `multipleOf`."""
    lo, lo_x = _bound(s, "minimum", "exclusiveMinimum", max)
    hi, hi_x = _bound(s, "maximum", "exclusiveMaximum", min)
    if lo is None:
        v = 0 if hi is None or 0 < hi or (0 == hi and not hi_x) else (hi if not hi_x else hi - 1)
        if hi_x and not integer and hi is not None and v >= hi:  # (`hi - 1` lost to rounding)
            v = math.nextafter(hi, -math.inf)
    else:
        v = (math.floor(lo) + 1 if lo_x else math.ceil(lo)) if integer else (lo + 1 if lo_x else lo)
        if lo_x and not integer and v <= lo:  # (a bound so large that `+ 1` is lost to rounding)
            v = math.nextafter(lo, math.inf)
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


def _min_array(m: _Maker, s: Mapping, depth: int) -> list:
    n = int(s.get("minItems", 0) or 0)
    if n > _LONGEST:
        raise ValueError("too many items for a demo argument")
    prefix: Any = s.get("prefixItems") if isinstance(s.get("prefixItems"), _SEQ) else []
    out = [m.value(p, depth) for p in prefix[:n]]
    contains = s.get("contains")
    if isinstance(contains, Mapping) and not any(map(m.fits(contains), out)):
        k = max(1, int(_num(s.get("minContains", 1)) or 0)) if len(out) < n or not out else 0
        out += [m.value(contains, depth)] * k
    items = s.get("items", {})
    if len(out) < n:
        rest = n - len(out)
        out += (_distinct(m, items, rest, depth) if s.get("uniqueItems") is True
                else [m.value(items, depth)] * rest)
    return out


def _distinct(m: _Maker, items: Any, n: int, depth: int) -> list:
    """`n` different values `items` accepts (for `uniqueItems`), when a few are easy to find."""
    first = m.value(items, depth)
    if not isinstance(items, Mapping):
        return [first] * n
    items = m.flat(items, depth)
    fits, out, seen = m.fits(items), [first], {_key(first)}
    for v in _pool(m, items, first, n):
        if len(out) >= n:
            break
        if _key(v) not in seen and fits(v):
            out.append(v)
            seen.add(_key(v))
    return out + [first] * (n - len(out))


def _pool(m: _Maker, items: Mapping, first: Any, n: int) -> Any:
    """Candidates for `_distinct`: the enum, then values of the items' kind, then any kind."""
    yield from items.get("enum") or ()
    step = _num(items.get("multipleOf")) or 1
    if _num(first) is not None:
        for k in range(1, n + 1):
            yield from (first + step * k, first - step * k)
    least = int(_num(items.get("minLength")) or 0)
    if isinstance(first, str):
        yield from _strings(m, items, least)
    yield from (c * max(1, least) for c in "abcdefghijklmnopqrstuvwxyz")
    yield from (False, True)
    yield from ({"k": k} for k in range(n))
    yield from ([k] for k in range(n))
    yield from range(n)


def _key(v: Any) -> Any:
    """`v` as `uniqueItems` compares it: `1 == 1.0`, but `1 != true`."""
    if isinstance(v, bool) or v is None:
        return ("c", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    return ("j", json.dumps(v, sort_keys=True, default=str))


def _min_object(m: _Maker, s: Mapping, depth: int) -> dict:
    props = s.get("properties", {}) if isinstance(s.get("properties"), Mapping) else {}
    extra = s.get("additionalProperties", {})
    extra = extra if isinstance(extra, Mapping) else {}
    out = {k: m.value(props.get(k, extra), depth) for k in s.get("required", ()) or ()}
    deps: Any = s.get("dependentRequired")
    deps = deps if isinstance(deps, Mapping) else {}
    for k in list(out):
        for d in deps.get(k, ()) if isinstance(deps.get(k), _SEQ) else ():
            out.setdefault(d, m.value(props.get(d, extra), depth))
    want = int(_num(s.get("minProperties")) or 0)
    names: Any = s.get("propertyNames") if isinstance(s.get("propertyNames"), Mapping) else {}
    for k in [*props, *(_strings(m, names, 0) if want > len(out) else ()),
              *(f"k{i}" for i in range(want))]:
        if len(out) >= want:
            break
        if k not in out and isinstance(k, str) and (k in props or s.get("additionalProperties")
                                                     is not False):
            out[k] = m.value(props.get(k, extra), depth)
    return out


_MINIMAL = {
    "string": _min_string, "integer": lambda m, s, d: _min_number(s, integer=True),
    "number": lambda m, s, d: _min_number(s), "boolean": lambda m, s, d: False,
    "null": lambda m, s, d: None, "array": _min_array, "object": _min_object,
}
