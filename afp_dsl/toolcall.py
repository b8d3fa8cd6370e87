"""The tool pipeline, one call at a time, in the order of semantics §7.

Role:       unknown or not-offered tool → before-policies → argument validation → check-in →
            execute (stub, host binding, `returns`, `python(...)`, inner agent) → envelopes →
            read_skill gate and steps → after-policies (reverse) → `tool.returned`.
Emits:      tool.called, tool.args_invalid, policy.decided, step.advanced, tool.returned
            (the built-ins' events come from `toolcall_builtins`); AFP501 (tool-not-bound) as
            a run error (`toolcall_execute` runs the tool).
Invariants: never runs a tool not offered to the reply that called it (but a step's tool that
            an earlier call of the reply made current); never echoes argument
            values in validation messages; `after` runs for every executed call (failures too),
            and an after-deny replaces what the model reads while the record keeps the real
            result; errors never advance steps;
            whatever host code returns or raises (`sys.exit` included) becomes a result or a
            failure, never a crash; a result with no JSON form is a failure, never a repr.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from . import skills as sk
from .evaluate import Env, evaluate
from .argcheck import MAX_PROBLEMS, arg_problems, invalid_text, non_finite, plainly_valid
from .envelopes import read_result
from .frozen import thaw
from .providers.base import ToolCall, UnreadCall
from . import toolcall_policy as pol
from .runtime import RunCtx, plain
from .redaction_json import opens_json
from .trace import dumps
from .call_outcome import CallOutcome
from . import toolcall_builtins as bi
from .toolcall_execute import _execute, _executed

CALLED_KEYS = ("tool", "call_id", "args")  # the keys of a `tool.called` payload
# the keys of a `tool.returned` payload besides its tool and call id (those are the reply's)
RETURNED_KEYS = ("status", "executed", "result", "duration")
READ_KEYS = RETURNED_KEYS + ("read",)


def call_fingerprint(tool: str, call_id: str, args: Any) -> str:
    text = dumps({"tool": tool, "id": call_id, "args": args})  # (a lone surrogate is JSON too)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(thaw(value), separators=(",", ":"), ensure_ascii=False, default=str)


# ---------------------------------------------------------------- entry point
def dispatch(ctx: RunCtx, call: ToolCall, cause: str, resume: dict | None = None):
    """Generator: run one tool call through the pipeline; returns a `CallOutcome`. `cause` is
    the `llm.replied` whose payload holds `call` (its `tool.called` is vouched for by it, see
    the `vouch` of `Recorder.emit`)."""
    args = plain(call.arguments) if call.arguments is not None else {}
    info = ctx.plan.tools.get(call.name)
    source = info.decl.span if info is not None else None
    if resume is not None and resume["checkin"].get("called"):
        called = resume["checkin"]["called"]
    else:
        called = ctx.rec.emit_vouched("tool.called", {"tool": call.name, "call_id": call.id,
                                                      "args": args},
                                      cause, ctx.state.iteration, source, cause)
    if call.name in sk.BUILTINS and call.name not in ctx.plan.tools and bi.has_builtin(ctx, call.name):
        return _finish(ctx, call, args, _builtin(ctx, call, args, called), called, cause)
    if info is None:
        return _finish(ctx, call, args, _unknown(ctx, call), called, cause)
    if (resume is None and ctx.comp is not None and call.name not in ctx.comp.names
            and not _step_now(ctx, call.name)):
        return _finish(ctx, call, args, _not_offered(ctx, call), called, cause)
    if type(call) is UnreadCall:  # (no arguments to show a policy or a person: stage 3 at once)
        return _finish(ctx, call, args, _unreadable(ctx, call, info, called), called, cause)
    if resume is not None:
        _restore_offered(ctx, resume["checkin"])
        out = yield from _resumed(ctx, call, args, info, resume, called)
    else:
        out = yield from _fresh(ctx, call, args, info, called)
    if out.pause is not None:
        comp = ctx.comp
        offered = sorted(comp.names) if comp is not None else None
        procs = [[s.name, k] for s, k in comp.procedures] if comp is not None else []
        active = list(comp.active) if comp is not None else []
        return attrs.evolve(out, pause={**out.pause, "called": called, "offered": offered,
                                        "procedures": procs, "active": active})
    if out.fatal is not None:
        return out
    return _finish(ctx, call, args, out, called, cause)


def _builtin(ctx: RunCtx, call: ToolCall, args: dict, called: str) -> CallOutcome:
    """A built-in's call (`read_skill`, `skip_step`) through the pipeline of semantics §7: the
    `before` policies (a `before *` block sees every call; a block may name a built-in), the
    built-in itself (its arguments, the gate), then, when it succeeded, the `after` policies;
    a skip is applied only once they passed it (semantics §5: denials never advance).
    It cannot pause: nothing runs that a person must approve, so an `ask` on it is a denial
    (semantics §8, an ask no pause can carry)."""
    chain = pol.chain(ctx, "before", call, args, called, can_pause=False)
    if chain.outcome != "allow":
        return CallOutcome("denied", pol.reason(chain))
    used = chain.value[0] if chain.value else args  # (as the links handed them on)
    out = bi.builtin(ctx, call, used, called)
    if out.status != "success":  # (a refused pick, invalid arguments: nothing for `after`)
        return out
    out = _after(ctx, call, used, out, called)
    if call.name == sk.SKIP_STEP and out.status == "success":  # (a denied skip moves nothing)
        bi.commit_skip(ctx, used, called)
    return out


def _unknown(ctx: RunCtx, call: ToolCall) -> CallOutcome:
    """Pipeline stage 1: a tool the agent does not have; the model reads the tools it has."""
    names = ", ".join(o.spec.name for o in ctx.comp.offered) if ctx.comp else ""
    why = {sk.READ_SKILL: "this agent has no skills",
           sk.SKIP_STEP: "this agent has no procedure"}.get(call.name, "there is no tool with that name")
    return CallOutcome("invalid", f"Unknown tool `{call.name}`: {why}. Your tools are: {names or 'none'}.")


def _step_now(ctx: RunCtx, tool: str) -> bool:
    """A tool the reply was not offered, but whose step an earlier call of the reply made the
    current one (semantics §5: the current step's tool advances the pointer)."""
    comp = ctx.comp
    return bool(comp.procedures) and sk.moved_to(tool, comp.procedures, ctx.state.steps)


def _not_offered(ctx: RunCtx, call: ToolCall) -> CallOutcome:
    """A tool of the agent that the reply's iteration did not offer (an inactive skill's, a
    later step's): refused unexecuted. (A resumed call was checked before it paused.)"""
    comp = ctx.comp
    moved = sk.moved_on(call.name, comp.procedures, ctx.state.steps) if comp.procedures else None
    if moved is not None:
        return CallOutcome("invalid", moved)
    st = ctx.state
    if st.opened or st.pick is not None:
        loaded = sk.loaded_meanwhile(ctx.plan, call.name, comp.active,
                                     st.opened + ([st.pick] if st.pick else []))
        if loaded is not None:
            return CallOutcome("invalid", loaded)
    text = sk.not_offered(ctx.plan, call.name, comp.active, comp.procedures,
                          [o.spec.name for o in comp.offered])
    return CallOutcome("invalid", text)


def _restore_offered(ctx: RunCtx, checkin: dict) -> None:
    """On resume, the rest of the batch is judged by the tools offered to the reply that made it,
    not by the recomposed ones (earlier calls of the batch may have opened a skill or advanced a
    step); kept in the check-in, which the checkpoint holds."""
    offered = checkin.get("offered")
    if ctx.comp is not None and isinstance(offered, list):
        ctx.comp = attrs.evolve(ctx.comp, names=frozenset(offered))
    active = checkin.get("active")  # (the skills the reply saw active: a refusal names them)
    if ctx.comp is not None and isinstance(active, list):
        ctx.comp = attrs.evolve(ctx.comp, active=tuple(n for n in active if isinstance(n, str)))
    procs = checkin.get("procedures")  # (the steps the reply saw: a refusal names them)
    if ctx.comp is not None and isinstance(procs, list):
        skills = ctx.plan.skills
        ctx.comp = attrs.evolve(ctx.comp, procedures=tuple(
            (skills[p[0]], p[1]) for p in procs if isinstance(p, list) and len(p) == 2
            and p[0] in skills and type(p[1]) is int and 0 <= p[1] < len(skills[p[0]].steps)))


def _fresh(ctx: RunCtx, call: ToolCall, args: dict, info, called: str):
    chain = pol.chain(ctx, "before", call, args, called)
    used = chain.value[0] if chain.value else args  # (as the links handed them on)
    if chain.outcome == "deny":
        return CallOutcome("denied", pol.reason(chain))
    if chain.outcome == "ask":
        d = chain.deciding
        return _pause(ctx, call, args, "policy", d.reason or f"policy `{d.policy}` asks",
                      policy=d.policy, span=d.rule_span, link=chain.deciding_index, used=used)
    # Speed: stages 3 to 5 as `_checked` runs them, inline (one generator frame fewer per call)
    bad = _validate(ctx, call, used, info, called)
    if bad is not None:
        return bad
    asks = _tool_check_in(ctx, call, args, info, "", used)
    if asks is not None:
        return asks
    return (yield from _run(ctx, call, used, info, called))


def _checked(ctx: RunCtx, call: ToolCall, args: dict, used: Any, info, called: str, suffix: str = ""):
    """Stages 3 to 5 on the arguments the `before` links handed on (`used`; `args` are the
    model's, which a pause's fingerprint is taken of): validation, the tool's check-in, the run."""
    bad = _validate(ctx, call, used, info, called)
    if bad is not None:
        return bad
    asks = _tool_check_in(ctx, call, args, info, suffix, used)
    if asks is not None:
        return asks
    return (yield from _run(ctx, call, used, info, called))


def _tool_check_in(ctx: RunCtx, call: ToolCall, args: dict, info,
                   suffix: str = "", used: Any = None) -> CallOutcome | None:
    """Stage 4 of the pipeline: the tool's own `check_in` pauses the call when it holds (or
    cannot be evaluated). `suffix` tells its check-in apart from a policy's `ask`, approved
    already for the same call. It reads the arguments the `before` links handed on."""
    if info.decl.check_in is None:
        return None
    used = args if used is None else used
    ev = evaluate(info.decl.check_in, Env(pol.roots(ctx, call, used)))
    if not (ev.holds or ev.error):
        return None
    return _pause(ctx, call, args, "tool", f"`{call.name}` asks for a decision before it runs",
                  span=_check_in_span(info.decl), suffix=suffix, used=used)


def _resumed(ctx: RunCtx, call: ToolCall, args: dict, info, resume: dict, called: str):
    checkin = resume["checkin"]
    if checkin["source"] == "inner":  # the inner run takes the decision, approve or decline
        from .inner import resume_inner
        kind, value = yield from resume_inner(ctx, call, info, checkin, resume)
        return _outcome(ctx, call, args, info, called, kind, value)
    if resume["decision"] != "approve":
        note = resume.get("note")
        note = note.strip() if isinstance(note, str) else None  # (a blank note says nothing)
        text = "declined by human" + (f": {note}" if note else "")
        return CallOutcome("denied", f"Not executed: {text}.")
    used = checkin.get("args", args)  # (as the `before` links had handed them on)
    if checkin["source"] == "policy":
        chain = pol.chain(ctx, "before", call, used, called, start_after=checkin["link"] + 1,
                          can_pause=False)
        if chain.outcome != "allow":
            return CallOutcome("denied", pol.reason(chain))
        used = chain.value[0] if chain.value else used
        return (yield from _checked(ctx, call, args, used, info, called, ":tool"))  # stage 4: its own gate
    return (yield from _run(ctx, call, used, info, called))


def _check_in_span(tool) -> Any:
    """Where a tool's own check-in was declared: its `check_in` condition (`true`, or
    `args.amount > 100`); the tool's name if that has no span (an IR built by hand)."""
    return getattr(tool.check_in, "span", None) or tool.span


def _pause(ctx: RunCtx, call: ToolCall, args: dict, source: str, question: str, *,
           policy: str | None = None, span=None, link: int = -1, suffix: str = "",
           used: Any = None) -> CallOutcome:
    """The check-in of a paused call: its fingerprint is of the model's arguments (`args`, which
    a resume matches); `used`, when the `before` links rewrote them, is what the call goes on
    with, kept as the check-in's `args`."""
    checkin = {"id": f"{ctx.state.run_id}:{ctx.state.iteration}:{_safe_id(ctx, call.id)}{suffix}",
               "tool": call.name,
               "call_id": call.id, "source": source, "question": question, "policy": policy,
               "link": link, "fp": call_fingerprint(call.name, call.id, args),
               "span": None if span is None else [span.file, span.start, span.end]}
    if used is not None and used is not args:
        checkin["args"] = used
    return CallOutcome("pending", "", pause=checkin)


def _safe_id(ctx: RunCtx, call_id: str) -> str:
    """The call id as a check-in id may hold it: the id is recorded, stored and printed, so a
    secret in the provider's call id (semantics §9) is scrubbed, and a digest of the real id
    keeps two scrubbed ids of one turn apart (the store's `fp` is such a digest already)."""
    safe = ctx.redactor.scrub_text(call_id)
    if safe == call_id:
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe}~{digest}"


