"""The run loop: cursor → context → LLM call → tools, until an answer (semantics §1, §4, §6).

Role:       a generator core (`run_core`) yielding effect requests; `runner` drives it. Handles
            input/output policies, the budget and wrap-up, steps nudges, pauses for check-ins,
            resumption of a paused batch, retries of a failed iteration or wrap-up call.
Emits:      run.started, context.composed, llm.called, llm.replied, steps.unfinished,
            budget.exhausted, checkin.requested, run.paused, run.resumed, checkin.decided; the
            cursor's events through `loop_cursor`, run.finished through `endings`.
Invariants: at most `max_iterations` LLM calls (+1 wrap-up call); tools run only for calls
            1..max-1; one cursor decision per iteration, retries included; every `caused_by`
            chain leads back to `run.started`; no I/O, no clock.
"""
from __future__ import annotations

from . import event_shapes as shapes
from . import model_view
from . import skills as sk
from .context import active_skills, compose
from .loop_cursor import cursor_step
from .endings import (CoreResult, checkpoint, finish, host_failed, provider_failed,
                      redaction_report)
from .evaluate import Env
from .providers.base import Message, Request, checked_reply, requested_model, response_keys
from .runtime import LLMCall, RunCtx
from .state import Pending, ToolResult
from .prompts import WRAP_UP
from .toolcall import CALLED_KEYS, dispatch
from .toolcall_policy import record_decisions



_ANSWERS = ("success", "absent", "partial")  # tool statuses that are answers (semantics §7)


# ---------------------------------------------------------------- start / resume
def run_core(ctx: RunCtx, resume: dict | None = None):
    st = ctx.state
    if resume is None:
        st.start_event = ctx.emit("run.started", {
            "agent": ctx.plan.name,
            "message": st.message if ctx.started_message is None else ctx.started_message,
            "run_id": st.run_id,
            "conversation": st.conversation, "model": _run_model(ctx),
            "provider": getattr(ctx.session.provider, "name", None)},
            source=ctx.plan.agent.span)
        st.turn = [st.start_event]
        denied, rows, rewritten = _message_policy(ctx, "input", {"message": st.message,
                                                                 "iteration": st.iteration})
        if denied is not None:
            return finish(ctx, "denied", f"I can't help with that: {denied}", causes=rows)
        if rewritten:  # what the links handed on is the message the run goes on with
            st.message = rewritten[0]
        if rows:  # (the first context cites them: `why` shows the message the model got)
            st.turn = [st.start_event, *rows]
        st.history.append(Message("user", st.message))
    elif resume.get("decision") is None:
        _recompose(ctx)
        ended = [e.id for e in ctx.rec.trace.tail(2) if e.kind == "run.finished"]
        resumed = ctx.emit("run.resumed", {"retry": True}, caused_by=ended[-1:])
        st.turn = [*st.turn, resumed]  # (the iteration made again follows from the retry too)
        if st.wrapping is not None:
            return (yield from _wrap_up(ctx, st.wrapping))
        resume = None
    else:
        _recompose(ctx)
        resume = _record_resume(ctx, resume)
    while True:
        if st.pending is None:
            result = yield from _iteration(ctx)
            if result is not None:
                return result
            continue
        out = yield from _batch(ctx, resume)
        resume = None
        if out is not None:
            return out
        st.pending = None
        st.turn = [r.event for r in st.last_batch]
        st.iteration += 1


def _model(ctx: RunCtx) -> str | None:
    return ctx.session.model or ctx.plan.agent.model


def _run_model(ctx: RunCtx) -> str | None:
    """The model the run's provider asks for (its own `model=` wins over the spec's)."""
    return requested_model(ctx.session.provider, Request("", (), (), _model(ctx)))


def _record_resume(ctx: RunCtx, resume: dict) -> dict:
    checkin = ctx.state.pending.checkin
    paused = [e.id for e in ctx.rec.trace.tail(4) if e.kind == "run.paused"]
    r = ctx.emit("run.resumed", {"checkin": checkin["id"]}, caused_by=paused[-1:])
    d = ctx.emit("checkin.decided", {"checkin": checkin["id"], "tool": checkin["tool"],
                                     "call_id": checkin["call_id"], "decision": resume["decision"],
                                     "by": resume.get("by"), "note": resume.get("note")},
                 caused_by=(r,))
    if checkin.get("source") == "policy":
        _decided_row(ctx, checkin, resume, d)
    return {**resume, "checkin": checkin}


