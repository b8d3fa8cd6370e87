"""Witness paths for the graph diagnostics: how the cursor gets from an entry to a skill.

Role:       checks layer; the "a path in" notes of AFP203 and AFP207 (language.md §7:
            reachability with a witness path). `reach.explain_reach` gives a whole path for
            `--explain-reach`; this gives short ones, for many diagnostics at once.
Invariants: linear overall: the depth and first hops of every node are memoized along the
            breadth-first tree (`GraphView.reach`), so a path is never walked twice, and a
            note shows at most `LIMIT` hops (the middle of a longer path left out, as `…`),
            each cut to `HOP_CHARS` characters.
"""
from __future__ import annotations

from typing import Any

from .graphview import EntryEdge, GraphView, NodeKey

LIMIT = 8  # hops shown in a note: the first 3, `…`, the last LIMIT - 4
_HEAD = 3


class WayIn:
    """Witness paths over one breadth-first tree of a graph view (`GraphView.reach`'s result:
    each reached node with the edge that first reached it)."""

    def __init__(self, v: GraphView, parent: dict) -> None:
        self.v = v
        self.parent = parent
        self._memo: dict[NodeKey, tuple[int, tuple]] = {}  # node → (hops, first hops)

    def depth(self, key: NodeKey) -> int | None:
        """How many hops the path to `key` has (the entry counts as one); None: not reached."""
        if key not in self.parent:
            return None
        return self._settle(key)[0]

    def hops(self, key: NodeKey, then: Any = None) -> list[Any] | None:
        """The path to `key`, entry first, then the hop `then` if given (a bare route out of
        `key`); past `LIMIT` hops in all, its first `_HEAD` hops, one `None`, and its last."""
        found = self.depth(key)
        if found is None:
            return None
        extra = [then] if then is not None else []
        tail: list[Any] = []
        k = key
        for _ in range(min(found, LIMIT)):
            e = self.parent[k]
            tail.append(e)
            if isinstance(e, EntryEdge):
                break
            k = e.src
        tail.reverse()
        if found + len(extra) <= LIMIT:
            return tail + extra
        last = LIMIT - _HEAD - 1 - len(extra)
        return list(self._memo[key][1]) + [None] + (tail[-last:] if last else []) + extra

    def _settle(self, key: NodeKey) -> tuple[int, tuple]:
        chain = []
        k = key
        while k not in self._memo:
            e = self.parent[k]
            chain.append((k, e))
            if isinstance(e, EntryEdge):
                break
            k = e.src
        if chain and isinstance(chain[-1][1], EntryEdge):
            depth, head = 0, ()
        else:  # (the walk met a node settled before: go on from its depth and first hops)
            depth, head = self._memo[k]
        for node, e in reversed(chain):
            depth += 1
            if len(head) < _HEAD:
                head = head + (e,)
            self._memo[node] = (depth, head)
        return self._memo[key]


def into_cycle(comp: list[NodeKey], ways: tuple[WayIn, ...]) -> list[Any] | None:
    """A witness path from an entry into the cycle `comp`: to its skill reached in the fewest
    hops (no other skill of the cycle is then on the path), by the first of `ways` (routes
    that can fire by themselves, then any) that reaches it."""
    for way in ways:
        depths = [(d, k) for k in comp for d in (way.depth(k),) if d is not None]
        if depths:
            return way.hops(min(depths, key=lambda x: x[0])[1])
    return None


HOP_CHARS = 200  # a hop longer than this (a long guard) is cut, ending in `…`


def text(v: GraphView, hops: list[Any]) -> str:
    """Hops in source syntax: `entry a → b on t → c (bare route: when the model picks it)`."""
    from .reach import hop_text  # (`reach` builds on `graph`, which builds on this module)
    shown = ("…" if e is None else hop_text(v, e) for e in hops)
    return " ".join(h if len(h) <= HOP_CHARS else h[:HOP_CHARS - 1] + "…" for h in shown)
