"""The graph cursor's step of an iteration: decided by `cursor`, recorded here.

Role:       `cursor_step(ctx)` asks `cursor` for the decision (cold start, route, model pick,
            stay, continuity) and records it: the evidence of every edge considered
            (`route.evaluated`), a `route.conflict` when later results of the batch matched other
            targets, and the `cursor.moved` that the context composition then reads. Split from
            `interp`.
Emits:      route.evaluated, route.conflict, cursor.moved.
Invariants: one decision per iteration (a retry reuses it: `interp` checks `state.decided`); a
            move (a fired self-loop too) resets the step pointers of the skill it enters and of
            the skill it leaves, unless that one stays active as a persistent base.
"""
from __future__ import annotations

from typing import Any

from .cursor import CursorDecision, advance, cold_start
from .evidence_keys import hide
from .plan import EntryInfo, GraphInfo, RouteInfo
from .runtime import RunCtx


def cursor_step(ctx: RunCtx) -> str:
    """Decide and record this iteration's cursor (semantics §4), before the context is composed;
    the id of its `cursor.moved` (a stay too: a recorded decision the context follows from)."""
    st = ctx.state
    d = _decide_cursor(ctx)
    pick_event = st.pick_event if d.cause == "model-pick" else None
    st.pick = st.pick_event = None
    evaluated = [_record_evidence(ctx, ev) for ev in d.evidence]
    if d.fired_by is not None:
        cause = tuple(x for x, ev in zip(evaluated, d.evidence) if ev.fired)[:1]
    elif pick_event:
        cause = (pick_event,)
    else:
        cause = tuple(evaluated) or _quiet_cause(ctx, d)
    if d.losers:
        ctx.emit("route.conflict", {
            "from": d.src, "winner": {"edge": d.edge.text, "call_id": d.fired_by.call_id,
                                      "tool": d.fired_by.tool, "to": d.to},
            "losers": [{"edge": x.route.text, "call_id": x.call_id, "tool": x.tool, "to": x.dst}
                       for x in d.losers]}, source=d.edge.span,
            caused_by=cause + _loser_evidence(d, evaluated))
    eid = _record_move(ctx, d, cause)
    if d.to != st.cursor or d.cause in ("continuity", "route"):
        _reset_steps(ctx, st.cursor, d.to)
        st.cursor, st.cursor_cause, st.cursor_event = d.to, d.cause, eid
    return eid


def _reset_steps(ctx: RunCtx, left: str | None, entered: str | None) -> None:
    """A cursor move resets the procedure of the skill it enters (a fired self-loop restarts
    it, as AFP206 says), and of the skill it leaves, unless that one stays active: a
    persistent base (an unconditional entry) goes on with its procedure where it was."""
    st, graph = ctx.state, ctx.plan.graph
    if entered is not None:
        st.steps[entered] = 0
    if left is not None and left != entered and not (graph is not None and left in graph.bases):
        st.steps[left] = 0


def _loser_evidence(d: CursorDecision, evaluated: list[str]) -> tuple[str, ...]:
    """The `route.evaluated` ids of the conflict's losers, in call order (one per loser)."""
    ids = {(id(ev.route), ev.call_id): eid for eid, ev in zip(evaluated, d.evidence)}
    return tuple(ids[(id(x.route), x.call_id)] for x in d.losers)


def _quiet_cause(ctx: RunCtx, d: CursorDecision) -> tuple[str, ...]:
    """What decided a move no edge or pick explains: the message, for a cold start (or a cursor
    carried over); else the results that fired nothing, or the move the cursor stays on."""
    st = ctx.state
    if d.src is None:
        return (st.start_event,)
    return tuple(r.event for r in st.last_batch) or (st.cursor_event or st.start_event,)


def _decide_cursor(ctx: RunCtx) -> CursorDecision:
    st, graph = ctx.state, ctx.plan.graph
    if st.cursor is not None and st.cursor_cause == "continuity" and st.cursor_event is None:
        to, st.cursor = st.cursor, None
        return CursorDecision(None, to, "continuity")
    if st.iteration == 1 and st.cursor is None:
        return cold_start(graph, st.message, st.iteration)
    return advance(graph, st.cursor, st.last_batch, st.pick, st.message, st.iteration)


def _record_evidence(ctx: RunCtx, ev) -> str:
    return ctx.emit("route.evaluated", {
        "edge": ev.route.text, "from": ev.route.src, "to": ev.route.dst, "call_id": ev.call_id,
        "tool": ev.tool, "status": ev.status, "fired": ev.fired, "reason": ev.reason,
        "conditions": [_cond(c) for c in hide(ctx.redactor, ev.route.when, ev.conditions)]},
        source=ev.route.span, caused_by=(ev.result_event,), clip=True)


def _record_move(ctx: RunCtx, d: CursorDecision, cause: tuple[str, ...]) -> str:
    edge, entry = d.edge, d.entry
    if d.cause == "model-pick" and ctx.plan.graph is not None:
        edge, entry = _pick_basis(ctx.plan.graph, d.src, d.to)
    source = edge.span if edge else (entry.span if entry else _stay_source(ctx, d))
    payload = {"from": d.src, "to": d.to, "cause": d.cause}
    if edge is not None:
        payload["edge"] = edge.text
    if d.witness:
        payload["witness"] = [_cond(c) for c in d.witness]
    if d.superseded:
        payload["superseded_pick"] = d.superseded
    if d.refused:  # the entries tried first, refused, with their evidence (semantics §4)
        payload["refused_entries"] = [
            {"skill": e.skill, "conditions": [_cond(c) for c in conds],
             **({"reason": why} if why else {}), **_where(e.span)} for e, conds, why in d.refused]
    return ctx.emit("cursor.moved", payload, source=source, caused_by=cause,
                    clip="witness" in payload or "refused_entries" in payload)


def _where(span: Any) -> dict:
    """`{"source": [file, start, end]}` of a declaration (as a context piece's), or nothing."""
    return {"source": [span.file, span.start, span.end]} if span is not None else {}


def _stay_source(ctx: RunCtx, d: CursorDecision):
    """A stay's declaration: the skill the cursor stays on (no route out of it fired)."""
    info = ctx.plan.skills.get(d.to) if d.cause == "stay" and d.to is not None else None
    return info.decl.span if info is not None else None


def _pick_basis(graph: GraphInfo, src: str | None, to: str | None
                ) -> tuple[RouteInfo | None, EntryInfo | None]:
    """The declaration that made a model's pick reachable (`cursor.reachable`): a route from
    the cursor (a bare one first: bare routes exist for picks), else the entry."""
    routes = [r for r in graph.routes if r.src == src and r.dst == to] if src else []
    if routes:
        return min(routes, key=lambda r: r.deterministic), None
    return None, next((e for e in graph.entries if e.skill == to), None)


def _cond(c) -> dict:
    out = {"text": c.text, "actual": c.actual, "passed": c.passed}
    if c.reason:
        out["reason"] = c.reason
    return out