def _decided_row(ctx: RunCtx, checkin: dict, resume: dict, decided: str) -> None:
    """The asking link's ledger row for the person's answer (semantics §8: every decision is a
    row), as the original's `four-eyes allow … approved by dana@ops`: `allow` for an approval,
    `deny` for a decline, at the rule that asked."""
    approved = resume["decision"] == "approve"
    by = resume.get("by")
    reason = ("approved" if approved else "declined") + (f" by {by}" if by else " by a person")
    from .source import Span
    span = checkin.get("span")
    rule = ({"file": span[0], "start": span[1], "end": span[2]}
            if isinstance(span, list) and len(span) == 3 else None)
    ctx.emit("policy.decided", {"policy": checkin.get("policy"), "moment": "before",
                                "tool": checkin["tool"], "call_id": checkin["call_id"],
                                "iteration": ctx.state.iteration,
                                "outcome": "allow" if approved else "deny", "reason": reason,
                                "rule": rule},
             source=Span(*span) if rule else None, caused_by=(decided,))


# ---------------------------------------------------------------- one iteration
def _iteration(ctx: RunCtx):
    st, plan = ctx.state, ctx.plan
    decided = ""  # (this iteration's `cursor.moved`; a stay is a decision too, semantics §4)
    if plan.graph is not None and st.decided != st.iteration:  # (a retry reuses its decision)
        decided = cursor_step(ctx)
    st.decided = st.iteration
    st.set_mark()
    comp = _recompose(ctx)
    causes = tuple(dict.fromkeys([st.cursor_event or "", decided] + st.turn +
                                 [c for p in comp.pieces for c in p.caused_by]))
    payload = shapes.composition_payload(comp)
    composed = ctx.rec.emit("context.composed", payload, iteration=st.iteration,
                            caused_by=causes, shaper=shapes.composed_shape, shape_of=comp,
                            clip="skipped" in payload or any(p.detail for p in comp.pieces),
                            vouch=shapes.TOOLS_KEY)
    last_call = st.iteration >= plan.agent.max_iterations
    reply, replied = yield from _call_llm(ctx, comp.system, comp.tools, composed, vouched=True)
    if reply is None:
        return replied
    if not reply.tool_calls:
        return _final(ctx, reply.text, replied)
    if last_call:
        return (yield from _budget(ctx, reply, replied))
    calls = tuple(reply.tool_calls)  # (its thinking is sent back with its calls; speed: passed
    # only when there is some, as a keyword costs the attrs `__init__` ≈ 900 instructions)
    st.history.append(Message("assistant", reply.text, calls, thinking=reply.thinking)
                      if reply.thinking else Message("assistant", reply.text, calls))
    st.pending = Pending(list(reply.tool_calls), 0, replied)
    st.last_batch = []
    return None


def _recompose(ctx: RunCtx):
    comp = compose(ctx.plan, ctx.state, ctx.redactor)
    ctx.comp = comp
    active = active_skills(ctx.plan, ctx.state)
    cur = [a[0] for a in active if a[0] == ctx.state.cursor]
    ctx.active_order = cur + [a[0] for a in active if a[0] != ctx.state.cursor]
    return comp


def _call_llm(ctx: RunCtx, system: str, tools: tuple, cause: str, context: str | None = None,
              vouched: bool = False):
    """Returns (reply, llm.replied id) or (None, CoreResult) on a provider failure; `context`:
    the `context.composed` the call is sent when it is not `cause`; `vouched`: `cause` is the
    `context.composed` of `tools`, recorded with `vouch=TOOLS_KEY`."""
    st, session = ctx.state, ctx.session
    call = session.next_llm_call()  # (this run's own: other runs of the session go on)
    st.llm_calls += 1
    system, messages, tools = model_view.sent(ctx.model_redactor, system, st.history, tools)
    request = Request(system, messages, tuple(tools), _model(ctx), call)
    inputs = (cause,) + ((context,) if context else ()) + tuple(r.event for r in st.last_batch)
    count = len(request.messages)
    model = requested_model(session.provider, request)
    payload = {"call": call, "model": model, "messages": count, "tools": [t.name for t in tools]}
    if vouched:  # (its tool names sit in `cause`: only the other three values are checked)
        called = ctx.rec.emit_vouched_plus("llm.called", payload, cause, shapes.LLM_CALLED_KEYS,
                                           (call, model, count), st.iteration, None, inputs)
    else:
        called = ctx.rec.emit("llm.called", payload, iteration=st.iteration, caused_by=inputs)
    events: list | None = [] if session.listens else None  # (its own, whoever shares the provider)
    try:
        reply = checked_reply((yield LLMCall(session.provider, request, events)))
    except Exception as exc:  # provider failure: the run ends with `error`
        if events:
            _provider_events(ctx, called, events)
        return None, provider_failed(ctx, exc, called, call)
    chunks = _provider_events(ctx, called, events) if events else 0
    st.tokens_in += reply.usage.input_tokens
    st.tokens_out += reply.usage.output_tokens
    calls = [{"id": c.id, "tool": c.name, "args": dict(c.arguments)} for c in reply.tool_calls]
    out = {"text": reply.text, "tool_calls": calls, "stop": reply.stop_reason,
           "usage": [reply.usage.input_tokens, reply.usage.output_tokens]}
    if chunks:
        out["chunks"] = chunks
    if reply.response_id is not None or reply.response_model is not None:
        out.update(response_keys(reply))  # (what the provider's reply says of itself)
    # (each call's `tool.called` holds its name, id and arguments, all in `out`: vouched for)
    replied = ctx.rec.emit("llm.replied", out, iteration=st.iteration, caused_by=(called,),
                           shaper=shapes.replied_shape if len(out) == 4 else None, shape_of=out,
                           vouch=CALLED_KEYS if calls else None)
    return reply, replied


