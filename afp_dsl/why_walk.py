"""The backward walk behind `why`: one builder per event kind, from an event to its causes.

Role:       `Walker.node(event)` returns the `WhyNode` tree of an event: a final answer → the
            reply → its LLM call → the context pieces (each with the reason it was active and
            the cursor move, edge evidence or pick behind it) and the tool results in the
            history → the calls, policy and check-in decisions, inner runs.
Invariants: every event is expanded once per tree (later mentions are references); the tree is
            bounded (`why.MAX_NODES`, `why.MAX_INNER_DEPTH`); nothing here raises on odd payloads.
"""
from __future__ import annotations

from typing import Any, Callable

from .trace import Event
from .why import MAX_INNER_DEPTH, MAX_NODES, Index, Locator, WhyNode, cond_node, payload, short


def describe(e: Event) -> str:
    """One line for an event (shared by the walk, `afpc trace show` and the HTML report)."""
    p = payload(e)
    fn = _DESCRIBE.get(e.kind)
    try:
        return fn(p) if fn else f"{e.kind} {short(p, 80)}"
    except (KeyError, TypeError, AttributeError, ValueError):
        return f"{e.kind} {short(p, 80)}"


def _calls(p: dict) -> str:
    return ", ".join(f"`{c.get('tool')}`" for c in p.get("tool_calls") or [])


_DESCRIBE: dict[str, Callable[[dict], str]] = {
    "run.started": lambda p: f"run of `{p.get('agent')}` started: user said {short(p.get('message'))}",
    "context.composed": lambda p: (f"context composed: {len(p.get('pieces') or [])} pieces, tools "
                                   + (", ".join(t.get("name", "?") for t in p.get("tools") or []) or "none")),
    "llm.called": lambda p: f"LLM call #{p.get('call')} ({p.get('messages')} messages, model {p.get('model') or 'default'})",
    "llm.replied": lambda p: ("model replied calling " + _calls(p)) if p.get("tool_calls")
    else f"model replied: {short(p.get('text'))}",
    "tool.called": lambda p: f"model called `{p.get('tool')}` ({p.get('call_id')}) with {short(p.get('args'))}",
    "tool.args_invalid": lambda p: f"arguments of `{p.get('tool')}` rejected: {short(p.get('problems'))}",
    "tool.returned": lambda p: (f"`{p.get('tool')}` ({p.get('call_id')}) returned {p.get('status')}: "
                                + short(p["result"] if p.get("result") is not None
                                        else p.get("read", "(no result)"))),
    "policy.decided": lambda p: (f"policy `{p.get('policy')}` decided {p.get('outcome')} at "
                                 f"{p.get('moment')}" + (f" for `{p['tool']}`" if p.get("tool") else "")
                                 + (f": {p['reason']}" if p.get("reason") else "")),
    "checkin.requested": lambda p: f"check-in {p.get('checkin')} asked: {short(p.get('question'))}",
    "checkin.decided": lambda p: (f"check-in {p.get('checkin')} {p.get('decision')}d"
                                  + (f" by {p['by']}" if p.get("by") else "")
                                  + (f" ({short(p['note'], 60)})" if p.get("note") else "")),
    "route.evaluated": lambda p: (f"edge `{p.get('edge')}` {'fired' if p.get('fired') else 'refused'}"
                                  + (f" on `{p['tool']}` ({p.get('call_id')})" if p.get("tool") else "")
                                  + (f": {p['reason']}" if p.get("reason") else "")),
    "route.conflict": lambda p: (f"route conflict from `{p.get('from')}`: `{p['winner']['edge']}` won over "
                                 + ", ".join(f"`{x['edge']}`" for x in p.get("losers") or [])),
    "cursor.moved": lambda p: (f"cursor {p.get('from') or 'none'} -> {p.get('to') or 'none'} ({p.get('cause')})"
                               + (f" over `{p['edge']}`" if p.get("edge") else "")),
    "skill.rejected": lambda p: (f"read_skill `{p.get('requested')}` refused: cursor {p.get('cursor')}, "
                                 f"reachable {', '.join(p.get('allowed') or []) or 'none'}"),
    "step.advanced": lambda p: f"step {p.get('step')} of {p.get('of')} of `{p.get('skill')}` done",
    "step.skipped": lambda p: f"step {p.get('step')} of `{p.get('skill')}` skipped: {short(p.get('reason'))}",
    "steps.unfinished": lambda p: f"steps of `{p.get('skill')}` unfinished at step {p.get('step')} ({p.get('action')})",
    "budget.exhausted": lambda p: f"iteration budget {p.get('limit')} exhausted ({p.get('action')})",
    "run.paused": lambda p: f"run paused on check-in {p.get('checkin')}",
    "run.resumed": lambda p: "run resumed" + (f" after check-in {p['checkin']}" if p.get("checkin") else ""),
    "redaction.applied": lambda p: f"redaction applied: {short(p.get('counts'))}",
    "run.finished": lambda p: (f"run finished ({p.get('outcome')}): {short(p.get('answer'))}"
                               + (f" — error: {short(p['error'])}" if p.get("error") else "")),
}


