"""The policy chain: rule-based and host-bound links deciding allow, deny or ask at one moment.

Role:       pure; the interpreter calls `run_chain` at `input`, `before`, `after` and `output`,
            supplying the expression env and a resolver for `python(...)` bindings.
Emits:      `PolicyDecision` rows (the interpreter records each as a `policy.decided` event).
Invariants: declaration order (`after` walks it in reverse); the first non-allow answer wins and
            later links do not run; a link that raises, an expression that cannot be evaluated,
            an `ask` where no pause can carry it, and any answer outside the vocabulary are
            denials; a link with nothing to say for the moment records nothing.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from . import ir
from .evaluate import Condition, Env, evaluate, shorten
from .source import Span

OUTCOMES = ("allow", "deny", "ask")
CTX_ROOTS = ("tool", "args", "message", "iteration", "skill", "result", "status", "text")

HostResolver = Callable[[ir.PythonImpl], Callable[[dict], Any]]


@attrs.frozen
class PolicyDecision:
    """One link's decision; also the ledger row the trace records.

    `conditions` is the evidence of the rule that decided (empty for host-bound links).
    """

    outcome: str
    policy: str
    rule_span: Span | None
    reason: str | None
    moment: str
    tool: str | None
    call_id: str | None
    iteration: int
    conditions: tuple[Condition, ...] = ()


@attrs.frozen
class ChainResult:
    """The chain's answer. `deciding` is the non-allow decision (None when everything allowed);
    `deciding_index` is that link's position in walk order (a resume passes it + 1 as
    `start_after`)."""

    outcome: str
    decisions: tuple[PolicyDecision, ...]
    deciding: PolicyDecision | None
    deciding_index: int | None = None


@attrs.frozen
class _Call:
    moment: str
    env: Env
    tool: str | None
    call_id: str | None
    iteration: int
    can_pause: bool
    host: HostResolver | None

    def decision(self, policy: ir.Policy, outcome: str, reason: str | None, span: Span | None,
                 conditions: tuple[Condition, ...] = ()) -> PolicyDecision:
        return PolicyDecision(outcome, policy.name, span, reason, self.moment, self.tool,
                              self.call_id, self.iteration, conditions)


def run_chain(policies: Sequence[ir.Policy], moment: str, env: Env, *, tool: str | None,
              call_id: str | None, iteration: int, can_pause: bool,
              host: HostResolver | None, start_after: int = 0,
              reverse: bool | None = None) -> ChainResult:
    """Walk the chain for one moment and return the outcome with the ledger rows it produced.

    `reverse` defaults to True for `after` (the onion order) and False otherwise. `start_after`
    is how many links, in walk order, to skip: a resumed dispatch passes the asking link's
    `deciding_index + 1` (and `can_pause=False`: one question per resume).
    """
    if reverse is None:
        reverse = moment == "after"
    call = _Call(moment, env, tool, call_id, iteration, can_pause, host)
    chain = list(reversed(policies)) if reverse else list(policies)
    rows: list[PolicyDecision] = []
    for index in range(max(0, start_after), len(chain)):
        row = _run_link(chain[index], call)
        if row is None:
            continue
        rows.append(row)
        if row.outcome != "allow":
            return ChainResult(row.outcome, tuple(rows), row, index)
    return ChainResult("allow", tuple(rows), None)


def _run_link(policy: ir.Policy, call: _Call) -> PolicyDecision | None:
    try:
        if policy.impl is not None:
            row = _run_host(policy, policy.impl, call)
        else:
            row = _run_rules(policy, call)
    except Exception as exc:  # law: a link that raises is a denial with the exception's message
        span = policy.impl.span if policy.impl is not None else policy.span
        return call.decision(policy, "deny", _exc_text(exc), span)
    if row is not None and row.outcome == "ask" and not call.can_pause:
        reason = (f"policy `{policy.name}` asked a person to decide, and there is no pause here "
                  f"to carry that ask: {row.reason or 'no question given'}")
        return attrs.evolve(row, outcome="deny", reason=reason)
    return row


# ---------------------------------------------------------------- rule policies
def _run_rules(policy: ir.Policy, call: _Call) -> PolicyDecision | None:
    for block in policy.blocks:
        if not _block_applies(block, call):
            continue
        for rule in block.rules:
            out = evaluate(rule.when, call.env)
            if out.error is not None:
                reason = f"policy `{policy.name}`: the condition could not be evaluated: {out.error}"
                return call.decision(policy, "deny", reason, rule.span, out.conditions)
            if out.holds:
                return call.decision(policy, rule.action, rule.because, rule.span, out.conditions)
    return None


def _block_applies(block: ir.PolicyBlock, call: _Call) -> bool:
    if block.moment != call.moment:
        return False
    if call.moment in ("input", "output"):
        return True
    if block.any_tool:
        return True
    return block.tool is not None and call.tool is not None and block.tool.name == call.tool


# ---------------------------------------------------------------- host policies
def _run_host(policy: ir.Policy, impl: ir.PythonImpl, call: _Call) -> PolicyDecision | None:
    if call.host is None:
        reason = f"policy `{policy.name}` is bound to `{impl.target}` but no host can run it"
        return call.decision(policy, "deny", reason, impl.span)
    fn = call.host(impl)
    answer = fn(policy_context(call.moment, call.env, tool=call.tool, call_id=call.call_id,
                               iteration=call.iteration))
    if answer is None:
        return None
    parsed = _parse_answer(answer)
    if parsed is None:
        if inspect.iscoroutine(answer):
            answer.close()
        reason = f"policy `{policy.name}` answered something it may not: {shorten(repr(answer))}"
        return call.decision(policy, "deny", reason, impl.span)
    outcome, reason = parsed
    return call.decision(policy, outcome, reason, impl.span)


def _parse_answer(answer: Any) -> tuple[str, str | None] | None:
    if isinstance(answer, str):
        return (answer, None) if answer in OUTCOMES else None
    if isinstance(answer, tuple) and len(answer) == 2:
        outcome, reason = answer
        if isinstance(outcome, str) and outcome in OUTCOMES and (reason is None or isinstance(reason, str)):
            return outcome, reason
    return None


def policy_context(moment: str, env: Env, *, tool: str | None, call_id: str | None,
                   iteration: int) -> dict[str, Any]:
    """The plain-dict view a host policy receives (fresh copies: it cannot change the run)."""
    roots: Mapping[str, Any] = env.roots
    ctx = {name: _copy(roots[name]) for name in CTX_ROOTS if name in roots}
    ctx.update(moment=moment, call_id=call_id, iteration=iteration)
    if tool is not None:
        ctx["tool"] = tool
    return ctx


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


def _exc_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
