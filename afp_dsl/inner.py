"""Agents as tools: `impl = agent(NAME)` runs a whole inner run as one tool call.

Role:       called by the tool pipeline; the inner run shares the session (provider script,
            stubs, LLM call numbering) and is kept under the outer call id for `why`.
Emits:      the inner run's own trace (kept in a bounded LRU per tool, drops counted).
Invariants: the outer agent's redaction rules cover the inner run (joined with the inner
            agent's own, sharing remembered secrets; what the inner patterns match in the
            answer is remembered as it crosses); a pause inside surfaces as an outer pause;
            `Session.inner_sink` sees every inner trace, whatever `keep_runs` keeps.
"""
from __future__ import annotations

import json
from typing import Any

from . import ir
from .plan import plan_of, record_names
from .redaction import Redactor
from .recorder import Recorder, run_clock
from .runtime import RunCtx
from .state import RunState
from .trace import Event, Trace


def inner_message(schema: Any, args: dict) -> tuple[str, str | None]:
    """(the single string argument when the input has exactly one string field, else JSON;
    the name of that field, or None)."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    if len(props) == 1:
        (name, prop), = props.items()
        if isinstance(prop, dict) and prop.get("type") == "string" and isinstance(args.get(name), str):
            return args[name], name
    return json.dumps(args, separators=(",", ":"), ensure_ascii=False, sort_keys=True), None


def _keyed_message(red: Redactor, message: str, field: str | None) -> tuple[str, str | None]:
    """(the inner run's message, what its `run.started` records instead, or None): values of
    the arguments under redacted keys are redacted whatever their length (one too short to be
    remembered would otherwise be recorded raw), the single argument as the placeholder, the
    arguments' JSON by its keys; a `model = true` rule hides them from the inner model too."""
    if not red.has_key_rules:
        return message, None
    view = red.for_model()
    if field is None:
        recorded = red.scrub_json_keys(message)
        hidden = view.scrub_json_keys(message) if view is not None else message
        return hidden, (None if recorded == message else recorded)
    recorded = red.key_placeholder((field,))
    hidden = view.key_placeholder((field,)) if view is not None and recorded else None
    return (message if hidden is None else hidden), recorded


def _plan(ctx: RunCtx, info) -> Any:
    impl = info.decl.impl
    r = ctx.session.analysis.resolve(info.module, impl.agent)
    if r is None or not isinstance(r.decl, ir.Agent):
        return None
    plan = ctx.session.plans.get(r.decl.name)
    if plan is None:
        plan = ctx.session.plans[r.decl.name] = plan_of(ctx.session.analysis, r.decl, r.module)
    return plan


def _redactor(ctx: RunCtx, plan) -> Redactor:
    return ctx.redactor.joined(plan.redact)  # outer rules, inner rules, shared remembered secrets


def run_inner(ctx: RunCtx, call, args: dict, info):
    """Generator: ("ok", answer) | ("raise", exc) | ("fatal", message) | ("pause", checkin)."""
    from .interp import run_core
    plan = _plan(ctx, info)
    if plan is None:
        return "fatal", f"AFP501 tool `{call.name}` names an agent that does not exist"
    run_id = f"{ctx.state.run_id}/{call.id}"
    red = _redactor(ctx, plan)
    message, recorded = _keyed_message(red, *inner_message(info.schema, args))
    state = RunState(run_id, plan.name, message)
    trace = Trace(run_id)
    inner = RunCtx(ctx.session, plan, state, Recorder(trace, red, clock=_clock(ctx, 0),
                                                        names=record_names(plan)), red,
                   red.for_model(), parent=ctx, started_message=recorded)
    core = yield from run_core(inner)
    return _result(ctx, call, info, core, trace, red)


def _clock(ctx: RunCtx, start: int):
    """An inner run's clock: the Effects clock, from `start` (its own trace counts from 0)."""
    return run_clock(ctx.session.effects, start)


def resume_inner(ctx: RunCtx, call, info, checkin: dict, resume: dict):
    """Continue an inner run that paused, with the person's decision (already applied once)."""
    from .interp import run_core
    plan = _plan(ctx, info)
    data = checkin["inner_checkpoint"]
    state = RunState.from_checkpoint(data["state"])
    red = _redactor(ctx, plan)
    trace = Trace(state.run_id, [Event.from_dict(e) for e in checkin.get("inner_events", [])])
    inner = RunCtx(ctx.session, plan, state,
                   Recorder(trace, red, state.seq, state.time, _clock(ctx, state.time),
                            record_names(plan)), red,
                   red.for_model(), parent=ctx)
    core = yield from run_core(inner, {k: v for k, v in resume.items() if k != "checkin"})
    return _result(ctx, call, info, core, trace, red)


def _result(ctx: RunCtx, call, info, core, trace: Trace, red: Redactor):
    ctx.session.inner_runs(call.name, info.decl.keep_runs).put(trace.run_id, trace)
    # the answer crosses into the outer run raw (its error and check-in come redacted): what
    # the inner rules' patterns find in it is remembered, so the outer records scrub it too
    red.remember_matches(core.answer)
    if ctx.session.inner_sink is not None:  # (`afpc test` counts what `keep_runs` dropped too)
        ctx.session.inner_sink(trace)
    if core.outcome == "paused":
        from .toolcall import call_fingerprint
        outer_fp = call_fingerprint(call.name, call.id, dict(call.arguments))
        return "pause", {**core.checkin, "source": "inner", "inner_run": trace.run_id,
                         "fp": outer_fp, "inner_fp": core.checkin["fp"],
                         "inner_checkpoint": core.checkpoint,
                         "inner_events": [e.to_dict() for e in trace]}
    if core.outcome == "error":
        return "raise", RuntimeError(core.error or "the inner run failed")
    if core.outcome == "denied":  # its own input or output policy refused: the call is denied
        return "denied", core.answer or ""
    return "ok", core.answer or ""