# ---------------------------------------------------------------- validation
def _unreadable(ctx: RunCtx, call: ToolCall, info, called: str) -> CallOutcome:
    """Pipeline stage 3 for arguments the adapter could not read (`ToolCall.problem`)."""
    problems = [f"arguments: {call.problem}"]
    ctx.emit("tool.args_invalid", {"tool": call.name, "call_id": call.id, "problems": problems},
             source=info.decl.span, caused_by=(called,))
    return CallOutcome("invalid", invalid_text(call.name, problems))


def _validate(ctx: RunCtx, call: ToolCall, args: Any, info, called: str) -> CallOutcome | None:
    bad = non_finite(args)
    if not bad and plainly_valid(info, args):
        return None
    problems = (bad + arg_problems(info.validator, args))[:MAX_PROBLEMS]
    if not problems:
        return None
    ctx.emit("tool.args_invalid", {"tool": call.name, "call_id": call.id, "problems": problems},
             source=info.decl.span, caused_by=(called,))
    return CallOutcome("invalid", invalid_text(call.name, problems))


# ---------------------------------------------------------------- execution
def _run(ctx: RunCtx, call: ToolCall, args: dict, info, called: str):
    kind, value = yield from _execute(ctx, call, args, info)
    return _outcome(ctx, call, args, info, called, kind, value)


