"""The cursor's part of the `why` walk: moves, the edges and evidence behind them, conflicts.

Role:       `CursorNodes`, mixed into `why_walk.Walker`: a `cursor.moved` with the edge that fired
            (or the pick, the entry, the stay), the edges weighed and refused, the batch's
            `route.conflict` and a pick the move superseded; a `route.evaluated` with each
            condition and the tool result it heard (semantics §4, §12).
Invariants: reads the trace only; every event goes through `Walker.node` (expanded once per tree).
"""
from __future__ import annotations

from typing import Callable

from .trace import Event
from .why import Index, Locator, WhyNode, cond_node, entry_node, items, payload
from .why_describe import describe


class CursorNodes:
    """The builders of `cursor.moved` and `route.evaluated` nodes."""

    ix: Index
    loc: Locator
    node: Callable[[Event], WhyNode]  # (the walker's: expands an event once per tree)

    def _moved(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = [cond_node(c) for c in items(p, "witness") if isinstance(c, dict)]
        if p.get("cause") == "continuity":
            kids.append(self._carried(e))
        kids += [self.node(c) for c in self.ix.parents(e)]
        fired = {c.id for c in self.ix.parents(e)}
        refused = [x for x in self.ix.events if x.kind == "route.evaluated" and x.seq < e.seq
                   and x.iteration == e.iteration and x.id not in fired
                   and not payload(x).get("fired")]
        if refused and p.get("cause") != "stay":
            kids.append(WhyNode("alternatives", "edges considered and refused",
                                children=tuple(self.node(r) for r in refused)))
        if items(p, "refused_entries"):
            what = ("no entry fired: every conditional entry was tried and refused"
                    if p.get("cause") == "none" else "entries tried first and refused")
            kids.append(WhyNode("alternatives", what,
                                children=tuple(entry_node(x, self.loc.span(x.get("source")))
                                               for x in items(p, "refused_entries"))))
        kids += [self.node(c) for c in self._conflicts(e)]
        if p.get("superseded_pick"):
            kids.append(self._superseded(e, p))
        data = {k: p.get(k) for k in ("from", "to", "cause", "edge")}
        return WhyNode("cursor", describe(e), e.id, at, data, tuple(kids))

    def _conflicts(self, e: Event) -> list[Event]:
        """The `route.conflict` of this move's decision: later results of the batch matched
        edges to other targets (semantics §4), recorded just before the move."""
        src = payload(e).get("from")
        return [x for x in self.ix.before(e.seq, "route.conflict", lambda q: q.get("from") == src)
                if x.iteration == e.iteration]

    def _superseded(self, e: Event, p: dict) -> WhyNode:
        """The model's pick this move beat, with the `read_skill` result that accepted it (in
        the iteration before the move): "why didn't my pick move the cursor?" is a lookup."""
        pick = p["superseded_pick"]
        ret = [x for x in self.ix.before(e.seq, "tool.returned", lambda q: q.get("tool") ==
                                         "read_skill" and isinstance(q.get("result"), dict)
                                         and q["result"].get("id") == pick)
               if x.iteration == e.iteration - 1][-1:]
        by = (f"the declared edge `{p['edge']}`" if p.get("edge") else
              f"the entry of `{p.get('to')}`" if p.get("cause") == "entry" else "this move")
        return WhyNode("note", f"a model pick of `{pick}` was superseded by {by}",
                       data={"superseded_pick": pick}, children=tuple(self.node(x) for x in ret))

    def _carried(self, e: Event) -> WhyNode:
        """Where a `continuity` cursor came from: the conversation's previous run ended there
        (semantics §4), which this run's trace does not hold."""
        started = next((x for x in self.ix.events if x.kind == "run.started"), None)
        conv = payload(started).get("conversation") if started is not None else None
        of = f" of conversation `{conv}`" if isinstance(conv, str) else ""
        return WhyNode("note", f"carried over: the previous run{of} ended with the cursor on "
                       f"`{payload(e).get('to')}` (`continuity = \"conversation\"`)",
                       data={"conversation": conv})

    def _route(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = [cond_node(c) for c in items(p, "conditions") if isinstance(c, dict)]
        ev = [x for x in self.ix.parents(e) if x.kind == "tool.returned"]
        kids += [self._evidence(x) for x in ev]
        data = {k: p.get(k) for k in ("edge", "from", "to", "fired", "reason", "tool", "call_id",
                                      "status")}
        return WhyNode("edge", describe(e), e.id, at, data, tuple(kids))

    def _evidence(self, x: Event) -> WhyNode:
        """The tool result an edge heard, with what it came from (the call, the reply that asked
        for it, back to the user message) the first time the tree meets it."""
        full = self.node(x)
        text = "evidence: " + describe(x) + (" (see above)" if full.kind == "ref" else "")
        return WhyNode("evidence", text, x.id, self.loc.span(x.source), None, full.children)
