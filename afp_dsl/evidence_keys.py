"""Evidence read from under a redacted key: its actual value is the rule's placeholder.

Role:       `hide(red, expr, conditions)` replaces the `actual` of each condition of `expr` whose
            value was read through a key a redact rule selects (`result.pin == "12"`, `args.card.cvv
            matches /…/`) by that rule's placeholder, before the evidence is recorded. A secret of
            4 characters or more would be scrubbed anyway (remembered); a shorter one would not,
            as it is recorded apart from its key (semantics §9: a rule selects every value under a
            matching key, whatever its length). The value an equality, a membership or a match
            compares it with is the placeholder in the condition's text too (it tells as much).
Invariants: conditions are matched to their comparison by source span; the names read are the
            path's segments (not its root); nothing changes when the redactor has no key rules.
"""
from __future__ import annotations

from typing import Any

import attrs

from . import ir
from .evaluate import Condition, actual_is_right, condition_text

_NAMES: dict[int, tuple[Any, dict]] = {}
# comparisons whose outcome with a literal tells the value (`== "12"` held; an order does not)
TELLING = frozenset({"==", "!=", "in", "not in", "matches", "mentions"})


def hide(red: Any, expr: Any, conditions: tuple[Condition, ...]) -> tuple[Condition, ...]:
    """`conditions` with the actual values read from under redacted keys replaced."""
    if red is None or not red.has_key_rules or not conditions or expr is None:
        return conditions
    names = _read_names(expr)
    out = []
    for c in conditions:
        read, compare = names.get(c.span, ((), None))  # (a path that did not exist read
        placeholder = red.key_placeholder(read) if read and c.actual is not None else None  # null)
        if placeholder is None:
            out.append(c)
        else:
            text = c.text if compare is None else _hidden_text(compare, c.text, placeholder)
            out.append(attrs.evolve(c, actual=placeholder, text=text))
    return tuple(out)


def _hidden_text(compare: ir.Compare, text: str, placeholder: str) -> str:
    """The condition's text with the value it compares the secret with as the placeholder:
    `result.pin == "12"` that held tells the pin as well as its actual value would."""
    lit = ir.Lit(value=placeholder)
    hidden = (attrs.evolve(compare, left=lit) if actual_is_right(compare)
              else attrs.evolve(compare, right=lit))
    return condition_text(hidden, text != condition_text(compare))


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
        right = actual_is_right(e)
        side, other = (e.right, e.left) if right else (e.left, e.right)
        if isinstance(side, ir.Path):
            tells = e.op in TELLING and literal(other)
            found[e.span] = (tuple(s for s in side.segments if isinstance(s, str)),
                             e if tells else None)
    elif isinstance(e, ir.Path):
        found[e.span] = (tuple(s for s in e.segments if isinstance(s, str)), None)


def literal(e: Any) -> bool:
    """A literal, a regex, or a list of literals: a value of the spec, not of the run."""
    return isinstance(e, (ir.Lit, ir.Regex)) or (
        isinstance(e, ir.ListExpr) and all(literal(i) for i in e.items))


def hide_guard(red: Any, e: Any) -> Any:
    """The guard `e` with the value each telling comparison (`TELLING`) compares a path read
    through a redacted key with replaced by the rule's placeholder (a diagram's caption)."""
    if isinstance(e, (ir.And, ir.Or)):
        return attrs.evolve(e, items=tuple(hide_guard(red, i) for i in e.items))
    if isinstance(e, ir.Not):
        return attrs.evolve(e, item=hide_guard(red, e.item))
    if isinstance(e, ir.Compare) and e.op in TELLING:
        right = actual_is_right(e)
        path, other = (e.right, e.left) if right else (e.left, e.right)
        if isinstance(path, ir.Path) and literal(other):
            placeholder = red.key_placeholder(s for s in path.segments if isinstance(s, str))
            if placeholder is not None:
                lit = ir.Lit(value=placeholder)
                return attrs.evolve(e, left=lit) if right else attrs.evolve(e, right=lit)
    return e
