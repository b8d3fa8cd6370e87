"""The values the guard solver tries for one type: bounds, candidates and their JSON types.

Role:       pure helpers of `solver` (split from it): the (value, strict) bounds the `ord`
            conditions of one type leave, whether they are empty, and the few numbers or
            strings worth testing inside them (the conditions' own values and their neighbours,
            the samples of `matches`/`mentions` conditions).
Emits:      nothing.
Invariants: candidates only propose; `solver` decides by testing each against every condition,
            so a missing candidate can cost a witness ("unknown"), never a wrong claim.
"""
from __future__ import annotations

import math
from typing import Any

from .. import ir
from .atoms import Atom

_NEG_ORD = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "compound"


def bounds(t: str, atoms: tuple[Atom, ...]) -> tuple[tuple | None, tuple | None]:
    """(value, strict) lower and upper bounds for type `t` (None when unbounded)."""
    lo = hi = None
    for a in atoms:
        if a.kind != "ord" or type_of(a.bound) != t:
            continue
        op = _NEG_ORD[a.op] if a.neg else a.op
        b = (a.bound, op in ("<", ">"))
        if op in (">", ">="):
            lo = b if lo is None or (b[0], b[1]) > (lo[0], lo[1]) else lo
        else:
            hi = b if hi is None or (b[0], not b[1]) < (hi[0], not hi[1]) else hi
    return lo, hi


def empty(lo: tuple | None, hi: tuple | None) -> bool:
    if lo is None or hi is None:
        return False
    return lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or hi[1]))


def number_candidates(lo, hi, excluded: list, integer: bool) -> list:
    n = len(excluded) + 2
    if integer:
        start = math.floor(lo[0]) if lo is not None else (math.ceil(hi[0]) - n if hi is not None else 0)
        return [start + i for i in range(n + 2)]
    if lo is not None and hi is not None:
        span = hi[0] - lo[0]
        return [lo[0], hi[0]] + _round_inside(lo[0], hi[0]) + \
            [lo[0] + span * k / (n + 1) for k in range(1, n + 1)]
    base = lo[0] if lo is not None else (hi[0] if hi is not None else 0)
    step = 1 if lo is not None or hi is None else -1
    return [base] + [base + step * k for k in range(1, n + 1)]


def _round_inside(lo: float, hi: float) -> list:
    """Whole numbers strictly inside (lo, hi), near each end, then the midpoint: a witness
    reads `result.n = 6` rather than `6.666666666666667` where a round value fits."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo <= 0:
        return []
    out = [i for i in (math.floor(lo) + 1, math.ceil(hi) - 1) if lo < i < hi]
    return list(dict.fromkeys(out)) + [(lo + hi) / 2]


def string_candidates(lo, hi, atoms: tuple[Atom, ...]) -> list:
    cands: list[str] = ["", "a", "x", "zz", "~~~~"]
    for a in atoms:
        cands += [v for v in a.values if isinstance(v, str)]
        if a.kind == "ord" and isinstance(a.bound, str):
            cands += [a.bound, a.bound + "a", a.bound + "\x00", a.bound[:-1]]
        if a.kind == "text" and a.expr is not None:
            cands += text_samples(a.expr.right)
    return cands


def text_samples(right: Any) -> list[str]:
    if isinstance(right, ir.Lit) and isinstance(right.value, str):
        return [right.value]
    if isinstance(right, ir.ListExpr):
        return [i.value for i in right.items if isinstance(i, ir.Lit) and isinstance(i.value, str)]
    if isinstance(right, ir.Regex):
        plain = "".join(ch for ch in right.pattern if ch.isalnum() or ch in " -_")
        return [plain, right.pattern]
    return []
