"""The policy moments of one tool call: the chain's walk at `before` / `after`, and its ledger rows.

Role:       `toolcall` asks `chain(...)` (or `walk(...)` on steps already looked up) and gets the
            chain's answer; every decision is recorded here as a `policy.decided` event, caused by
            the `tool.called` event. Split from `toolcall` along the pipeline's policy stages.
Emits:      policy.decided.
Invariants: the walk is `policy.walk_steps` (declaration order, reverse for `after`); a chain with
            no block for the moment and tool is not walked and records nothing; a walk of rule
            links whose checks all answer plainly and allow is settled from a program made once
            per steps tuple (`_settled`) and records the very rows the full walk records
            (tests/test_policy_settled.py).
"""
from __future__ import annotations

import operator
from typing import Any

from .policy import ALLOWED, walk_steps
from .providers.base import ToolCall
from .runtime import RunCtx


def roots(ctx: RunCtx, call: ToolCall, args: Any) -> dict:
    st = ctx.state
    return {"tool": call.name, "args": args, "message": st.message, "iteration": st.iteration,
            "skill": st.cursor}


def chain(ctx: RunCtx, moment: str, call: ToolCall, args: Any, cause: str, *,
          start_after: int = 0, can_pause: bool = True):
    plan = ctx.plan
    if not plan.policies:
        return ALLOWED
    found = plan.policy_steps(moment, call.name)  # (`after` walks in reverse: the onion order)
    if not found:
        return ALLOWED
    st = ctx.state  # (`roots`, inline)
    return walk(ctx, found, moment, call, {"tool": call.name, "args": args, "message": st.message,
                                           "iteration": st.iteration, "skill": st.cursor},
                cause, start_after, can_pause)


class _CallEnv(tuple):
    """The `Env` of one tool call's chain, quacking like `evaluate.Env`: `_CallEnv((roots, ctx))`.
    Speed: most walks only read `roots` (compiled checks), so the frozen copies of the returned
    tools and the active skills are made when an evaluation asks for them (the walk is
    synchronous: they hold what an `Env` built up front would); a tuple is made in C."""

    __slots__ = ()
    roots = property(operator.itemgetter(0))

    @property
    def returned(self) -> frozenset[str]:
        return frozenset(self[1].state.returned)

    @property
    def active(self) -> frozenset[str]:
        return frozenset(self[1].active_order)


def walk(ctx: RunCtx, found: tuple, moment: str, call: ToolCall, env_roots: dict, cause: str,
         start_after: int = 0, can_pause: bool = True):
    """The chain's answer for one call at `moment` over its `found` steps, its rows recorded.
    A walk settled by `_settled` answers `ALLOWED` (its rows are recorded, not returned)."""
    env = _env(_CallEnv, (env_roots, ctx))
    iteration = ctx.state.iteration
    if not start_after:
        prog = _PROGRAMS.get(id(found))
        if prog is None or prog[0] is not found or prog[1] != moment or prog[2] != call.name:
            prog = _program(found, moment, call.name)
        heads = _settled(prog[3], env) if prog[3] is not None else None
        if heads is not None:
            ctx.rec.emit_rows(heads, call.id, iteration, cause)
            return ALLOWED
    result = walk_steps(found, moment, env, call.name, call.id,
                        iteration, can_pause, ctx.session.policy_host, start_after,
                        False)  # (evidence: no ledger row records a rule's conditions)
    if result[1]:  # (`record_decisions`, inline: a walk that decides records its rows)
        emit, heads = ctx.rec.emit_shaped, _HEADS
        for d in result[1]:
            head = heads.get(d[:6]) or _head(d[:6])
            payload = head[0].copy()
            payload["call_id"] = call_id = d[6]
            payload["iteration"] = iteration
            emit("policy.decided", payload, head[1], call_id, iteration, d[2], cause)
    return result


