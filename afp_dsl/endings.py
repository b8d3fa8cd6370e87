"""How a run ends: `run.finished` with its totals, the checkpoint, and failures made resumable.

Role:       `finish` records an outcome; `checkpoint` is the raw resume state; a provider failure
            or a host failure (AFP501) ends with `error` and, after a completed iteration, the
            checkpoint of the last completed iteration (`RunState.rewind`), or of the wrap-up
            phase when the wrap-up call failed (semantics §1, §6, §10).
Emits:      run.finished (an `error` one has `error_type`: the provider error's kind or its
            class name, `AFP501` for a host failure), redaction.applied; tool.returned (status
            `failure`, not executed) for the call a host failure stopped.
Invariants: totals count every `llm.called` and `tool.called` of the trace, failed ones too; a
            checkpoint is taken after `run.finished`, so a retry's events never reuse its seq.
"""
from __future__ import annotations

import attrs

from .providers.base import error_kind
from .runtime import RunCtx
from .state import CHECKPOINT_VERSION
from .toolcall_execute import exception_text


@attrs.frozen
class CoreResult:
    outcome: str  # answered | paused | max_iterations | denied | error
    answer: str | None = None
    checkin: dict | None = None
    error: str | None = None
    checkpoint: dict | None = None


def finish(ctx: RunCtx, outcome: str, answer: str | None, *, error: str | None = None,
           error_type: str | None = None, checkpoint: dict | None = None,
           causes: tuple[str, ...] = ()) -> CoreResult:
    st = ctx.state
    payload = {"outcome": outcome, "answer": answer, "iterations": st.iteration,
               "llm_calls": st.llm_calls, "tool_calls": st.tool_calls,
               "tokens": [st.tokens_in, st.tokens_out], "executions": dict(st.executions),
               "cursor": st.cursor}
    if error:
        payload["error"] = error
    if error_type:
        payload["error_type"] = error_type
    redaction_report(ctx, causes or (st.start_event,))
    ctx.emit("run.finished", payload, caused_by=causes)
    return CoreResult(outcome, answer, error=error, checkpoint=checkpoint)


def redaction_report(ctx: RunCtx, causes: tuple[str, ...]) -> None:
    """Record that redaction happened (counts per rule, paths), never what was redacted."""
    report = ctx.redactor.report()
    if report.total:
        ctx.emit("redaction.applied", {"counts": dict(report.counts), "paths": list(report.paths),
                                       "paths_dropped": report.paths_dropped}, caused_by=causes)


def checkpoint(ctx: RunCtx) -> dict:
    st = ctx.state
    st.seq, st.time = ctx.rec.seq, ctx.rec.time
    data = {"version": CHECKPOINT_VERSION, "agent": ctx.plan.name, "state": st.to_checkpoint()}
    remembered = ctx.redactor.memory_state()
    if remembered["values"]:  # every secret the run remembered, its inner runs' too (raw, as
        data["remembered"] = remembered  # the history is: the resumed run scrubs them again)
    return data


# ---------------------------------------------------------------- failures
def provider_failed(ctx: RunCtx, exc: Exception, called: str, call: int) -> CoreResult:
    """AFP502: the model call `called` (the session's call number `call`) failed."""
    st = ctx.state
    message = ctx.redactor.scrub_text(f"AFP502 provider error on LLM call "
                                      f"#{call}: {exception_text(exc)}")
    # (a wrap-up call follows a completed call whatever the budget: `max_iterations = 1` too)
    return _failed(ctx, message, error_kind(exc), (called,),
                   (st.iteration > 1 or st.wrapping is not None) and st.pending is None)


def host_failed(ctx: RunCtx, call, message: str) -> CoreResult:
    """AFP501: the call that found no body to run gets its `tool.returned`, then the run ends."""
    st = ctx.state
    message = ctx.redactor.scrub_text(message)
    info = ctx.plan.tools.get(call.name)
    returned = ctx.emit("tool.returned", {  # (no `duration`: nothing ran)
        "tool": call.name, "call_id": call.id, "status": "failure", "executed": False,
        "result": {"error": message}}, source=info.decl.span if info else None,
        caused_by=(_called(ctx, call.id) or st.pending.reply_event,))
    st.tool_calls += 1
    return _failed(ctx, message, "AFP501", (returned,), st.iteration > 1)


def _failed(ctx: RunCtx, message: str, kind: str, causes: tuple[str, ...],
            resumable: bool) -> CoreResult:
    result = finish(ctx, "error", None, error=message, error_type=kind, causes=causes)
    st = ctx.state
    if not resumable or (st.wrapping is None and not st.rewind()):
        return result
    return attrs.evolve(result, checkpoint=checkpoint(ctx))


def _called(ctx: RunCtx, call_id: str) -> str | None:
    """The id of the `tool.called` of `call_id` (recorded just before)."""
    for e in ctx.rec.trace.latest(64):
        if e.kind == "tool.called" and isinstance(e.payload, dict) \
                and e.payload.get("call_id") == call_id:
            return e.id
    return None


__all__ = ["CoreResult", "checkpoint", "finish", "host_failed", "provider_failed",
           "redaction_report"]
