"""Bounds that leave no value: `minimum`/`maximum` (and their exclusive forms), `minLength`/
`maxLength`, `minItems`/`maxItems` that no value of a field can satisfy together.

Role:       shared by schema-block lowering (`lower_schema`, as each constraint is added) and the
            raw-schema check (`checks.schemas`, per sub-schema); pure functions of plain values.
Invariants: "empty" is claimed only when it is exact: bounds of one kind in one sub-schema,
            compared as numbers; an integer field's bounds are narrowed to whole numbers first.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# The bound keywords of one kind of value: (lower, exclusive lower, upper, exclusive upper).
GROUPS = (("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"),
          ("minLength", None, "maxLength", None), ("minItems", None, "maxItems", None))
KEYWORDS = frozenset(k for g in GROUPS for k in g if k is not None)
# each bound keyword: (its group, the other bound keywords of the group)
_OF = {k: (g, tuple(o for o in g if o is not None and o != k)) for g in GROUPS for k in g if k}


def crossed(keyword: str, raw: Any, schema: Mapping, integer: bool) -> str | None:
    """The bound keyword already in `schema` that `keyword: raw` leaves no value beside (crossed
    bounds such as `minimum: 5, maximum: 1`, equal ones with one exclusive, or no whole number
    between them when `integer`); None when some value remains, or `keyword` is no bound."""
    found = _OF.get(keyword)
    if found is None or schema.keys().isdisjoint(found[1]):
        return None  # Speed: the usual constraint, with no bound of its kind yet (two C calls)
    group, others = found
    bounds = {k: schema[k] for k in others if k in schema}
    bounds[keyword] = raw
    if not all(_number(v) for v in bounds.values()):
        return None  # (a value of the wrong kind is the metaschema's to report)
    integer = integer or group[0] != "minimum"
    lo, hi = _lower(bounds, group, integer), _upper(bounds, group, integer)
    if lo is None or hi is None or lo[0] < hi[0] or (lo[0] == hi[0] and not (lo[1] or hi[1])):
        return None
    return hi[2] if keyword in group[:2] else lo[2]


def empty(schema: Mapping) -> tuple[str, str] | None:
    """(lower, upper) bound keywords of `schema` that leave no value between them, or None."""
    if KEYWORDS.isdisjoint(schema):
        return None
    t = schema.get("type")
    for group in GROUPS:
        seen: dict[str, Any] = {}
        for k in group:
            if k is None or k not in schema:
                continue
            other = crossed(k, schema[k], seen, t == "integer")
            if other is not None:
                return other, k
            seen[k] = schema[k]
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _lower(bounds: dict, group: tuple, integer: bool) -> tuple | None:
    """(the tightest lower bound, whether it is exclusive, its keyword), None without one."""
    found = [(_up(bounds[k], excl, integer), excl and not integer, k)
             for k, excl in ((group[0], False), (group[1], True)) if k is not None and k in bounds]
    return max(found, key=lambda b: (b[0], b[1])) if found else None


def _upper(bounds: dict, group: tuple, integer: bool) -> tuple | None:
    found = [(_down(bounds[k], excl, integer), excl and not integer, k)
             for k, excl in ((group[2], False), (group[3], True)) if k is not None and k in bounds]
    return min(found, key=lambda b: (b[0], not b[1])) if found else None


def _up(v: float, exclusive: bool, integer: bool) -> float:
    """The least value allowed by the lower bound `v` (a whole number when `integer`)."""
    if not integer:
        return v
    return math.floor(v) + 1 if exclusive else math.ceil(v)


def _down(v: float, exclusive: bool, integer: bool) -> float:
    """The greatest value allowed by the upper bound `v` (a whole number when `integer`)."""
    if not integer:
        return v
    return math.ceil(v) - 1 if exclusive else math.floor(v)