# Speed: a chain of rule links only (no host link) at one moment for one tool, settled once per
# steps tuple: per link, the head of its quiet `allow` row and, per rule, its compiled check, the
# head of the row it makes when it holds, and whether that row allows. A walk where every check
# answers plain True or False and every rule that holds allows is then a function of those
# answers: the checks in walk order, the rows' heads picked, no decision objects (`_settled`).
# Anything else (an unsure check, a deny or an ask) walks again in full with `walk_steps`: the
# checks are pure functions of the env, so running them twice changes nothing. Keyed by the
# steps tuple's identity (kept alive by the entry); bounded.
_PROGRAMS: dict[int, tuple] = {}


def _program(found: tuple, moment: str, tool: str) -> tuple:
    links: list = []
    for index, policy, rule, cond in found:
        if rule is None:  # a host link: always the full walk
            links = None
            break
        if not links or links[-1][0] != index:
            links.append((index, _row_head("allow", policy.name, None, None, moment, tool), []))
        links[-1][2].append((cond.check, _row_head(rule.action, policy.name, rule.span,
                                                   rule.because, moment, tool),
                             rule.action == "allow"))
    prog = None if links is None else tuple((quiet, tuple(rules)) for _, quiet, rules in links)
    if len(_PROGRAMS) >= 4096:
        _PROGRAMS.clear()
    entry = _PROGRAMS[id(found)] = (found, moment, tool, prog)
    return entry


def _row_head(outcome: str, policy: str, span: Any, reason: Any, moment: str,
              tool: str) -> tuple:
    """(payload head, shape, source span) of the row of a decision (see `_head`)."""
    key = (outcome, policy, span, reason, moment, tool)
    head = _HEADS.get(key) or _head(key)
    return head[0], head[1], span


def _settled(prog: tuple, env: Any) -> list | None:
    """The row heads of a walk of `prog` (see `_PROGRAMS`), or None: walk it in full."""
    heads = []
    for quiet, rules in prog:
        for check, head, allows in rules:
            try:
                verdict = check(env)
            except Exception:
                return None
            if verdict is True:
                if not allows:
                    return None
                heads.append(head)
                break
            if verdict is not False:
                return None
        else:
            heads.append(quiet)
    return heads


_env = tuple.__new__  # Speed: a `_CallEnv` in one C call, without the class call's lookups


def record_decisions(ctx: RunCtx, decisions, cause: str) -> tuple[str, ...]:
    """One `policy.decided` ledger row per decision; returns their event ids."""
    emit, iteration, heads = ctx.rec.emit_shaped, ctx.state.iteration, _HEADS
    out = []
    for d in decisions:  # a row is a function of the decision's first six fields, its call id
        key = d[:6]  # and the iteration
        head = heads.get(key) or _head(key)
        payload = head[0].copy()
        payload["call_id"] = call_id = d[6]
        payload["iteration"] = iteration
        out.append(emit("policy.decided", payload, head[1], call_id, iteration, d[2], cause))
    return tuple(out)


# Speed: the part of a ledger row that is not its call id or iteration, settled once per
# (outcome, policy, rule span, reason, moment, tool): the payload with `call_id` and `iteration`
# still None (their keys in place, so the copy keeps the keys' order) and the row's shape for
# `is_clean_shaped`. Rows made from one head share its `rule` map; a recorded payload is never
# changed. Only heads made of declarations are kept (a rule's row, or a row without a reason): a
# host link's reason is run data, which a cache should not keep alive for other runs. Bounded.
_HEADS: dict[tuple, tuple[dict, tuple]] = {}


def _head(key: tuple) -> tuple[dict, tuple]:
    outcome, policy, span, reason, moment, tool = key
    payload = {"policy": policy, "moment": moment, "tool": tool, "call_id": None,
               "iteration": None, "outcome": outcome, "reason": reason,
               "rule": None if span is None else {"file": span.file, "start": span.start,
                                                  "end": span.end}}
    head = (payload, key + (type(tool),))
    if span is not None or reason is None:
        if len(_HEADS) >= 4096:
            _HEADS.clear()
        _HEADS[key] = head
    return head


def reason(chain) -> str:
    d = chain.deciding
    reason = getattr(d, "reason", None) or "no reason given"
    return f"Denied by policy `{getattr(d, 'policy', '?')}`: {reason}"
