"""Witnesses: the env a satisfiable guard is shown with, built from per-key witness values.

Role:       `solver` solves each key alone and asks `witness_env` for one env holding a value
            for every key; `read_key` reads a key back out of an env (routes and the solver's
            final `evaluate` check use it, with `unrun_in` first). Split from `solver` along the
            solve/build seam.
Invariants: a key is placed only where it fits beside the keys already placed (a path read into
            holds a mapping or list); no list is grown past `MAX_WITNESS_INDEX`; None when the
            values cannot all be placed (the solver then says "unknown", never "sat").
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import ir
from ..evaluate import Env, json_equal
from .atoms import Key, key_of
from .regex_risk import runnable, unrun_note


def read_key(env: Env, key: Key) -> Any:
    """The value a witness gives to `key`."""
    if key[0] == "call":
        return key[2] in (env.returned if key[1] == "returned" else env.active)
    v: Any = env.roots.get(key[1])
    for s in key[2:]:
        if isinstance(s, int):
            v = v[s] if isinstance(v, (list, tuple)) and 0 <= s < len(v) else None
        else:
            v = v.get(s) if isinstance(v, Mapping) else None
    return v


def witness_env(witnesses: dict[Key, tuple]) -> Env | None:
    """An env holding, at each key, the first of its witness values that fits beside the
    others (a key read into takes a mapping); None when they cannot all be placed."""
    b = Builder()
    child_seg = {k[:i]: k[i] for k in witnesses for i in range(2, len(k)) if k[0] == "path"}
    for key in sorted(witnesses, key=len):
        ws = witnesses[key]
        if key in child_seg:
            ws = tuple(w for w in ws if isinstance(w, Mapping)) or ws
            if ws and isinstance(ws[0], Mapping) and isinstance(child_seg[key], int):
                ws = ([],)
        if not ws or not b.put(key, ws[0]):
            return None
    return b.env()


MAX_WITNESS_INDEX = 1000


class Builder:
    """Builds roots (and call sets) holding given values at given keys."""

    def __init__(self):
        self.roots: dict[str, Any] = {}
        self.calls: dict[str, set] = {"returned": set(), "active": set()}

    def put(self, key: Key, value: Any) -> bool:
        if key[0] == "call":
            if value is True:
                self.calls.setdefault(key[1], set()).add(key[2])
            return isinstance(value, bool)
        if any(isinstance(seg, int) and seg > MAX_WITNESS_INDEX for seg in key[2:]):
            return False  # no witness is built for huge indexes (it would need a huge list)
        holder, slot = self.roots, key[1]
        for seg in key[2:]:
            cur = holder.get(slot) if isinstance(holder, dict) else _at(holder, slot)
            if cur is None:
                cur = [] if isinstance(seg, int) else {}
                _set(holder, slot, cur)
            if not isinstance(cur, (dict, list)) or isinstance(seg, int) != isinstance(cur, list):
                return False  # (a value read into, such as `result.kind.deep` beside `result.kind == "a"`)
            holder, slot = cur, seg
        existing = holder.get(slot) if isinstance(holder, dict) else _at(holder, slot)
        if existing is not None and not json_equal(existing, value):
            return isinstance(existing, (dict, list)) and isinstance(value, (dict, list)) and not value
        _set(holder, slot, value)
        return True

    def env(self) -> Env:
        return Env(roots=self.roots, returned=frozenset(self.calls["returned"]),
                   active=frozenset(self.calls["active"]))


def _at(holder: list, i: int) -> Any:
    return holder[i] if 0 <= i < len(holder) else None


def _set(holder: Any, slot: Any, value: Any) -> None:
    if isinstance(holder, dict):
        holder[slot] = value
        return
    while len(holder) <= slot:
        holder.append(None)
    holder[slot] = value


def unrun_in(e: Any, env: Env) -> str | None:
    """Why evaluating `e` in `env` would run a pattern the checker may not run (None: it may)."""
    if isinstance(e, (ir.And, ir.Or)):
        return next((n for n in (unrun_in(i, env) for i in e.items) if n is not None), None)
    if isinstance(e, ir.Not):
        return unrun_in(e.item, env)
    if not (isinstance(e, ir.Compare) and e.op == "matches" and isinstance(e.right, ir.Regex)):
        return None
    key = key_of(e.left)
    return text_unrun(e, e.left.value if isinstance(e.left, ir.Lit) else read_key(env, key) if key else None)


def text_unrun(c: ir.Compare, v: Any) -> str | None:
    """Why `c` (a text comparison) will not run its pattern on left value `v` (None: it will)."""
    rx = c.right
    if c.op != "matches" or not isinstance(v, str) or not isinstance(rx, ir.Regex):
        return None
    return None if runnable(rx.pattern, rx.flags, v) else unrun_note(rx.pattern, rx.flags, v)
