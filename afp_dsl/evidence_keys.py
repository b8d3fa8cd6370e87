"""Evidence read from under a redacted key: its actual value is the rule's placeholder.

Role:       `hide(red, expr, conditions)` replaces the `actual` of each condition of `expr` whose
            value was read through a key a redact rule selects (`result.pin == "12"`, `args.card.cvv
            matches /…/`) by that rule's placeholder, before the evidence is recorded. A secret of
            4 characters or more would be scrubbed anyway (remembered); a shorter one would not,
            as it is recorded apart from its key (semantics §9: a rule selects every value under a
            matching key, whatever its length).
Invariants: conditions are matched to their comparison by source span; the names read are the
            path's segments (not its root); nothing changes when the redactor has no key rules.
"""
from __future__ import annotations

from typing import Any

import attrs

from . import ir
from .evaluate import Condition, actual_is_right

_NAMES: dict[int, tuple[Any, dict]] = {}


def hide(red: Any, expr: Any, conditions: tuple[Condition, ...]) -> tuple[Condition, ...]:
    """`conditions` with the actual values read from under redacted keys replaced."""
    if red is None or not red.has_key_rules or not conditions or expr is None:
        return conditions
    names = _read_names(expr)
    out = []
    for c in conditions:
        read = names.get(c.span)  # (a path that did not exist read nothing: `null` shows that)
        placeholder = red.key_placeholder(read) if read and c.actual is not None else None
        out.append(c if placeholder is None else attrs.evolve(c, actual=placeholder))
    return tuple(out)


def _read_names(expr: Any) -> dict:
    """Span of each comparison (or bare path) → the names of the path its actual value is read
    from. Cached by identity (the entry keeps `expr` alive); bounded."""
    hit = _NAMES.get(id(expr))
    if hit is None or hit[0] is not expr:
        if len(_NAMES) > 4096:
            _NAMES.clear()
        found: dict = {}
        _walk(expr, found)
        hit = _NAMES[id(expr)] = (expr, found)
    return hit[1]


def _walk(e: Any, found: dict) -> None:
    if isinstance(e, (ir.And, ir.Or)):
        for item in e.items:
            _walk(item, found)
    elif isinstance(e, ir.Not):
        _walk(e.item, found)
    elif isinstance(e, ir.Compare):
        side = e.right if actual_is_right(e) else e.left
        if isinstance(side, ir.Path):
            found[e.span] = tuple(s for s in side.segments if isinstance(s, str))
    elif isinstance(e, ir.Path):
        found[e.span] = tuple(s for s in e.segments if isinstance(s, str))
