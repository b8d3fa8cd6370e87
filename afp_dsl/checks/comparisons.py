"""Comparison checks of one expression site: literals a path can never equal, impossible comparisons.

Role:       split from `exprs` (which walks the sites and hands each comparison here): a
            comparison judged against its key's schema facts, and a route's `status` values.
Emits:      AFP305 type-mismatch (a comparison that can never be true), AFP306
            status-not-in-vocabulary.
Invariants: AFP305 is claimed exactly when `impossible.self_impossible` proves the comparison
            false under its key's schema facts (or a literal lies outside what the key's facts
            allow); a comparison only some of whose values are impossible is a warning.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, NamedTuple

from .. import ir
from ..codes import diag
from ..diagnostics import Diagnostic, Label, Severity
from ..evaluate import json_equal, render_expr
from ..suggest import closest
from . import sites as S
from .atoms import NO_VALUE, constant_value, self_compared
from .impossible import self_impossible
from .solver import Atom, accepts, compare_atom, key_of, key_text


def compare(site: S.Site, c: ir.Compare, facts) -> list[Diagnostic]:
    literal_diags = list(_literal_values(site, c, facts))
    if literal_diags:
        return literal_diags
    atom = compare_atom(c)
    conflict = self_impossible(atom, facts)
    if conflict is None:
        return literal_diags  # (empty)
    return [diag("AFP305", f"`{atom.text}` can never be true", c.span, "always false",
                 notes=(why_impossible(atom, conflict),))]


def why_impossible(atom: Atom, conflict: tuple[Atom, ...]) -> str:
    """One sentence: why an atom alone can never hold."""
    if atom.kind == "const":
        c = atom.expr
        if isinstance(c, ir.Compare) and self_compared(c):
            return f"it compares `{render_expr(c.left)}` with itself: `{c.op}` never holds then"
        if isinstance(c, ir.Compare) and c.op in ("<", "<=", ">", ">="):
            return f"`{c.op}` needs two numbers or two strings"
        if isinstance(c, ir.Compare) and c.op == "mentions":
            return "`mentions` needs at least one keyword, and every keyword must be a non-empty string"
        return "it compares two fixed values"
    known = [f.text for f in conflict if f is not atom and f.text]
    if known:
        return "; ".join(known)
    if atom.kind == "ord":
        return f"`{atom.op}` needs two numbers or two strings"
    return "the compared values have different types"


def _literal_values(site: S.Site, c: ir.Compare, facts) -> Iterator[Diagnostic]:
    """Literals outside a key's closed set of values (status vocabulary, schema enums)."""
    if c.op not in ("==", "!=", "in", "not in"):
        return
    key, right = key_of(c.left), c.right
    if key is None and c.op in ("==", "!="):  # `"x" == path` reads as `path == "x"`
        key, right = key_of(c.right), c.left
    if key is None:
        return
    lits = _values_compared(c.op, right)
    # every item of an `in` list counts: one that is no literal (a path) may still match
    items = len(right.items) if c.op == "in" and isinstance(right, ir.ListExpr) else len(lits)
    closed = [f for f in facts(key) if f.kind == "eq" and f.level == "schema"]
    if not closed and c.op == "in" and isinstance(right, ir.ListExpr):
        yield from _impossible_items(key, lits, items, facts)  # (each item, as for a closed set)
        return
    if not closed or not lits:
        return
    allowed = closed[0].values
    is_status = key in (("path", "status"), ("path", "last", "status"))
    if not is_status and c.op in ("!=", "not in"):
        return
    bad = [lit for lit in lits if not any(_same(lit.value, v) for v in allowed)]
    # an `in` list that can still hold (some item can be the value) is not provably false: its
    # dead items are a warning (an error only when provable, docs/checks.md)
    live = c.op == "in" and len(bad) < items
    for lit in bad:
        d = _outside(key, lit, allowed, closed[0], is_status)
        yield _as_warning(d) if live and d.code == "AFP305" else d


class _Value(NamedTuple):
    """A literal operand's value (a list of literals as a tuple: `constant_value`) and span."""

    value: Any
    span: Any


def _values_compared(op: str, right: Any) -> list[_Value]:
    """The literal values `==`/`!=` compares with (a list of literals is one value) or the
    literal items of an `in` list (a list item is one value), in order."""
    operands = right.items if op in ("in", "not in") and isinstance(right, ir.ListExpr) else (
        [right] if op in ("==", "!=") else [])
    found = [_Value(constant_value(o), o.span) for o in operands]
    return [v for v in found if v.value is not NO_VALUE]


def _impossible_items(key, lits: list, items: int, facts) -> Iterator[Diagnostic]:
    """Items of an `in` list (`lits`, the literal ones of its `items`) that the key's declared
    type or bounds rule out (`iteration in [1, "a"]`): each can never be the value; a warning
    while another item can be (the list as a whole can hold), an error when none can. One
    diagnostic for the comparison, naming every such item (one root cause: the key's type)."""
    known = [f for f in facts(key) if f.level == "schema" and f.kind in ("type", "ord")]
    found = []
    for lit in lits:
        against = next((f for f in known if accepts(f, lit.value) is False), None)
        if against is not None:
            found.append((lit, against))
    if not found:
        return
    shown = [f"`{json.dumps(lit.value, ensure_ascii=False)}`" for lit, _ in found]
    notes = tuple(dict.fromkeys(f.text for _, f in found if f.text))
    others = tuple(Label(lit.span, "nor this", False) for lit, _ in found[1:])
    d = diag("AFP305", f"`{key_text(key)}` can never be {_either(shown)}", found[0][0].span,
             "not a value it can have", secondary=others, notes=notes)
    yield _as_warning(d) if len(found) < items else d


def _as_warning(d: Diagnostic) -> Diagnostic:
    """A dead item of an `in` list whose other items can hold: the comparison is not provably
    false, so the item is named as a warning, with the note saying so."""
    return Diagnostic(d.code, Severity.WARNING, d.message, d.labels, d.notes + (
        "the other items of the list can still match, so the condition can hold",), d.help)


def _either(items: list[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _same(a: Any, b: Any) -> bool:
    return json_equal(a, b)


def _outside(key, lit: ir.Lit, allowed: tuple, fact: Atom, is_status: bool) -> Diagnostic:
    shown = json.dumps(lit.value, ensure_ascii=False)
    strings = [v for v in allowed if isinstance(v, str)]
    close = closest(lit.value, strings) if isinstance(lit.value, str) else None
    hint = f"did you mean `{json.dumps(close)}`?" if close else None
    if is_status:
        return diag("AFP306", f"`{shown}` is not a status", lit.span, "not in the status vocabulary",
                    notes=(f"statuses are {', '.join(S.STATUSES)}",), help=hint)
    return diag("AFP305", f"`{key_text(key)}` can never be `{shown}`", lit.span,
                "not one of the declared values", notes=(fact.text,), help=hint)


def route_statuses(r: ir.Route) -> Iterator[Diagnostic]:
    for s in r.status:
        if s.name not in S.STATUSES:
            close = closest(s.name, S.STATUSES)
            yield diag("AFP306", f"`{s.name}` is not a status", s.span,
                       "not in the status vocabulary",
                       notes=(f"statuses are {', '.join(S.STATUSES)}",),
                       help=f"did you mean `{close}`?" if close else None)
