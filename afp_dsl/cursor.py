"""The graph cursor: cold start, declared routes, model picks, stay (semantics §4).

Role:       pure decisions over the plan's graph and the previous batch's tool results; the loop
            records them (`route.evaluated`, `route.conflict`, `cursor.moved`).
Invariants: precedence route > model-pick > stay; results in call order, edges in declaration
            order, bare edges never fire by themselves; every considered edge has evidence.
"""
from __future__ import annotations

from typing import Any, Sequence

import attrs

from .evaluate import Condition, Env, evaluate
from .plan import EntryInfo, GraphInfo, RouteInfo
from .state import ToolResult


@attrs.frozen
class EdgeEvidence:
    route: RouteInfo
    call_id: str
    tool: str
    status: str
    result_event: str
    fired: bool
    conditions: tuple[Condition, ...] = ()
    reason: str | None = None


@attrs.frozen
class Loser:
    call_id: str
    tool: str
    dst: str
    route: RouteInfo


@attrs.frozen
class CursorDecision:
    src: str | None
    to: str | None
    cause: str  # entry | route | model-pick | stay | none | continuity
    edge: RouteInfo | None = None
    entry: EntryInfo | None = None
    witness: tuple[Condition, ...] = ()
    evidence: tuple[EdgeEvidence, ...] = ()
    losers: tuple[Loser, ...] = ()
    fired_by: ToolResult | None = None
    superseded: str | None = None
    refused: tuple[tuple[EntryInfo, tuple[Condition, ...], str | None], ...] = ()  # cold start


def reachable(graph: GraphInfo, cursor: str | None) -> tuple[str, ...]:
    """Successors over any edge plus the entries, minus the cursor; at cold start, the entries."""
    entries = [e.skill for e in graph.entries]
    if cursor is None:
        return tuple(dict.fromkeys(entries))
    succ = [r.dst for r in graph.routes if r.src == cursor]
    return tuple(n for n in dict.fromkeys(succ + entries) if n != cursor)


def cold_start(graph: GraphInfo, message: str, iteration: int) -> CursorDecision:
    """Walk entries in order: the first unconditional one, or the first whose `when` holds."""
    env = Env({"message": message, "iteration": iteration})
    refused: list = []  # the entries tried before (with their evidence: "why didn't it start?")
    for entry in graph.entries:
        if entry.when is None:
            return CursorDecision(None, entry.skill, "entry", entry=entry, refused=tuple(refused))
        ev = evaluate(entry.when, env, clip=False, absent=True)
        if ev.holds:
            return CursorDecision(None, entry.skill, "entry", entry=entry, witness=ev.conditions,
                                  refused=tuple(refused))
        refused.append((entry, ev.conditions, ev.error))
    return CursorDecision(None, None, "none", refused=tuple(refused))


def _check(route: RouteInfo, res: ToolResult, roots: dict) -> EdgeEvidence:
    """The edge's verdict on one result, with its evidence: an edge that does not hear the
    result's tool is refused too ("why didn't my edge fire?" must be a lookup, semantics §4)."""
    base = dict(call_id=res.call_id, tool=res.tool, status=res.status, result_event=res.event)
    heard = ()  # the `on` and `status` clauses, as conditions with their actual values
    if route.on is not None:
        heard = (Condition(f"on {route.on}", res.tool, route.on == res.tool, route.span),)
        if route.on != res.tool:
            return EdgeEvidence(route, fired=False, conditions=heard, reason=f"the result is from "
                                f"`{res.tool}`, not `{route.on}`", **base)
    elif res.tool not in route.src_tools:  # "any tool of FROM" (language §5)
        return EdgeEvidence(route, fired=False, reason=f"the result is from `{res.tool}`, which "
                            f"is not a tool of `{route.src}`", **base)
    if route.statuses:
        names = route.statuses[0] if len(route.statuses) == 1 else f"[{', '.join(route.statuses)}]"
        heard += (Condition(f"status {names}", res.status, res.status in route.statuses, route.span),)
        if res.status not in route.statuses:
            reason = f"status `{res.status}` is not {' or '.join(route.statuses)}"
            return EdgeEvidence(route, fired=False, conditions=heard, reason=reason, **base)
    if route.when is None:
        return EdgeEvidence(route, fired=True, conditions=heard, **base)
    env = Env({**roots, "tool": res.tool, "status": res.status, "result": res.result,
               "args": res.args})
    ev = evaluate(route.when, env, clip=False, absent=True)
    return EdgeEvidence(route, fired=ev.holds, conditions=heard + ev.conditions, reason=ev.error, **base)


def _first_match(routes: Sequence[RouteInfo], res: ToolResult, roots: dict,
                 evidence: list) -> RouteInfo | None:
    for route in routes:
        ev = _check(route, res, roots)
        evidence.append(ev)
        if ev.fired:
            return route
    return None


def _outdone(ev: EdgeEvidence, winner: RouteInfo, fired_by: ToolResult) -> EdgeEvidence:
    """A later result's edge whose conditions held: only the first result's edge fires (the
    one that moves the cursor), so this one is recorded as held but not fired, saying why."""
    return attrs.evolve(ev, fired=False, reason=(
        f"held, but `{winner.text}` fired first (`{fired_by.tool}`, {fired_by.call_id})"))


def advance(graph: GraphInfo, cursor: str | None, batch: Sequence[ToolResult],
            pick: str | None, message: str, iteration: int) -> CursorDecision:
    """The cursor for this iteration, from the previous iteration's results and pick."""
    if cursor is None:
        cold = cold_start(graph, message, iteration)
        if cold.to is not None:  # an entry that fires beats a pick (one it makes moot is no loss)
            return attrs.evolve(cold, superseded=pick if pick != cold.to else None)
        if pick is not None and pick in reachable(graph, None):
            return CursorDecision(None, pick, "model-pick")
        return cold
    routes = [r for r in graph.routes if r.src == cursor and r.deterministic]
    roots: dict[str, Any] = {"message": message, "iteration": iteration, "skill": cursor}
    evidence: list[EdgeEvidence] = []
    winner: RouteInfo | None = None
    fired_by: ToolResult | None = None
    losers: list[Loser] = []
    for res in batch:
        hit = _first_match(routes, res, roots, evidence)
        if hit is None:
            continue
        if winner is None:
            winner, fired_by = hit, res
            continue
        evidence[-1] = _outdone(evidence[-1], winner, fired_by)
        if hit.dst != winner.dst:
            losers.append(Loser(res.call_id, res.tool, hit.dst, hit))
    if winner is not None:
        superseded = pick if pick is not None and pick != winner.dst else None
        return CursorDecision(cursor, winner.dst, "route", edge=winner, evidence=tuple(evidence),
                              losers=tuple(losers), fired_by=fired_by, superseded=superseded)
    if pick is not None and pick != cursor and pick in reachable(graph, cursor):
        return CursorDecision(cursor, pick, "model-pick", evidence=tuple(evidence))
    return CursorDecision(cursor, cursor, "stay", evidence=tuple(evidence))
