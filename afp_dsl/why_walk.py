"""The backward walk behind `why`: one builder per event kind, from an event to its causes.

Role:       `Walker.node(event)` returns the `WhyNode` tree of an event: a final answer → the
            reply → its LLM call → the context pieces (each with the reason it was active and
            the cursor move, edge evidence or pick behind it) and the tool results in the
            history → the calls, policy and check-in decisions, inner runs.
Invariants: every event is expanded once per tree (later mentions are references); the tree is
            bounded (`why.MAX_NODES`, `why.MAX_LEVELS`, `why.MAX_INNER_DEPTH`); nothing here raises on odd payloads.
"""
from __future__ import annotations

from typing import Any, Callable

from .trace import Event
from .why import (MAX_INNER_DEPTH, MAX_LEVELS, MAX_NODES, Index, Locator, WhyNode, cond_node, items,
                  payload, short)
from .why_cursor import CursorNodes
from .why_describe import calls_text, describe


class Walker(CursorNodes):
    """Builds explanation trees for the events of one run (and its inner runs)."""

    def __init__(self, ix: Index, find_inner: Callable[[str], Any], loc: Locator, depth: int = 0):
        self.ix, self.find_inner, self.loc, self.depth = ix, find_inner, loc, depth
        self.seen: set[str] = set()
        self.count = 0
        self.level = 0  # how deep `node` is nested now
        self.calls = 0  # LLM calls expanded so far (the first one lists its whole history)
        self.listed: set[str] = set()  # contexts whose LLM call lists the tool results

    def node(self, e: Event) -> WhyNode:
        """The tree of `e`; an event already expanded in this tree becomes a reference, and one
        `MAX_LEVELS` deep a pointer to where to go on (each iteration of a long run nests the
        one before it a few levels deeper: a 120-iteration run overflowed the stack)."""
        at = self.loc.span(e.source)
        if e.id in self.seen:
            return WhyNode("ref", self._ref_text(e) + " (see above)", e.id, at)
        if self.count > MAX_NODES:  # (never shown: it would be no reference to "above")
            return WhyNode("ref", f"{self._ref_text(e)} (the tree stops at {MAX_NODES} events: "
                                  f"explain event `{e.id}` to go on)", e.id, at)
        if self.level >= MAX_LEVELS:
            return WhyNode("ref", f"{self._ref_text(e)} (the tree stops {MAX_LEVELS} levels deep: "
                                  f"explain event `{e.id}` to go on)", e.id, at)
        self.seen.add(e.id)
        self.count += 1
        build = _BUILD.get(e.kind, Walker._generic)
        self.level += 1
        try:
            return build(self, e, at)
        finally:
            self.level -= 1

    def ref(self, e: Event) -> WhyNode:
        return WhyNode("ref", self._ref_text(e), e.id, self.loc.span(e.source))

    def _ref_text(self, e: Event) -> str:
        """A reference to an event shown above, worded as its node is (`run.started` is the user
        message wherever it is cited; a reply names its LLM call; a context its iteration)."""
        if e.kind == "run.started":
            p = payload(e)
            return f"user message to `{p.get('agent')}`: {short(p.get('message'))}"
        if e.kind == "llm.replied":
            return self._reply_text(e)[0]
        if e.kind == "context.composed":
            return _context_text(e)
        return describe(e)

    def _generic(self, e: Event, at: str | None) -> WhyNode:
        kids = tuple(self.node(p) for p in self.ix.parents(e))
        # (its payload, already redacted: the JSON carries the facts the text line names)
        return WhyNode(e.kind, describe(e), e.id, at, dict(payload(e)) or None, kids)

    # ------------------------------------------------------------ answer and replies
    def _finished(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        answer = p.get("answer")
        text = f"answer ({p.get('outcome')})" + (f": {short(answer)}" if answer is not None else
                                                  ": no answer" if not p.get("error") else "")
        if p.get("error"):
            text += f" — error: {short(p['error'])}"
        causes = self.ix.parents(e)
        if not causes:
            last = self.ix.last_before(e.seq, "llm.replied")
            causes = [last] if last is not None else []
        notes = [x for x in self.ix.events if x.seq < e.seq and x.kind in (  # (not a retry's)
            "budget.exhausted", "steps.unfinished", "route.conflict")]
        kids = tuple(self.node(c) for c in causes) + self._requesters(causes)
        kids += tuple(self.node(n) for n in notes)
        data = {k: p.get(k) for k in ("outcome", "answer", "iterations", "llm_calls", "tool_calls")}
        return WhyNode("answer", text, e.id, at, data, kids)

    def _requesters(self, causes: list[Event]) -> tuple[WhyNode, ...]:
        """The replies that asked for the tool calls behind `causes` (a failed call ends an
        `error` run), when the causes' own nodes did not show them."""
        calls = [c for c in causes if c.kind == "tool.called"]
        calls += [x for c in causes if c.kind == "tool.returned" for x in self.ix.parents(c)
                  if x.kind == "tool.called"]
        replies = [x for c in calls for x in self.ix.parents(c) if x.kind == "llm.replied"]
        return self._causes([r for r in replies if r.id not in self.seen])

    def _replied(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        text, called, n = self._reply_text(e)
        kids = self._call_inputs(called) if called is not None else ()
        if called is not None and called.id in self.ix.provider_events:  # (who answered)
            kids = tuple(WhyNode(x.kind, describe(x), x.id, None,
                                 dict(payload(x))) for x in self.ix.provider_events[called.id]) + kids
        data = {"text": p.get("text"), "tool_calls": items(p, "tool_calls"), "call": n,
                "usage": p.get("usage")}
        return WhyNode("reply", text, e.id, at, data, kids)

    def _reply_text(self, e: Event) -> tuple[str, Event | None, Any]:
        """(the reply's line, its `llm.called`, that call's number)."""
        p = payload(e)
        called = next((x for x in self.ix.parents(e) if x.kind == "llm.called"), None)
        n = payload(called).get("call") if called else None
        what = ("calling " + calls_text(p)) if p.get("tool_calls") else f": {short(p.get('text'))}"
        text = f"model replied (LLM call #{n}, iteration {e.iteration}) {what}".replace(") :", "):")
        return text, called, n

    def _called(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        return WhyNode("llm_call", describe(e), e.id, at, {"call": p.get("call")},
                       self._call_inputs(e))

    def _call_inputs(self, called: Event) -> tuple[WhyNode, ...]:
        self.seen.add(called.id)
        first, self.calls = not self.calls, self.calls + 1  # (before its inputs expand others)
        kids: list[WhyNode] = []
        for c in self.ix.parents(called):
            if c.kind == "context.composed":
                self.listed.add(c.id)
            if c.kind in ("context.composed", "llm.replied", "run.started"):
                kids.append(self.node(c))
        kids += self._withheld(called)
        results = [r for r in self.ix.before(called.seq, "tool.returned")
                   if r.id not in self.ix.discarded]
        if results and not first:
            # an earlier call, reached through a tool call's reply: its history is a prefix of
            # the later one's, so the results the tree already shows are counted, not listed
            # again (listing them made the tree of an n-iteration run grow as n²)
            fresh = [r for r in results if r.id not in self.seen]
            shown = len(results) - len(fresh)
            label = f"tool results in the history ({len(results)}" + (
                f", {shown} shown above)" if shown else ")")
            kids.append(WhyNode("history", label, children=tuple(self.node(r) for r in fresh)))
        elif results:
            rows = tuple(self.node(r) for r in results)
            kids.append(WhyNode("history", f"tool results in the history ({len(results)})",
                                children=rows))
        if first:
            kids += self._earlier_runs()
        return tuple(kids)

    def _earlier_runs(self) -> list[WhyNode]:
        """A conversation's later run: its history also holds the earlier runs' messages (tool
        results among them), which this run's trace does not; say how many, and whose."""
        started = next((x for x in self.ix.events if x.kind == "run.started"), None)
        conv = payload(started).get("conversation") if started is not None else None
        call = next((x for x in self.ix.events if x.kind == "llm.called"), None)
        n = payload(call).get("messages") if call is not None else None
        if not isinstance(conv, str) or type(n) is not int or n <= 1:
            return []
        return [WhyNode("note", f"the history also holds {n - 1} message{'s' if n > 2 else ''} "
                        f"of the earlier runs of conversation `{conv}` (their tool results are "
                        "explained by those runs' `why`)", data={"conversation": conv,
                                                                  "messages": n - 1})]

    def _withheld(self, called: Event) -> list[WhyNode]:
        """A call sent other tools than its context offers (the wrap-up after the iteration
        budget is sent none): say which, next to the context's list."""
        offered = payload(called).get("tools")
        context = next((c for c in self.ix.parents(called) if c.kind == "context.composed"), None)
        if not isinstance(offered, list) or context is None:
            return []
        if offered == [t.get("name") for t in items(payload(context), "tools")]:
            return []
        wrap = any(c.kind == "budget.exhausted" for c in self.ix.parents(called))
        text = f"tools sent with this call: {', '.join(map(str, offered)) or 'none'}" + (
            " (the wrap-up after the iteration budget asks for an answer, not tools)" if wrap else "")
        return [WhyNode("tools", text, data={"tools": offered})]

    # ------------------------------------------------------------ context
    def _context(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        before = set(self.seen)
        pieces = [self._piece(e, x) for x in items(p, "pieces")]
        pieces += self._bodiless(e, p)
        skipped = [self._skipped(x) for x in items(p, "skipped")]
        tools = ", ".join(f"{t.get('name')}" for t in items(p, "tools")) or "none"
        kids = pieces + skipped + [WhyNode("tools", f"tools offered: {tools}",
                                           data={"tools": items(p, "tools")})]
        # its other causes (the tool results it was composed after) are listed by the LLM call
        # it went to; explained on its own, the walk goes on back to the user message through
        # them (semantics §12)
        causes = [x for x in self.ix.parents(e) if e.id not in self.listed  # (input links: the
                  or x.kind in ("run.started", "policy.decided", "run.resumed")]  # message; a retry)
        kids += self._causes(causes, before)
        return WhyNode("context", _context_text(e), e.id, at, {"active": p.get("active") or []}, tuple(kids))

    def _piece(self, composed: Event, x: dict) -> WhyNode:
        kind, name, reason = x.get("kind"), x.get("name"), x.get("reason")
        at = self.loc.span(x.get("source"))
        kids: list[WhyNode] = []
        if reason == "when":
            kids += [cond_node(c) for c in items(x, "detail") if isinstance(c, dict)]
        elif kind in ("skill", "step") and reason in ("entry", "route", "continuity", "model-pick",
                                                     "always", "step"):
            kids += self._why_skill_active(composed, name, reason)
        data = {"kind": kind, "name": name, "reason": reason, "chars": x.get("chars")}
        return WhyNode("piece", f"{kind} `{name}` — {reason}", None, at, data, tuple(kids))

    def _bodiless(self, composed: Event, p: dict) -> list[WhyNode]:
        """The active skills (`active`) that added no piece, having no body: the cursor's skill
        or a persistent entry still decides the tools and the routes, so it is shown with the
        move (or pick) behind it."""
        named = {x.get("name") for x in items(p, "pieces") if x.get("kind") == "skill"}
        active = p.get("active") if isinstance(p.get("active"), list) else []
        out = []
        for name in (n for n in active if isinstance(n, str) and n not in named):
            move = self.ix.last_before(composed.seq, "cursor.moved", lambda q, n=name: q.get("to")
                                       == n and q.get("cause") not in ("stay", "none"))
            reason = payload(move).get("cause") if move is not None else (
                "model-pick" if self._picked(composed.seq, name) else "entry")
            kids = self._why_skill_active(composed, name, str(reason))
            out.append(WhyNode("piece", f"skill `{name}` — {reason} (no body, so no text in the "
                               "prompt)", None, None, {"kind": "skill", "name": name,
                                                       "reason": reason, "chars": 0}, tuple(kids)))
        return out

    def _picked(self, seq: int, name: str) -> bool:
        return self.ix.last_before(seq, "tool.called", lambda q: q.get("tool") == "read_skill"
                                   and (q.get("args") or {}).get("id") == name) is not None

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
                call_id = payload(pick).get("call_id")
                ret = self.ix.last_before(seq, "tool.returned",
                                          lambda p: p.get("call_id") == call_id)
                return [self.node(ret or pick)]
            return []
        return ([self.node(move)] if move is not None else []) + self._stayed(composed, name)

    def _stayed(self, composed: Event, name: str) -> list[WhyNode]:
        """The `stay` that kept the cursor on `name` for this iteration (a recorded decision,
        semantics §4) when edges out of it were evaluated and refused: the move that put the
        cursor there is not the whole story once later results were weighed and fired nothing.
        (A stay no edge was evaluated for, after results no route listens to, adds nothing.)"""
        stay = self.ix.last_before(composed.seq, "cursor.moved")
        if stay is None or stay.iteration != composed.iteration:
            return []
        p = payload(stay)
        if p.get("cause") != "stay" or p.get("to") != name:
            return []
        weighed = any(c.kind == "route.evaluated" for c in self.ix.parents(stay))
        return [self.node(stay)] if weighed else []

    def _skipped(self, x: dict) -> WhyNode:
        conds = tuple(cond_node(c) for c in items(x, "conditions") if isinstance(c, dict))
        err = f" ({x['error']})" if x.get("error") else ""
        return WhyNode("skipped", f"not active: {x.get('kind')} `{x.get('name')}` — its `when` "
                       f"did not hold{err}", at=self.loc.span(x.get("source")),
                       data={"kind": x.get("kind"), "name": x.get("name")}, children=conds)

    # ------------------------------------------------------------ tools
    def _returned(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        kids = []
        for c in self.ix.parents(e):
            kids.append(self.node(c))
        inner = self._inner(p.get("call_id"))
        if inner is not None:
            kids.append(inner)
        data = {k: p.get(k) for k in ("tool", "call_id", "status", "executed", "result")}
        if "read" in p:  # (what the model read, when it differs from the result)
            data["read"] = p["read"]
        return WhyNode("tool_result", describe(e), e.id, at, data, tuple(kids))

    def _tool_call(self, c: Event, at: str | None) -> WhyNode:
        p = payload(c)
        reply = next((x for x in self.ix.parents(c) if x.kind == "llm.replied"), None)
        by = reply.id if reply is not None else None
        data = {"tool": p.get("tool"), "call_id": p.get("call_id"), "args": p.get("args"),
                "requested_by": by}
        text = describe(c) + (f", requested by [{by}]" if by else "")
        # the reply that asked for the call, expanded (or a reference when it already is): the
        # walk goes on back to the user message (semantics §12)
        kids = (self.node(reply),) if reply is not None else ()
        return WhyNode("tool_call", text, c.id, at, data, kids)

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
        conds = tuple(cond_node(c) for c in items(p, "conditions") if isinstance(c, dict))
        return WhyNode("policy", describe(e), e.id, at, data,
                       conds + tuple(self._causes(self.ix.parents(e))))

    def _checkin(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        keys = ("checkin", "tool", "call_id", "decision", "by", "note", "question", "policy")
        causes = self.ix.parents(e)
        if e.kind == "checkin.requested":  # (ones shown elsewhere are not repeated as refs)
            causes += [x for x in self._asked_on(e, p.get("call_id")) if x.id not in self.seen]
        kids = self._causes(causes)
        if p.get("source") == "inner":  # (the inner run's own check-in: where, on which call)
            outer = next((x for x in self.ix.parents(e) if x.kind == "tool.called"), None)
            inner = self._inner(payload(outer).get("call_id")) if outer is not None else None
            kids += (inner,) if inner is not None else ()
        return WhyNode("checkin", describe(e), e.id, at, {k: p[k] for k in keys if k in p}, kids)

    def _asked_on(self, e: Event, call_id: Any) -> list[Event]:
        """The call a check-in asks about and the policy decisions on it (a trace that cites only
        the reply still shows them)."""
        if not call_id:
            return []
        return self.ix.before(e.seq, "tool.called", lambda p: p.get("call_id") == call_id) + \
            self.ix.before(e.seq, "policy.decided", lambda p: p.get("call_id") == call_id)

    def _causes(self, causes: list[Event], before: set[str] | None = None
                ) -> tuple[WhyNode, ...]:
        """The nodes of `causes`, latest first; a cause expanded since `before` (default: now),
        by an earlier sibling's subtree, is left out (it is shown just above); one shown before
        that is a reference."""
        before = set(self.seen) if before is None else before
        kids: list[WhyNode] = []
        done: set[str] = set()
        for c in sorted(causes, key=lambda x: -x.seq):
            if c.id in done or (c.id in self.seen and c.id not in before):
                continue
            done.add(c.id)
            kids.append(self.node(c))
        return tuple(kids)

    def _started(self, e: Event, at: str | None) -> WhyNode:
        p = payload(e)
        data = {k: p.get(k) for k in ("agent", "message", "conversation")}
        text = f"user message to `{p.get('agent')}`: {short(p.get('message'))}"
        return WhyNode("user", text, e.id, at, data, self._causes(self.ix.parents(e)))


def _context_text(e: Event) -> str:
    n = len(items(payload(e), "pieces"))  # (the skills without a body add no piece)
    return f"context of iteration {e.iteration}: {n} piece{'s' if n != 1 else ''}"


_BUILD: dict[str, Callable[[Walker, Event, Any], WhyNode]] = {
    "run.finished": Walker._finished, "llm.replied": Walker._replied, "llm.called": Walker._called,
    "context.composed": Walker._context, "cursor.moved": Walker._moved,
    "route.evaluated": Walker._route, "tool.called": Walker._tool_call,
    "tool.returned": Walker._returned,
    "policy.decided": Walker._policy, "checkin.requested": Walker._checkin,
    "checkin.decided": Walker._checkin, "run.started": Walker._started,
}