class Walker:
    """Builds explanation trees for the events of one run (and its inner runs)."""

    def __init__(self, ix: Index, find_inner: Callable[[str], Any], loc: Locator, depth: int = 0):
        self.ix, self.find_inner, self.loc, self.depth = ix, find_inner, loc, depth
        self.seen: set[str] = set()
        self.count = 0

    def node(self, e: Event) -> WhyNode:
        """The tree of `e`; an event already expanded in this tree becomes a reference."""
        at = self.loc.span(e.source)
        if e.id in self.seen or self.count > MAX_NODES:
            return WhyNode("ref", describe(e) + " (see above)", e.id, at)
        self.seen.add(e.id)
        self.count += 1
        build = _BUILD.get(e.kind, Walker._generic)
        return build(self, e, at)

    def ref(self, e: Event) -> WhyNode:
        return WhyNode("ref", describe(e), e.id, self.loc.span(e.source))

    def _generic(self, e: Event, at: str | None) -> WhyNode:
        kids = tuple(self.node(p) for p in self.ix.parents(e))
        return WhyNode(e.kind, describe(e), e.id, at, None, kids)

    # ------------------------------------------------------------ answer and replies
    def _finished(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        text = f"answer ({p.get('outcome')}): {short(p.get('answer'))}"
        if p.get("error"):
            text += f" — error: {short(p['error'])}"
        causes = self.ix.parents(e)
        if not causes:
            last = self.ix.last_before(e.seq, "llm.replied")
            causes = [last] if last is not None else []
        notes = [x for x in self.ix.events if x.kind in ("budget.exhausted", "steps.unfinished",
                                                         "route.conflict")]
        kids = tuple(self.node(c) for c in causes) + tuple(self.node(n) for n in notes)
        data = {k: p.get(k) for k in ("outcome", "answer", "iterations", "llm_calls", "tool_calls")}
        return WhyNode("answer", text, e.id, at, data, kids)

    def _replied(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        called = next((x for x in self.ix.parents(e) if x.kind == "llm.called"), None)
        n = payload(called).get("call") if called else None
        what = ("calling " + _calls(p)) if p.get("tool_calls") else f": {short(p.get('text'))}"
        text = f"model replied (LLM call #{n}, iteration {e.iteration}) {what}".replace(") :", "):")
        kids = self._call_inputs(called) if called is not None else ()
        data = {"text": p.get("text"), "tool_calls": p.get("tool_calls") or [], "call": n,
                "usage": p.get("usage")}
        return WhyNode("reply", text, e.id, at, data, kids)

    def _called(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        return WhyNode("llm_call", describe(e), e.id, at, {"call": p.get("call")},
                       self._call_inputs(e))

    def _call_inputs(self, called: Event) -> tuple[WhyNode, ...]:
        self.seen.add(called.id)
        kids: list[WhyNode] = []
        for c in self.ix.parents(called):
            if c.kind in ("context.composed", "llm.replied"):
                kids.append(self.node(c))
        results = self.ix.before(called.seq, "tool.returned")
        if results:
            rows = tuple(self.node(r) for r in results)
            kids.append(WhyNode("history", f"tool results in the history ({len(results)})",
                                children=rows))
        return tuple(kids)

    # ------------------------------------------------------------ context
    def _context(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        pieces = [self._piece(e, x) for x in p.get("pieces") or []]
        skipped = [self._skipped(x) for x in p.get("skipped") or []]
        tools = ", ".join(f"{t.get('name')}" for t in p.get("tools") or []) or "none"
        kids = pieces + skipped + [WhyNode("tools", f"tools offered: {tools}",
                                           data={"tools": p.get("tools") or []})]
        text = f"context of iteration {e.iteration}: {len(pieces)} piece{'s' if len(pieces) != 1 else ''}"
        return WhyNode("context", text, e.id, at, {"active": p.get("active") or []}, tuple(kids))

    def _piece(self, composed: Event, x: dict) -> WhyNode:
        kind, name, reason = x.get("kind"), x.get("name"), x.get("reason")
        at = self.loc.span(x.get("source"))
        kids: list[WhyNode] = []
        if reason == "when":
            kids += [cond_node(c) for c in x.get("detail") or [] if isinstance(c, dict)]
        elif kind in ("skill", "step") and reason in ("entry", "route", "continuity", "model-pick",
                                                     "always", "step"):
            kids += self._why_skill_active(composed, name, reason)
        data = {"kind": kind, "name": name, "reason": reason, "chars": x.get("chars")}
        return WhyNode("piece", f"{kind} `{name}` — {reason}", None, at, data, tuple(kids))

    def _why_skill_active(self, composed: Event, name: str, reason: str) -> list[WhyNode]:
        seq = composed.seq
        if reason == "step":
            done = self.ix.last_before(seq, "step.advanced", lambda p: p.get("skill") == name)
            return [self.node(done)] if done is not None else []
        move = self.ix.last_before(seq, "cursor.moved", lambda p: p.get("to") == name
                                   and p.get("cause") not in ("stay", "none"))
        if reason == "model-pick" and move is None:
            pick = self.ix.last_before(seq, "tool.called", lambda p: p.get("tool") == "read_skill"
                                       and (p.get("args") or {}).get("id") == name)
            if pick is not None:
                ret = self.ix.last_before(seq, "tool.returned",
                                          lambda p: p.get("call_id") == payload(pick).get("call_id"))
                return [self.node(ret or pick)]
            return []
        return [self.node(move)] if move is not None else []

    @staticmethod
    def _skipped(x: dict) -> WhyNode:
        conds = tuple(cond_node(c) for c in x.get("conditions") or [] if isinstance(c, dict))
        err = f" ({x['error']})" if x.get("error") else ""
        return WhyNode("skipped", f"not active: {x.get('kind')} `{x.get('name')}` — its `when` "
                       f"did not hold{err}", data={"kind": x.get("kind"), "name": x.get("name")},
                       children=conds)

    # ------------------------------------------------------------ cursor and routes
    def _moved(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = [cond_node(c) for c in p.get("witness") or [] if isinstance(c, dict)]
        kids += [self.node(c) for c in self.ix.parents(e)]
        fired = {c.id for c in self.ix.parents(e)}
        refused = [x for x in self.ix.events if x.kind == "route.evaluated" and x.seq < e.seq
                   and x.iteration == e.iteration and x.id not in fired
                   and not payload(x).get("fired")]
        if refused and p.get("cause") != "stay":
            kids.append(WhyNode("alternatives", "edges considered and refused",
                                children=tuple(self.node(r) for r in refused)))
        if p.get("superseded_pick"):
            kids.append(WhyNode("note", f"a model pick of `{p['superseded_pick']}` was superseded"))
        data = {k: p.get(k) for k in ("from", "to", "cause", "edge")}
        return WhyNode("cursor", describe(e), e.id, at, data, tuple(kids))

    def _route(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = [cond_node(c) for c in p.get("conditions") or [] if isinstance(c, dict)]
        ev = [x for x in self.ix.parents(e) if x.kind == "tool.returned"]
        kids += [WhyNode("evidence", "evidence: " + describe(x), x.id, self.loc.span(x.source))
                 for x in ev]
        data = {k: p.get(k) for k in ("edge", "from", "to", "fired", "reason", "tool", "call_id",
                                      "status")}
        return WhyNode("edge", describe(e), e.id, at, data, tuple(kids))

    # ------------------------------------------------------------ tools
    def _returned(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = []
        for c in self.ix.parents(e):
            kids.append(self._tool_call(c) if c.kind == "tool.called" else self.node(c))
        inner = self._inner(p.get("call_id"))
        if inner is not None:
            kids.append(inner)
        data = {k: p.get(k) for k in ("tool", "call_id", "status", "executed")}
        return WhyNode("tool_result", describe(e), e.id, at, data, tuple(kids))

    def _tool_call(self, c: Event) -> WhyNode:
        self.seen.add(c.id)
        p = payload(c)
        by = next((x.id for x in self.ix.parents(c) if x.kind == "llm.replied"), None)
        data = {"tool": p.get("tool"), "call_id": p.get("call_id"), "args": p.get("args"),
                "requested_by": by}
        text = describe(c) + (f", requested by [{by}]" if by else "")
        return WhyNode("tool_call", text, c.id, self.loc.span(c.source), data)

    def _inner(self, call_id: Any) -> WhyNode | None:
        if not call_id or self.depth >= MAX_INNER_DEPTH:
            return None
        run_id = f"{self.ix.run_id}/{call_id}"
        try:
            t = self.find_inner(run_id)
        except Exception:  # noqa: BLE001 - a broken store must not break the explanation
            t = None
        if t is None or not len(t):
            return None
        w = Walker(Index(t), self.find_inner, self.loc, self.depth + 1)
        fin = w.ix.final()
        agent = payload(t[0]).get("agent", "?")
        return WhyNode("inner", f"inner run {run_id} of agent `{agent}`", None, None,
                       {"run": run_id, "agent": agent}, (w.node(fin),) if fin else ())

    def _policy(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        data = {k: p.get(k) for k in ("policy", "moment", "outcome", "reason", "tool", "call_id")}
        return WhyNode("policy", describe(e), e.id, at, data)

    def _checkin(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        keys = ("checkin", "tool", "call_id", "decision", "by", "note", "question", "policy")
        return WhyNode("checkin", describe(e), e.id, at, {k: p[k] for k in keys if k in p},
                       tuple(self.node(c) for c in self.ix.parents(e)
                             if c.kind.startswith(("checkin", "run.")) ))


_BUILD: dict[str, Callable[[Walker, Event, Any], WhyNode]] = {
    "run.finished": Walker._finished, "llm.replied": Walker._replied, "llm.called": Walker._called,
    "context.composed": Walker._context, "cursor.moved": Walker._moved,
    "route.evaluated": Walker._route, "tool.returned": Walker._returned,
    "policy.decided": Walker._policy, "checkin.requested": Walker._checkin,
    "checkin.decided": Walker._checkin,
}
