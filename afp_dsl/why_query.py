"""`why` questions about a skill or an edge, answered from the recorded evidence.

Role:       "why was skill S active / not active at iteration k" (`skill_tree`) and "why did /
            didn't edge A->B fire" (`edge_tree`), from `context.composed`, `cursor.moved`,
            `route.evaluated` and `skill.rejected` events only.
Invariants: never raises on a partial trace; an unknown skill or edge gets a plain answer
            naming what the trace does contain.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from .suggest import closest
from .trace import Event, Trace, takes_edge
from .why import Index, Locator, WhyNode, items, name_of, payload
from .why_describe import describe
from .why_walk import Walker

__all__ = ["walker", "skill_tree", "edge_tree", "describe", "parse_edge"]


def walker(trace: Trace, find_inner: Callable[[str], Any], loc: Locator) -> Walker:
    return Walker(Index(trace), find_inner, loc)


def _composed(ix: Index) -> dict[int, Event]:
    """The last `context.composed` of each iteration."""
    out: dict[int, Event] = {}
    for e in ix.events:
        if e.kind == "context.composed":
            out[e.iteration] = e
    return out


def _all_names(ix: Index, made_up: bool = True) -> list[str]:
    """Every skill (or piece) name the trace mentions: pieces, cursor moves, edges, and the
    model's picks, refused or superseded ones included (the answer lists those); without
    `made_up`, not a pick whose arguments were refused (a name the model made up, which no
    "did you mean" should offer)."""
    names: set[str] = set()
    invalid = set() if made_up else {
        payload(e).get("call_id") for e in ix.events if e.kind == "tool.args_invalid"}
    for e in ix.events:
        p = payload(e)
        if e.kind == "context.composed":
            names.update(name_of(x.get("name")) for x in items(p, "pieces") + items(p, "skipped"))
        elif e.kind in ("cursor.moved", "route.evaluated"):
            names.update(name_of(p.get(k)) for k in ("from", "to", "superseded_pick"))
            names.update(name_of(x.get("skill")) for x in items(p, "refused_entries"))
        elif e.kind == "skill.rejected":
            names.update(name_of(p.get(k)) for k in ("requested", "cursor"))
        elif e.kind == "tool.called" and p.get("call_id") not in invalid:
            names.add(name_of(_pick_of(p)))
    return sorted(n for n in names if isinstance(n, str))


def _hint(name: str, names: list[str]) -> str:
    close = closest(name, names)
    return f"; did you mean `{close}`?" if close else ""


# ---------------------------------------------------------------- skill
def skill_tree(w: Walker, skill: str, iteration: int | None = None) -> WhyNode:
    ix = w.ix
    by_iter = _composed(ix)
    if not by_iter:
        return WhyNode("empty", f"run `{ix.run_id}` composed no context")
    k = iteration if iteration is not None else max(by_iter)
    composed = by_iter.get(k)
    if composed is None:
        its = ", ".join(str(i) for i in sorted(by_iter))
        return WhyNode("missing", f"run `{ix.run_id}` has no iteration {k} (iterations: {its})")
    active_at = [i for i, e in sorted(by_iter.items()) if _active(e, skill)]
    summary = WhyNode("summary", "active at iterations: " + (", ".join(map(str, active_at))
                                                            or "none"),
                      data={"active_at": active_at})
    piece = _piece(composed, skill)
    if piece is not None:
        node = w._piece(composed, piece)
        text = f"`{skill}` was active at iteration {k}: {piece.get('kind')} — {piece.get('reason')}"
        return WhyNode("skill", text, composed.id, node.at,
                       {"skill": skill, "iteration": k, "active": True, **node.data},
                       node.children + (summary,))
    if _active(composed, skill):
        return _active_without_piece(w, composed, skill, k, summary)
    kids = _not_active(w, composed, skill, k)
    known = _all_names(ix)
    hint = "" if skill in known else (f" (the trace never mentions `{skill}`"
                                      f"{_hint(skill, _all_names(ix, made_up=False))})")
    return WhyNode("skill", f"`{skill}` was not active at iteration {k}{hint}", composed.id, None,
                   {"skill": skill, "iteration": k, "active": False}, tuple(kids) + (summary,))


def _piece(composed: Event, name: str) -> dict | None:
    for x in items(payload(composed), "pieces"):
        if x.get("name") == name and x.get("kind") in ("skill", "fact", "instruction",
                                                       "steering", "context", "system"):
            return x
    return None


def _active(composed: Event, name: str) -> bool:
    """Active at that composition: a piece of it, or listed in `active` (the cursor's skill and
    the persistent unconditional entries, even when they have no body to contribute)."""
    listed = payload(composed).get("active")
    return _piece(composed, name) is not None or (isinstance(listed, list) and name in listed)


def _active_without_piece(w: Walker, composed: Event, skill: str, k: int,
                          summary: WhyNode) -> WhyNode:
    """An active skill that contributed no body piece: the cursor was on it, or it is a
    persistent entry; with the cursor move behind it."""
    move = w.ix.last_before(composed.seq, "cursor.moved")
    on_it = move is not None and payload(move).get("to") == skill
    how = "the cursor was on it" if on_it else "a persistent (unconditional) entry"
    kids = tuple(w._why_skill_active(composed, skill, "route"))
    return WhyNode("skill", f"`{skill}` was active at iteration {k}: {how} (it has no body, so "
                   f"it added no context piece)", composed.id, None,
                   {"skill": skill, "iteration": k, "active": True,
                    "reason": "cursor" if on_it else "persistent"}, kids + (summary,))


def _not_active(w: Walker, composed: Event, skill: str, k: int) -> list[WhyNode]:
    ix = w.ix
    kids: list[WhyNode] = []
    for x in items(payload(composed), "skipped"):
        if x.get("name") == skill:
            kids.append(w._skipped(x))
    move = ix.last_before(composed.seq, "cursor.moved")
    if move is not None:
        at = payload(move).get("to")
        kids.append(WhyNode("cursor", f"the cursor was on `{at or 'none'}`", None, None,
                            {"cursor": at}, (w.node(move),)))
    routes = [e for e in ix.events if e.kind == "route.evaluated" and e.iteration == k
              and payload(e).get("to") == skill]
    kids += [w.node(r) for r in routes if r.id not in w.seen]
    if move is not None and not routes and payload(move).get("to") != skill:
        kids.append(WhyNode("note", f"no edge into `{skill}` was evaluated at iteration {k}"))
    rejected = ix.before(composed.seq, "skill.rejected", lambda p: p.get("requested") == skill)
    kids += [w.node(r) for r in rejected]
    kids += [w.node(r) for r in _invalid_picks(ix, composed.seq, skill)]
    return kids


def _pick_of(p: dict) -> Any:
    args = p.get("args")
    return args.get("id") if p.get("tool") == "read_skill" and isinstance(args, dict) else None


def _invalid_picks(ix: Index, seq: int, skill: str) -> list[Event]:
    """The `tool.args_invalid` of `read_skill` calls naming `skill` (one the model may not
    name): refused picks too, besides the `skill.rejected` ones."""
    return [e for e in ix.before(seq, "tool.args_invalid")
            if any(c.kind == "tool.called" and _pick_of(payload(c)) == skill
                   for c in ix.parents(e))]


# ---------------------------------------------------------------- edge
def parse_edge(text: str) -> tuple[str, str] | None:
    m = re.fullmatch(r"\s*([\w.]+)\s*-+>\s*([\w.]+)\s*", text or "")  # (names hold no `-`)
    return (m.group(1), m.group(2)) if m else None


def edge_tree(w: Walker, edge: str) -> WhyNode:
    ix = w.ix
    parsed = parse_edge(edge)
    if parsed is None:
        return WhyNode("missing", f"`{edge}` is not an edge; write it as `FROM->TO`")
    a, b = parsed
    name = f"{a} -> {b}"
    evals = [e for e in ix.events if e.kind == "route.evaluated"
             and (payload(e).get("from"), payload(e).get("to")) == (a, b)]
    moves = [e for e in ix.events if e.kind == "cursor.moved" and takes_edge(payload(e), a, b)]
    other = [e for e in ix.events if e.kind == "cursor.moved" and not takes_edge(payload(e), a, b)
             and (payload(e).get("from"), payload(e).get("to")) == (a, b)]
    lost = [e for e in ix.events if e.kind == "route.conflict" and payload(e).get("from") == a
            and any(x.get("to") == b for x in items(payload(e), "losers") if isinstance(x, dict))]
    kids: list[WhyNode] = [w.node(e) for e in moves]
    kids += [w.node(e) for e in evals if e.id not in w.seen]
    kids += [w.node(e) for e in lost if e.id not in w.seen]
    if moves:
        its = ", ".join(str(m.iteration) for m in moves)
        text = f"edge `{name}` was taken (iteration {its})"
    elif evals:
        text = f"edge `{name}` was evaluated {len(evals)} time(s) and never fired" + (
            f"; it lost {len(lost)} route conflict(s)" if lost else "")
    else:
        text = f"edge `{name}` never fired and was never evaluated"
        kids += _never_evaluated(w, a, b)
    kids += [WhyNode("note", f"the cursor went from `{a}` to `{b}` at iteration {e.iteration} "
                     f"by {_by(payload(e).get('cause'))}, not over the edge", None, None, {},
                     (w.node(e),)) for e in other]
    rejected = [e for e in ix.events if e.kind == "skill.rejected"
                and payload(e).get("cursor") == a and payload(e).get("requested") == b]
    kids += [w.node(r) for r in rejected]
    data = {"from": a, "to": b, "taken": bool(moves), "evaluations": len(evals)}
    return WhyNode("edge_query", text, None, None, data, tuple(kids))


def _by(cause: Any) -> str:
    return {"entry": "an entry", "stay": "staying", "continuity": "continuity (a follow-up run "
            "starts where the last ended)", "model-pick": "the model's pick (no route from the "
            "skill allowed it)"}.get(cause, f"cause `{cause}`")


def _never_evaluated(w: Walker, a: str, b: str) -> list[WhyNode]:
    ix = w.ix
    at = [e for e in ix.events if e.kind == "cursor.moved"]
    on_a = sorted({e.iteration for e in at if payload(e).get("to") == a})  # ints
    if not on_a:
        seen = sorted({t for e in at if (t := name_of(payload(e).get("to")))})
        known = _all_names(ix)
        hint = _hint(a, known) if a not in known else ""
        return [WhyNode("note", f"the cursor was never on `{a}` (it was on: "
                        f"{', '.join(seen) or 'none'}){hint}")]
    its = ", ".join(map(str, on_a))
    known = _all_names(ix)
    seen = f"the cursor was on `{a}` (iterations {its}) but no tool result was evaluated against `{a} -> {b}`"
    order = "edges are tried in declaration order and the first that fires wins"
    if b not in known:  # (a skill the run never heard of: a misspelling, no such edge, or an edge
        # the trace cannot show because another one fired first: the run does not know the graph)
        out = [WhyNode("note", f"{seen}, and the trace never mentions `{b}`: check that the graph "
                       f"has this edge{_hint(b, known)}; if it has, another edge out of `{a}` fired "
                       f"first ({order})")]
    else:
        out = [WhyNode("note", f"{seen}: {order}; a bare edge moves the cursor only when the model "
                       f"picks `{b}` with read_skill")]
    left = [e for e in at if payload(e).get("from") == a and payload(e).get("to") != a
            and payload(e).get("cause") not in ("stay", "none")]
    out += [WhyNode("note", f"the cursor left `{a}` at iteration {e.iteration}", None, None, {},
                    (w.node(e),)) for e in left]
    return out
