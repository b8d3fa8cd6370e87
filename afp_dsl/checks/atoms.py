"""Atoms: what each comparison of a condition says about one key.

Role:       the front half of the guard logic (`normal_form` puts conditions into cases of
            atoms, `solver` is the back half): turns one `ir` comparison (or bare operand) into
            an `Atom`.
Invariants: an atom never claims more than `evaluate` would decide (negations of ordered
            comparisons stay negations; anything unfamiliar becomes an opaque atom).
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Iterable

from .. import ir
from ..evaluate import Env, evaluate, render_expr
from .regex_risk import runnable, unrun_note

MAX_CASES = 64
TYPES = frozenset({"null", "boolean", "number", "string", "compound"})
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SWAPPABLE = frozenset({"==", "!=", *FLIP})
Key = tuple  # ("path", root, *segments) | ("call", func, name)


_FIELDS = ("kind", "key", "values", "op", "bound", "neg", "types", "integer", "truth", "keys",
           "text", "level", "note", "positive", "expr")


class Atom:
    """One condition on one key (or an opaque one over several), with where it came from.

    kind: eq (value in `values`), ne (value not in `values`), ord (`op bound`, or its negation
    when `neg`), type (value's type in `types`), text (matches/mentions, negated when `neg`),
    const (always `truth`), opaque (not analysed; `keys` it reads). `level` is "guard" for a
    condition written in the expression, "schema" for what a declaration says about a key,
    "edge" for what the place adds (a route's `on`/`status`, the current skill).
    `text` explains the atom; given as `render` instead (a function of nothing that returns it),
    it is made when first read: only a diagnostic reads it, and most conditions are fine.
    Equality and hashing see every field but `expr` and `render` (and `text` as rendered).
    Immutable by convention: nothing assigns to an atom once built.
    Speed: a plain slotted class, not attrs: a frozen attrs `__init__` sets its 16 fields one
    `object.__setattr__` at a time, about three times the cost, and every comparison of every
    condition builds atoms.
    """

    __slots__ = ("kind", "key", "values", "op", "bound", "neg", "types", "integer", "truth",
                 "keys", "_text", "level", "note", "positive", "expr", "render")

    def __init__(self, kind: str, key: Key = (), values: tuple = (), op: str = "",
                 bound: Any = None, neg: bool = False, types: frozenset = TYPES,
                 integer: bool = False, truth: bool = True, keys: tuple = (),
                 text: str | None = "", level: str = "guard", note: str = "",
                 positive: bool = False,  # a comparison written as is (not under `not`)
                 expr: Any = None, render: Callable[[], str] | None = None):
        self.kind = kind
        self.key = key
        self.values = values
        self.op = op
        self.bound = bound
        self.neg = neg
        self.types = types
        self.integer = integer
        self.truth = truth
        self.keys = keys
        self._text = text
        self.level = level
        self.note = note
        self.positive = positive
        self.expr = expr
        self.render = render

    @property
    def text(self) -> str:
        t = self._text
        if t is None:
            t = self._text = self.render()
        return t

    def _eq_fields(self) -> tuple:
        return (self.kind, self.key, self.values, self.op, self.bound, self.neg, self.types,
                self.integer, self.truth, self.keys, self.text, self.level, self.note, self.positive)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Atom:
            return NotImplemented
        return self._eq_fields() == other._eq_fields()

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._eq_fields())

    def __repr__(self) -> str:
        return "Atom(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS) + ")"


Facts = Callable[[Key], Iterable[Atom]]


def shape(a: Atom) -> tuple:
    """Everything the solver reads of an atom: atoms of one shape are solved alike. Values and
    bounds by `repr` (`true` is not `1`); a text condition by its expression's identity (its
    entry must keep the atom alive); `text`, `level` and `note` only explain."""
    return (a.kind, a.key, repr(a.values), a.op, repr(a.bound), a.neg, a.types, a.integer,
            a.truth, id(a.expr) if a.kind == "text" else None)


def no_facts(key: Key) -> tuple[Atom, ...]:
    return ()


# ---------------------------------------------------------------- atoms from expressions
def key_of(e: Any) -> Key | None:
    if isinstance(e, ir.Path):
        return ("path", e.root, *e.segments)
    if isinstance(e, ir.Call):
        return ("call", e.func, str(e.arg))
    return None


def key_text(key: Key) -> str:
    if key and key[0] == "call":
        return f"{key[1]}({key[2]})"
    return key[1] + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in key[2:])


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _lits(e: Any) -> tuple | None:
    """The values of a list of literals (scalars, or lists of them: `constant_value`), or None."""
    if not isinstance(e, ir.ListExpr):
        return None
    values = tuple(map(constant_value, e.items))
    return None if any(v is NO_VALUE for v in values) else values


NO_VALUE: Any = object()


def constant_value(e: Any) -> Any:
    """The value of a scalar literal, or of a list of them however nested (as a tuple, which
    `json_equal` reads as a list, so the atom holding it stays hashable); else `NO_VALUE` (a
    path, a call, a regex, a rejected operand)."""
    t = type(e)
    if t is ir.Lit:
        return e.value if _scalar(e.value) else NO_VALUE
    if t is ir.ListExpr:
        values = tuple(map(constant_value, e.items))
        return NO_VALUE if any(v is NO_VALUE for v in values) else values
    return NO_VALUE


def _constant(e: Any) -> bool:
    if isinstance(e, (ir.Lit, ir.Regex)):
        return True
    if isinstance(e, ir.ListExpr):
        return all(_constant(i) for i in e.items)
    return False


def _paths(e: Any) -> list[Key]:
    k = key_of(e)
    if k is not None:
        return [k]
    if isinstance(e, ir.ListExpr):
        return [k for i in e.items for k in _paths(i)]
    return []


_ATOMS: dict[tuple[int, bool], tuple[ir.Compare, Atom]] = {}


def compare_atom(c: ir.Compare, neg: bool = False) -> Atom:
    """The atom a comparison stands for (negated when `neg`). Cached per comparison node, since
    the expression checks and the guard solver both ask for every comparison; the entry keeps
    the node alive, so its id cannot be reused while cached."""
    hit = _ATOMS.get((id(c), neg))
    if hit is None or hit[0] is not c:
        if len(_ATOMS) > 100_000:
            _ATOMS.clear()
        hit = _ATOMS[(id(c), neg)] = (c, _compare_atom(c, neg))
    return hit[1]


def clear_cache() -> None:
    _ATOMS.clear()


def _compare_atom(c: ir.Compare, neg: bool) -> Atom:
    base = dict(expr=c, neg=neg, text=None, render=partial(_compare_text, c, neg), positive=not neg)
    # Speed: `path OP literal` (most comparisons) is neither always false (no list, no regex;
    # `mentions` aside) nor constant (a path), so it skips both tests
    if not (type(c.left) is ir.Path and type(c.right) is ir.Lit and c.op != "mentions"):
        if _has_invalid(c.left) or _has_invalid(c.right) or _holds_condition(c):
            return _opaque(c, neg, "an operand already reported")  # (AFP106, or AFP001)
        if _always_false(c):
            return Atom("const", truth=neg, **base)
        if _constant(c.left) and _constant(c.right):
            if not _runnable(c):
                return _opaque(c, neg, _unrun_note(c))
            return Atom("const", truth=evaluate(c, Env(roots={})).holds != neg, **base)
        if self_compared(c):
            return Atom("const", truth=neg, **base)
    key, right, op = key_of(c.left), c.right, c.op
    if key is None and op in _SWAPPABLE:  # `500 < result.x` reads as `result.x > 500`
        key, right, op = key_of(c.right), c.left, FLIP.get(op, op)
    if key is None:
        return _opaque(c, neg, "conditions on computed values")
    if op in ("==", "!="):
        value = constant_value(right)  # (a list of literals is one value: `x == [1]`)
        if value is not NO_VALUE:
            eq = (op == "==") != neg
            return Atom("eq" if eq else "ne", key, values=(value,), **base)
        return _opaque(c, neg, "comparisons between two paths or with lists holding paths")
    if op in ("in", "not in"):
        values = _lits(right)
        if values is None:
            return _opaque(c, neg, "`in` lists that hold paths")
        eq = (op == "in") != neg
        return Atom("eq" if eq else "ne", key, values=values, **base)
    if op in FLIP:
        if not isinstance(right, ir.Lit):
            return _opaque(c, neg, "comparisons between two paths")
        b = right.value
        if isinstance(b, bool) or not isinstance(b, (int, float, str)) or (
                isinstance(b, float) and math.isnan(b)):
            return Atom("const", truth=neg, **base)
        return Atom("ord", key, op=op, bound=b, **base)
    if op in ("matches", "mentions"):
        return Atom("text", key, **base)
    return _opaque(c, neg, f"the `{op}` operator")


# Roots whose value is never a NaN (plain strings and numbers the runtime makes): `x != x` is
# false on them; a path into a host tool's `result` might hold a NaN, for which it is true.
_NO_NAN_ROOTS = frozenset({"message", "text", "iteration", "tool", "status", "skill"})


def self_compared(c: ir.Compare) -> bool:
    """A path compared with itself by an operator that never holds then: `<` and `>` (on any
    value, NaN included), `!=` (on a root that never holds a NaN)."""
    left, right = c.left, c.right
    if type(left) is not ir.Path or type(right) is not ir.Path or c.op not in ("<", ">", "!="):
        return False
    if left.root != right.root or left.segments != right.segments:
        return False
    return c.op != "!=" or (left.root in _NO_NAN_ROOTS and not left.segments)


def _runnable(c: ir.Compare) -> bool:
    """A constant `"text" matches /rx/` is decided only when the checker may run the pattern."""
    rx, left = c.right, c.left
    if c.op != "matches" or not isinstance(rx, ir.Regex) or not isinstance(left, ir.Lit):
        return True
    return not isinstance(left.value, str) or runnable(rx.pattern, rx.flags, left.value)


def _unrun_note(c: ir.Compare) -> str:
    return unrun_note(c.right.pattern, c.right.flags, c.left.value)


def _compare_text(c: ir.Compare, neg: bool) -> str:
    text = render_expr(c)
    return f"not ({text})" if neg else text


def _always_false(c: ir.Compare) -> bool:
    """False whatever the paths hold, as `evaluate` decides: an ordered comparison with a list,
    or `mentions` without keywords or with one that is not a non-empty string (a regex operand
    is not a value at all: the expression checks report it)."""
    if _has_regex(c.left) or _has_regex(c.right):
        return False
    if c.op in FLIP:
        return isinstance(c.left, ir.ListExpr) or isinstance(c.right, ir.ListExpr)
    if c.op == "mentions":
        items = c.right.items if isinstance(c.right, ir.ListExpr) else (c.right,)
        return not items or any(_not_keyword(i) for i in items)
    return False


def _not_keyword(e: Any) -> bool:
    if isinstance(e, ir.Lit):
        return not (isinstance(e.value, str) and e.value)
    return isinstance(e, (ir.ListExpr, ir.Call))  # a list, a boolean (a path may hold a string)


def _has_regex(e: Any) -> bool:
    if isinstance(e, ir.ListExpr):
        return any(_has_regex(i) for i in e.items)
    return isinstance(e, ir.Regex)


def _has_invalid(e: Any) -> bool:
    if isinstance(e, ir.ListExpr):
        return any(_has_invalid(i) for i in e.items)
    return isinstance(e, ir.Invalid)


def _opaque(c: Any, neg: bool, note: str) -> Atom:
    return Atom("opaque", keys=tuple(_paths(c.left) + _paths(getattr(c, "right", None))),
                expr=c, neg=neg, text=None, render=partial(_compare_text, c, neg), note=note,
                positive=not neg)


_CONDITIONS = (ir.Compare, ir.And, ir.Or, ir.Not)


def _holds_condition(c: ir.Compare) -> bool:
    """A condition as an operand (`(x > 1) == true`, `mentions [x > 1]`): AFP001, judged no
    further."""
    for o in (c.left, c.right):
        if isinstance(o, _CONDITIONS) or (
                isinstance(o, ir.ListExpr) and any(isinstance(i, _CONDITIONS) for i in o.items)):
            return True
    return False


def bare_atom(e: Any, neg: bool) -> Atom:
    """A bare operand used as a condition: it holds only when its value is exactly `true`."""
    if isinstance(e, ir.Lit):
        return Atom("const", truth=(e.value is True) != neg, text=render_expr(e), expr=e)
    if isinstance(e, ir.ListExpr):  # a list is never exactly `true`
        return Atom("const", truth=neg, text=render_expr(e), expr=e)
    key = key_of(e)
    text = render_expr(e)
    if key is None:
        return Atom("opaque", text=text, note="an expression form the checker does not know",
                    expr=e, neg=neg)
    return Atom("ne" if neg else "eq", key, values=(True,), text=f"not {text}" if neg else text, expr=e)
