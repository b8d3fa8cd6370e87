"""The built-in tools: `read_skill` (the skill gate) and `skip_step` (procedures).

Role:       the tool pipeline's stage for built-ins (`toolcall.dispatch` hands them here when
            the agent has them: `read_skill` with any skill, `skip_step` with a procedure);
            split from `toolcall`.
Emits:      tool.args_invalid, skill.rejected, step.skipped (`commit_skip`, once the `after`
            links passed the skip).
Invariants: a pick the gate refuses never moves the cursor or opens a skill; a skip needs a
            non-empty reason and a running procedure, and a skip an `after` link denies moves
            nothing and records no `step.skipped`; arguments are never echoed.
"""
from __future__ import annotations

from typing import Any

from . import skills as sk
from .argcheck import arg_problems, invalid_text
from .call_outcome import CallOutcome
from .providers.base import ToolCall
from .runtime import RunCtx


def has_builtin(ctx: RunCtx, name: str) -> bool:
    """`read_skill` exists for an agent with skills, `skip_step` for one with a procedure."""
    skills = ctx.plan.skills
    if name == sk.READ_SKILL:
        return bool(skills)
    return any(info.steps for info in skills.values())


def builtin(ctx: RunCtx, call: ToolCall, args: dict, called: str) -> CallOutcome:
    if call.name == sk.READ_SKILL:
        return _read_skill(ctx, call, args, called)
    return _skip_step(ctx, call, args, called)


def _validator(schema: dict) -> Any:
    """A built-in's validator, cached per schema object (`skip_step`'s is a constant unless
    several procedures run; a `read_skill` pick is checked this way only when it is not plain).
    Keyed by identity; the entry keeps its schema alive. Bounded."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        from jsonschema import Draft202012Validator
        if len(_VALIDATORS) >= 256:
            _VALIDATORS.clear()
        hit = _VALIDATORS[id(schema)] = (schema, Draft202012Validator(schema))
    return hit[1]


_VALIDATORS: dict[int, tuple[dict, Any]] = {}


def _read_skill(ctx: RunCtx, call: ToolCall, args: Any, called: str) -> CallOutcome:
    plan = ctx.plan
    if not (type(args) is dict and type(args.get("id")) is str and args["id"] in plan.skills):
        # (the plain pick above is what its schema accepts: an object whose `id` names a skill)
        bad = _invalid_args(ctx, call, args, sk.read_skill_spec(plan, ctx.state.cursor).schema,
                            called)
        if bad is not None:
            return bad
    wanted = args["id"]
    g = sk.gate(plan, ctx.state.cursor, wanted)
    if not g.accepted:
        ctx.emit("skill.rejected", {"requested": wanted, "cursor": ctx.state.cursor,
                                    "allowed": list(g.allowed)},
                 source=plan.skills[wanted].decl.span, caused_by=(called,))
        return CallOutcome("invalid", g.text, executed=False, result={"id": wanted})
    if g.kind == "open":
        if wanted not in ctx.state.opened:
            ctx.state.opened.append(wanted)
    else:
        ctx.state.pick = wanted
        ctx.state.pick_event = called  # the read_skill call, until its tool.returned is recorded
    return CallOutcome("success", g.text, executed=False, result={"id": wanted, "kind": g.kind})


def _invalid_args(ctx: RunCtx, call: ToolCall, args: Any, schema: dict,
                  called: str) -> CallOutcome | None:
    """A built-in's arguments checked against the schema it is offered with, as any tool's are:
    `tool.args_invalid` and the standard text when they do not fit, else None."""
    problems = arg_problems(_validator(schema), args)
    if not problems:
        return None
    ctx.emit("tool.args_invalid", {"tool": call.name, "call_id": call.id, "problems": problems},
             caused_by=(called,))
    return CallOutcome("invalid", invalid_text(call.name, problems))


def _skip_step(ctx: RunCtx, call: ToolCall, args: Any, called: str) -> CallOutcome:
    """The skip checked, and its text, but not applied: `commit_skip` applies it once the
    `after` links have passed it (semantics §5: a denial never advances)."""
    running = sk.procedures(ctx.plan, ctx.active_order, ctx.state.steps)
    if not running:
        return CallOutcome("invalid", sk.NO_PROCEDURE)
    bad = _invalid_args(ctx, call, args, sk.skip_step_spec(running).schema, called)
    if bad is not None:  # (stage 3 of the pipeline, as for any tool: before any bookkeeping)
        return bad
    proc = sk.skip_target(running, args.get("skill"))
    if isinstance(proc, str):
        return CallOutcome("invalid", proc)
    reason = args.get("reason")
    skill, k = proc
    if not isinstance(reason, str) or not reason.strip():
        return CallOutcome("invalid", sk.needs_reason(k))
    last = k + 1 >= len(skill.steps) and skill.decl.on_skip != "hold"
    return CallOutcome("success", sk.skip_text(skill, k, reason,
                                               _skipped(ctx, skill.name, k) if last else 1))


def commit_skip(ctx: RunCtx, args: dict, called: str) -> None:
    """Apply a skip `_skip_step` accepted and the `after` links passed: move the pointer (with
    `on_skip = "advance"`) and record `step.skipped`."""
    running = sk.procedures(ctx.plan, ctx.active_order, ctx.state.steps)
    skill, k = sk.skip_target(running, args.get("skill"))  # (checked by `_skip_step`)
    policy = skill.decl.on_skip
    if policy != "hold":
        ctx.state.steps[skill.name] = k + 1
    ctx.emit("step.skipped", {"skill": skill.name, "step": k + 1, "tool": skill.steps[k].tool,
                              "reason": args["reason"], "policy": policy},
             source=skill.steps[k].span, caused_by=(called,))


def _skipped(ctx: RunCtx, skill: str, k: int) -> int:
    """How many of the `k + 1` steps of `skill`'s procedure were skipped, the one being skipped
    now included: its last `k` step events (one per step: an advance, or a skip that moved
    on) tell, read back from the trace."""
    seen, skipped = 0, 1
    for e in reversed(ctx.rec.trace.events):
        if seen >= k:
            break
        p = e.payload
        if e.kind in ("step.advanced", "step.skipped") and p.get("skill") == skill \
                and p.get("policy") != "hold":
            seen += 1
            skipped += e.kind == "step.skipped"
    return skipped