def _outcome(ctx: RunCtx, call: ToolCall, args: dict, info, called: str, kind: str,
             value: Any) -> CallOutcome:
    if kind == "fatal":
        return CallOutcome("failure", value, fatal=value)
    if kind == "pause":
        return CallOutcome("pending", "", pause=value)
    ctx.state.executions[call.name] = ctx.state.executions.get(call.name, 0) + 1
    return _after(ctx, call, args, _executed(call, info, kind, value), called)


def _after(ctx: RunCtx, call: ToolCall, args: dict, out: CallOutcome, called: str) -> CallOutcome:
    if not ctx.plan.policies:
        return out
    chain = pol.chain(ctx, "after", call, args, called, out=out, can_pause=False)  # no pause here
    if chain.outcome == "allow":
        if chain.value:  # what the model reads; the record keeps the real result
            return attrs.evolve(out, text=read_result(chain.value[0])[1])
        return out
    return attrs.evolve(out, status="denied", text=pol.reason(chain))


# The statuses of a step tool that did its work (semantics §5: a successful result advances):
# an absence (`afp.absent`) and a partial coverage are answers, not errors (§7 stage 6).
_ANSWERED = frozenset(("success", "absent", "partial"))


def _finish(ctx: RunCtx, call: ToolCall, args: dict, out: CallOutcome, called: str,
            cause: str) -> CallOutcome:
    """Record the call's `tool.returned`; its name and id are in `cause`, the reply's
    `llm.replied` (vouched for as the `tool.called` is, see the `vouch` of `Recorder.emit`)."""
    text = out.text
    if out.status in _ANSWERED and call.name not in sk.BUILTINS:
        suffix = _step_advance(ctx, call, called)
        text = text + suffix if text else suffix.lstrip()  # (no leading space after nothing)
    status, executed, result = out.status, out.executed, plain(out.result)
    now = ctx.rec.next_time()
    at = ctx.rec.trace.index(called)  # (read twice below: the call's time, what followed it)
    duration = now - (ctx.rec.time if at is None else ctx.rec.trace[at].time)  # (in ticks)
    payload = {"tool": call.name, "call_id": call.id, "status": status, "executed": executed,
               "result": result, "duration": duration}
    red = ctx.redactor
    keyed = red.has_key_rules  # (values under redacted keys in JSON text, whatever their length)
    raw = out.result  # Speed: the quick test of `learn_json_text` and `opens_json`, once inline
    if keyed and type(raw) is str and raw[:1] in _JSON_OPENS:  # (most results are not JSON text)
        red.learn_json_text(raw)  # (before recording: JSON text holds keys too)
        if opens_json(result):
            result = payload["result"] = red.scrub_json_keys(result, at="tool.returned.result")
    if out.result is None or to_text(out.result) != text:
        read = payload["read"] = red.scrub_json_keys(text, at="tool.returned.read") if keyed else text
        keys, values = READ_KEYS, (status, executed, result, duration, read)
    else:
        keys, values = RETURNED_KEYS, (status, executed, result, duration)
    info = ctx.plan.tools.get(call.name)
    eid = ctx.rec.emit_vouched_plus("tool.returned", payload, cause, keys, values,
                                    ctx.state.iteration, info.decl.span if info else None,
                                    (called,) + _decisions_since(ctx, called, at))
    if ctx.state.pick_event == called:  # (a pick's cause is its acceptance, semantics §4)
        ctx.state.pick_event = eid
    return attrs.evolve(out, text=text, event=eid)