def _provider_events(ctx: RunCtx, called: str, events: list) -> int:
    """Record the call's provider retries/fallbacks as events; return how many chunks streamed."""
    chunks = 0
    for ev in events:
        if ev.kind == "llm.chunk":
            chunks += 1
            continue
        ctx.emit(ev.kind, {"provider": ev.provider, **dict(ev.data)}, caused_by=(called,))
    return chunks


# ---------------------------------------------------------------- batch
def _batch(ctx: RunCtx, resume: dict | None):
    st = ctx.state
    p = st.pending
    while p.index < len(p.calls):
        call = p.calls[p.index]
        out = yield from dispatch(ctx, call, p.reply_event, resume)
        resume = None
        if out.pause is not None:
            p.checkin = out.pause
            return _pause(ctx, call, out.pause)
        if out.fatal is not None:
            return host_failed(ctx, call, out.fatal)
        p.checkin = None
        st.history.append(Message("tool", out.text, (), call.id, call.name,
                                  out.status not in _ANSWERS))
        from .evaluate import parse_result
        st.last_batch.append(ToolResult(call.name, call.id, dict(call.arguments), out.status,
                                        parse_result(out.result), out.event))
        if out.executed:
            st.returned.add(call.name)
        st.tool_calls += 1
        p.index += 1
    return None


def _pause_causes(ctx: RunCtx, checkin: dict) -> tuple[str, ...]:
    """A check-in depends on the reply, the call it asks about and the policy row that asked."""
    causes = [ctx.state.pending.reply_event]
    called = checkin.get("called")
    i = ctx.rec.trace.index(called) if isinstance(called, str) else None
    if i is not None:
        causes.append(called)
        causes += [e.id for e in ctx.rec.trace.since(i) if e.kind == "policy.decided"
                   and called in e.caused_by and (e.payload or {}).get("outcome") == "ask"]
    return tuple(causes)


def _checkin_args(checkin: dict, call) -> dict:
    """The arguments a person decides on: the ones the call goes on with if approved (an inner
    run's call, or what the `before` links handed on when one rewrote them), else the model's."""
    return checkin["args"] if "args" in checkin else dict(call.arguments)


def _pause(ctx: RunCtx, call, checkin: dict) -> CoreResult:
    span = checkin.get("span")
    from .source import Span
    source = Span(*span) if span else None
    req = ctx.emit("checkin.requested", {
        "checkin": checkin["id"], "tool": checkin["tool"], "call_id": checkin["call_id"],
        "args": _checkin_args(checkin, call),
        "question": checkin["question"],
        "source": checkin["source"], "policy": checkin.get("policy")},
        source=source, caused_by=_pause_causes(ctx, checkin))
    redaction_report(ctx, (req,))
    ctx.emit("run.paused", {"checkin": checkin["id"]}, caused_by=(req,))
    args = _checkin_args(checkin, call)
    question = checkin.get("question")  # (a host policy may quote the arguments in it)
    public = {**checkin, "args": ctx.redactor.scrub(args),
              "call_id": ctx.redactor.scrub_text(checkin["call_id"]),
              "question": ctx.redactor.scrub_text(question) if isinstance(question, str) else question}
    return CoreResult("paused", None, checkin=public, checkpoint=checkpoint(ctx))


