"""Atoms: what each comparison of a condition says about one key, and the DNF of conditions.

Role:       the front half of the guard logic (`solver` is the back half): turns `ir` expressions
            into cases (conjunctions of `Atom`s) in disjunctive normal form.
Invariants: an atom never claims more than `evaluate` would decide (negations of ordered
            comparisons stay negations; anything unfamiliar becomes an opaque atom); the DNF is
            capped at `MAX_CASES` cases.
"""
from __future__ import annotations

import math
from functools import partial
from itertools import chain, product
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
    _SPLIT.clear()


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


def _bare_atom(e: Any, neg: bool) -> Atom:
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


# ---------------------------------------------------------------- DNF
def _nnf(e: Any, neg: bool, split_words: bool = True) -> Any:
    if isinstance(e, ir.Not):
        return _nnf(e.item, not neg, split_words)
    if isinstance(e, (ir.And, ir.Or)):
        conj = isinstance(e, ir.And) != neg
        return ("and" if conj else "or", [_nnf(i, neg, split_words) for i in e.items])
    if isinstance(e, ir.Compare):
        split = _keywords(e) if e.op == "mentions" and split_words else None
        if split is not None:  # (`mentions [a, b]` holds where `mentions a` or `mentions b` does)
            return ("and" if neg else "or", [compare_atom(c, neg) for c in split])
        return compare_atom(e, neg)
    return _bare_atom(e, neg)


_SPLIT: dict[int, tuple[ir.Compare, tuple[ir.Compare, ...]]] = {}


def _keywords(c: ir.Compare) -> tuple[ir.Compare, ...] | None:
    """`X mentions [k1, k2]` as one comparison per keyword (`X mentions "k1"`, ...), so that the
    same keyword written in two conditions is the same text condition (`complementary`): an
    entry `mentions ["charge"]` after one that `mentions ["refund", "charge"]` is covered. The
    keywords are lower-cased (`mentions` ignores case, so `"Refund"` is `"refund"`). None for a
    lower-case keyword written as a string, or a list holding anything but strings. Cached
    per node (as `compare_atom`), so each keyword's comparison is one node."""
    hit = _SPLIT.get(id(c))
    if hit is not None and hit[0] is c:
        return hit[1]
    right = c.right
    words = None
    if type(right) is ir.ListExpr and right.items and all(
            type(i) is ir.Lit and isinstance(i.value, str) and i.value for i in right.items):
        words = [i.value for i in right.items]
    elif type(right) is ir.Lit and isinstance(right.value, str) and right.value != right.value.lower():
        words = [right.value]
    split = None if words is None else tuple(  # (lower case: `mentions` ignores case)
        ir.Compare(op="mentions", left=c.left, right=ir.Lit(value=w.lower(), span=right.span),
                   span=c.span) for w in words)
    if len(_SPLIT) > 100_000:
        _SPLIT.clear()
    _SPLIT[id(c)] = (c, split)
    return split


def _size(node: Any) -> int:
    if isinstance(node, Atom):
        return 1
    sizes = [_size(c) for c in node[1]]
    if node[0] == "or":
        return min(sum(sizes), MAX_CASES + 1)
    total = 1
    for s in sizes:
        total = min(total * s, MAX_CASES + 1)
    return total


def _dnf(node: Any) -> list[tuple[Atom, ...]]:
    if isinstance(node, Atom):
        return [(node,)]
    parts = [_dnf(c) for c in node[1]]
    if node[0] == "or":
        return [case for p in parts for case in p]
    # each case chained once from its parts (growing tuples part by part copied i atoms at
    # step i: quadratic in the width of an `and`); `product` keeps the nested loops' order
    return [tuple(chain.from_iterable(combo)) for combo in product(*parts)]


def dnf(exprs: Iterable[Any]) -> list[tuple[Atom, ...]] | None:
    """The cases (conjunctions of atoms) of the conjunction of `exprs`; None past `MAX_CASES`."""
    if type(exprs) is list and len(exprs) == 1 and type(exprs[0]) is ir.Compare:
        return [(compare_atom(exprs[0]),)]  # Speed: a lone comparison (most guards), as below
    exprs = [e for e in exprs if e is not None]
    # Speed: splitting keyword lists multiplies atoms; past a few keywords in all (entries
    # covered by many earlier ones) the lists stay whole, as they were before splitting
    split = sum(_word_count(e) for e in exprs) <= MAX_SPLIT_WORDS
    items = [_nnf(e, False, split) for e in exprs]
    if len(items) == 1 and isinstance(items[0], Atom):  # Speed: a lone comparison (most guards)
        return [(items[0],)]
    node = ("and", items)
    if _size(node) > MAX_CASES:  # (keyword lists split into too many cases: kept whole)
        if not split:
            return None
        node = ("and", [_nnf(e, False, split_words=False) for e in exprs])
        if _size(node) > MAX_CASES:
            return None
    return _dnf(node)


MAX_SPLIT_WORDS = 24


def _word_count(e: Any) -> int:
    """The keywords of the `mentions` lists in `e` (what splitting them would make atoms of)."""
    if isinstance(e, ir.Compare):
        return len(e.right.items) if e.op == "mentions" and isinstance(e.right, ir.ListExpr) else 0
    if isinstance(e, (ir.And, ir.Or)):
        return sum(_word_count(i) for i in e.items)
    if isinstance(e, ir.Not):
        return _word_count(e.item)
    return 0


def complementary(atoms: tuple[Atom, ...]) -> bool:
    """A text condition beside its own negation (`message matches /x/` and `not message matches
    /x/`): exactly one holds on any value, so never both (candidates alone cannot show it)."""
    seen: dict[str, set] = {}
    for a in atoms:
        if a.kind == "text":
            negs = seen.setdefault(repr(a.expr), set())
            negs.add(a.neg)
            if len(negs) == 2:
                return True
    return False