_JSON_OPENS = frozenset("{[ \t\n\r")  # (how JSON text opens: `redaction_json.opens_json`)
_ON_THE_WAY = ("policy.decided", "tool.args_invalid", "checkin.decided", "skill.rejected",
               "step.skipped", "step.advanced")


def _decisions_since(ctx: RunCtx, called: str, at: int | None) -> tuple[str, ...]:
    """Ids of the decisions recorded for this call (policy rows, invalid args, check-ins) after
    its `tool.called`, at position `at` of the trace (None: not in it)."""
    if at is None:
        return ()
    out: list[str] = []
    decided = None  # (a person's answer; the asking link's ledger row cites it, not the call)
    for e in ctx.rec.trace.since(at):
        if e.kind == "checkin.decided":
            decided = e.id
        elif e.kind not in _ON_THE_WAY or called not in e.caused_by and decided not in e.caused_by:
            continue
        out.append(e.id)
    return tuple(out)


def _step_advance(ctx: RunCtx, call: ToolCall, called: str) -> str:
    """Advance the first running procedure (the cursor's first) whose current step is this tool."""
    for skill, k in sk.procedures(ctx.plan, ctx.active_order, ctx.state.steps):
        if skill.steps[k].tool == call.name:
            return _advance(ctx, skill, k, called)
    return ""


def _advance(ctx: RunCtx, skill, k: int, called: str) -> str:
    ctx.state.steps[skill.name] = k + 1
    nxt = skill.steps[k + 1].tool if k + 1 < len(skill.steps) else None
    ctx.emit("step.advanced", {"skill": skill.name, "step": k + 1, "of": len(skill.steps),
                               "next": nxt}, source=skill.steps[k].span, caused_by=(called,))
    return sk.advance_suffix(skill, k)