# ---------------------------------------------------------------- endings
def _final(ctx: RunCtx, text: str, replied: str):
    st = ctx.state
    proc = sk.procedure(ctx.plan, ctx.active_order, st.steps)
    if proc is not None:
        skill, k = proc
        info = sk.unfinished(skill, k)
        if not st.nudged and st.iteration < ctx.plan.agent.max_iterations:
            st.nudged = True
            nudge = ctx.emit("steps.unfinished", {**info, "action": "nudged"},
                             source=skill.steps[k].span, caused_by=(replied,))
            st.history.append(Message("assistant", text))
            st.history.append(Message("user", sk.nudge_text(skill, k)))
            if st.last_batch:  # (`last` still reads it; routes do not hear it again)
                st.last_result = st.last_batch[-1]
            st.last_batch, st.turn = [], [nudge]
            st.iteration += 1
            return None
        ctx.emit("steps.unfinished", {**info, "action": "accepted"},
                 source=skill.steps[k].span, caused_by=(replied,))
    return _answer(ctx, "answered", text, replied)


def _cut_short(ctx: RunCtx, cause: str) -> None:
    """An answer at the end of the budget with a procedure unfinished: recorded as
    `steps.unfinished` (action `cut-short`; there is no turn left for a nudge)."""
    proc = sk.procedure(ctx.plan, ctx.active_order, ctx.state.steps)
    if proc is not None:
        skill, k = proc
        ctx.emit("steps.unfinished", {**sk.unfinished(skill, k), "action": "cut-short"},
                 source=skill.steps[k].span, caused_by=(cause,))


def _answer(ctx: RunCtx, outcome: str, text: str, cause: str) -> CoreResult:
    st = ctx.state
    denied, rows, rewritten = _message_policy(ctx, "output", {
        "text": text, "message": st.message, "iteration": st.iteration, "skill": st.cursor}, cause)
    text = rewritten[0] if rewritten else text
    if denied is not None:
        refusal = f"I can't give that answer: {denied}"
        st.history.append(Message("assistant", refusal))  # a follow-up sees what the user saw
        return finish(ctx, "denied", refusal, causes=(cause,) + rows)
    st.history.append(Message("assistant", text))
    return finish(ctx, outcome, text, causes=(cause,) + rows)


def _budget(ctx: RunCtx, reply, replied: str):
    st, agent = ctx.state, ctx.plan.agent
    action = "wrapped-up" if agent.wrap_up else "cut-short"
    spent = ctx.emit("budget.exhausted", {"limit": agent.max_iterations, "action": action,
                                          "pending": [c.name for c in reply.tool_calls]},
                     source=agent.budget_span or agent.span, caused_by=(replied,))
    if not agent.wrap_up:
        _cut_short(ctx, replied)
        return _answer(ctx, "max_iterations", reply.text, replied)
    if reply.text:
        st.history.append(Message("assistant", reply.text))
    st.history.append(Message("user", WRAP_UP))
    return (yield from _wrap_up(ctx, spent))  # (the call exists because the budget is spent)


def _wrap_up(ctx: RunCtx, cause: str):
    """The one call with no tools after the budget (`cause`: its `budget.exhausted`); while
    it is due, `wrapping` says so, and a retry after its failure makes this call again."""
    st = ctx.state
    st.wrapping = cause
    final, replied = yield from _call_llm(ctx, ctx.comp.system, (), cause, _last_composed(ctx))
    if final is None:
        return replied
    st.wrapping = None
    _cut_short(ctx, replied)
    return _answer(ctx, "max_iterations", final.text, replied)


def _last_composed(ctx: RunCtx) -> str | None:
    """The newest `context.composed`: what the wrap-up call is sent (the last iteration's)."""
    trace = ctx.rec.trace
    for i in range(len(trace) - 1, -1, -1):
        if trace[i].kind == "context.composed":
            return trace[i].id
    return None


def _message_policy(ctx: RunCtx, moment: str, roots: dict,
                    cause: str = "") -> tuple[str | None, tuple[str, ...], tuple]:
    """(refusal reason or None, ids of the ledger rows, `(text,)` when links rewrote the
    message or answer) at the `input`/`output` boundary."""
    if not ctx.plan.policies:
        return None, (), ()
    from .policy import run_chain, steps
    if not steps(ctx.plan.policies, moment, None, False):  # (settled per chain and moment)
        return None, (), ()  # no link has a rule for this moment: nothing is walked or recorded
    env = Env(roots, frozenset(ctx.state.returned), frozenset(ctx.active_order))
    result = run_chain(ctx.plan.policies, moment, env, tool=None, call_id=None,
                       iteration=ctx.state.iteration, can_pause=False,
                       host=ctx.session.policy_host, evidence=False)
    rows = record_decisions(ctx, result.decisions, cause or ctx.state.start_event)
    if result.outcome == "allow":
        return None, rows, result.value
    d = result.deciding
    return (getattr(d, "reason", None) or f"refused by policy `{getattr(d, 'policy', '?')}`"), rows, ()


__all__ = ["CoreResult", "WRAP_UP", "run_core"]
