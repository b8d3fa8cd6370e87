"""Normal forms: a condition's cases, the disjunctive normal form of its atoms.

Role:       between `atoms` (one comparison → one `Atom`) and `solver`: pushes negations down
            (NNF), splits keyword lists of `mentions` into one comparison per keyword, and
            multiplies out `and` over `or` into cases (conjunctions of atoms).
Invariants: the DNF is capped at `MAX_CASES` cases (None past it); splitting a keyword list
            never changes what a condition holds on.
"""
from __future__ import annotations

from itertools import chain, product
from typing import Any, Iterable

from .. import ir
from .atoms import MAX_CASES, Atom, bare_atom, compare_atom

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
    return bare_atom(e, neg)


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


def clear_cache() -> None:
    _SPLIT.clear()
