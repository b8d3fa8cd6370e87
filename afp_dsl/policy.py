"""The policy chain: rule-based and host-bound links deciding allow, deny or ask at one moment.

Role:       pure; the interpreter calls `run_chain` (or `walk_steps` on a chain's cached
            `steps`) at `input`, `before`, `after` and `output`, supplying the expression env and
            a resolver for `python(...)` bindings. Rule conditions run compiled (rules_compiled).
Emits:      `PolicyDecision` rows (the interpreter records each as a `policy.decided` event).
Invariants: declaration order (`after` walks it in reverse); each link sees the previous link's
            output (a host link may hand on a rewritten message, arguments, result or answer:
            `Rewrite`); the first non-allow answer wins and later links do not run; a link that
            raises, an expression that cannot be evaluated, an `ask` where no pause can carry
            it, a rewrite the moment cannot take (a non-text message or answer) and any answer
            outside the vocabulary are denials; a link with nothing to say records nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from . import ir
from .evaluate import Condition, Env
from .policy_host import (  # noqa: F401 - (`OUTCOMES`, `policy_context`, `Rewrite`, `rewrite`: API)
    CTX_ROOTS, OUTCOMES, REWRITES, Rewrite, exc_text, policy_context, rewrite, run_host,
)
from .rules_compiled import Compiled, compiled
from .source import Span


HostResolver = Callable[[ir.PythonImpl], Callable[[dict], Any]]


# Speed: the two records below are named tuples, not frozen attrs classes: one of each is made at
# every tool call whose chain decides, on the loop's hot path, and a named tuple is built in one C
# call where a frozen attrs instance sets each field through `object.__setattr__` (≈ 8,000
# instructions per guarded iteration, measured with bench.instructions). Both are immutable.
class PolicyDecision(NamedTuple):
    """One link's decision; also the ledger row the trace records.

    `conditions` is the evidence of the rule that decided (empty for host-bound links);
    `rewritten` is `(value,)` when the link allowed with a rewritten value, else empty.
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
    rewritten: tuple = ()


class ChainResult(NamedTuple):
    """The chain's answer. `deciding` is the non-allow decision (None when everything allowed);
    `deciding_index` is that link's position in walk order (a resume passes it + 1 as
    `start_after`). `value` is `(value,)` when links rewrote what they were given (the last
    rewrite, which the rest of the chain saw), else empty."""

    outcome: str
    decisions: tuple[PolicyDecision, ...]
    deciding: PolicyDecision | None
    deciding_index: int | None = None
    value: tuple = ()


class _Call:
    """One walk's moment and context (internal; a plain class: built at every tool call)."""

    __slots__ = ("moment", "env", "tool", "call_id", "iteration", "can_pause", "host")

    def __init__(self, moment: str, env: Env, tool: str | None, call_id: str | None,
                 iteration: int, can_pause: bool, host: HostResolver | None):
        self.moment, self.env, self.tool, self.call_id = moment, env, tool, call_id
        self.iteration, self.can_pause, self.host = iteration, can_pause, host

    def decision(self, policy: ir.Policy, outcome: str, reason: str | None, span: Span | None,
                 conditions: tuple[Condition, ...] = ()) -> PolicyDecision:
        return PolicyDecision(outcome, policy.name, span, reason, self.moment, self.tool,
                              self.call_id, self.iteration, conditions)


ALLOWED = ChainResult("allow", (), None)  # the answer of a walk where no link had anything to say
# Speed: the decisions of a walk are built with `tuple.__new__` on all nine fields, one C call
# (the named tuple's `__new__` is a Python function around it).
_new = tuple.__new__


def run_chain(policies: Sequence[ir.Policy], moment: str, env: Env, *, tool: str | None,
              call_id: str | None, iteration: int, can_pause: bool,
              host: HostResolver | None, start_after: int = 0,
              reverse: bool | None = None, evidence: bool = True) -> ChainResult:
    """Walk the chain for one moment and return the outcome with the ledger rows it produced.

    `reverse` defaults to True for `after` (the onion order) and False otherwise. `start_after`
    is how many links, in walk order, to skip: a resumed dispatch passes the asking link's
    `deciding_index + 1` (and `can_pause=False`: one question per resume). With
    `evidence=False` an `allow` rule that holds leaves its row's `conditions` empty (a deny's
    or an ask's are kept: the interpreter records them on the row); everything else is the same.
    """
    if reverse is None:
        reverse = moment == "after"
    return walk_steps(steps(policies, moment, tool, reverse), moment, env, tool=tool,
                      call_id=call_id, iteration=iteration, can_pause=can_pause, host=host,
                      start_after=start_after, evidence=evidence)


def walk_steps(walk: tuple[Step, ...], moment: str, env: Env, tool: str | None,
               call_id: str | None, iteration: int, can_pause: bool, host: HostResolver | None,
               start_after: int = 0, evidence: bool = True) -> ChainResult:
    """`run_chain` over the `steps` of a chain already looked up."""
    if not walk:
        return ALLOWED
    call: Any = None  # made for a host link or a rule evaluated in full (most walks: none)
    rows: list[PolicyDecision] = []
    answered = -1  # the link that gave its answer: its later rules do not run
    value: tuple = ()  # (the value a link rewrote,), which the later links see
    quiet: Any = None  # a rule link whose rules so far all did not hold: (index, policy)
    for index, policy, rule, cond in walk:
        if index < start_after or index == answered:
            continue
        if quiet is not None and quiet[0] != index:  # its rules are done, none held: it allows
            rows.append(_new(PolicyDecision, ("allow", quiet[1].name, None, None, moment, tool,
                                              call_id, iteration, (), ())))
            quiet = None
        if rule is None:
            call = call or _Call(moment, env, tool, call_id, iteration, can_pause, host)
            row = _run_host_link(policy, call)
            if row is not None and row.rewritten:  # the next links see the rewritten value
                value = row.rewritten
                env = env.with_root(REWRITES[moment], value[0])
                call = None
        else:
            # Speed: a rule that surely does not hold (and has no error) decides nothing and its
            # evidence is never recorded; `check` answers False only when `evaluate` would say
            # "does not hold" without an error (rules_compiled). Any other answer, or none, and
            # the rule gets the full evaluation, evidence included.
            try:
                verdict = cond.check(env)
            except Exception:
                verdict = None
            if verdict is False:
                quiet = (index, policy)
                continue
            if verdict is True and not evidence and rule.action == "allow":
                # the row `_run_rule` would make for a rule that holds, without its evidence (a
                # deny or an ask keeps it: "why was I refused, or asked?" reads its values)
                row = _new(PolicyDecision, (rule.action, policy.name, rule.span, rule.because,
                                            moment, tool, call_id, iteration, (), ()))
            else:
                call = call or _Call(moment, env, tool, call_id, iteration, can_pause, host)
                row = _run_rule(policy, rule, cond, call, evidence or rule.action != "allow")
                if row is None:
                    quiet = (index, policy)
                    continue
        answered, quiet = index, None
        if row is None:
            continue
        rows.append(row)
        if row.outcome != "allow":
            return _new(ChainResult, (row.outcome, tuple(rows), row, index, value))
    if quiet is not None:
        rows.append(_new(PolicyDecision, ("allow", quiet[1].name, None, None, moment, tool,
                                          call_id, iteration, (), ())))
    return _new(ChainResult, ("allow", tuple(rows), None, None, value)) if rows else ALLOWED


# (index of the link in walk order, policy, rule, its compiled condition); rule and condition
# are None for a host-bound link.
Step = tuple[int, ir.Policy, "ir.Rule | None", "Compiled | None"]


def steps(policies: Sequence[ir.Policy], moment: str, tool: str | None,
          reverse: bool) -> tuple[Step, ...]:
    """The walk flattened: host links, and the rules of the blocks that apply at this moment to
    this tool, in order. A rule link without such a block answers nothing, so it has no step."""
    if type(policies) is not tuple:  # a list may change between calls: not cached
        return _steps(tuple(policies), moment, tool, reverse)
    key = (id(policies), moment, tool, reverse)
    hit = _STEPS.get(key)
    if hit is None or hit[0] is not policies:
        if len(_STEPS) >= 4096:
            _STEPS.clear()
        hit = _STEPS[key] = (policies, _steps_of(policies, moment, tool, reverse))
    return hit[1]


def _steps_of(policies: tuple, moment: str, tool: str | None, reverse: bool) -> tuple[Step, ...]:
    """`_steps`, shared by every tuple of the same policy declarations (each agent's plan has
    its own tuple: an agent built per run would otherwise settle its steps at every run)."""
    key = (tuple(map(id, policies)), moment, tool, reverse)
    hit = _STEPS_OF.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], policies)):
        if len(_STEPS_OF) >= 4096:
            _STEPS_OF.clear()
        hit = _STEPS_OF[key] = (policies, _steps(policies, moment, tool, reverse))
    return hit[1]


# Speed: the steps of a chain per (moment, tool, direction), settled once per policy tuple (a
# plan's, immutable IR), keyed by identity, and once per sequence of declarations; the entries
# keep what they are keyed by alive. Bounded.
_STEPS: dict[tuple, tuple[Any, tuple[Step, ...]]] = {}
_STEPS_OF: dict[tuple, tuple[tuple, tuple[Step, ...]]] = {}


def _steps(policies: tuple, moment: str, tool: str | None, reverse: bool) -> tuple[Step, ...]:
    chain = tuple(reversed(policies)) if reverse else policies
    out: list[Step] = []
    for index, policy in enumerate(chain):
        if policy.impl is not None:
            out.append((index, policy, None, None))
            continue
        out += [(index, policy, rule, compiled(rule.when)) for block in policy.blocks
                if _block_applies(block, moment, tool) for rule in block.rules]
    return tuple(out)


def _run_host_link(policy: ir.Policy, call: _Call) -> PolicyDecision | None:
    try:
        row = run_host(policy, policy.impl, call)
    except Exception as exc:  # law: a link that raises is a denial with the exception's message
        return call.decision(policy, "deny", exc_text(exc), policy.impl.span)
    except SystemExit as exc:  # (as a tool body's: a link may not end the host process)
        reason = f"policy `{policy.name}` called sys.exit({exc.code!r}): a link cannot end the program"
        return call.decision(policy, "deny", reason, policy.impl.span)
    return _no_pause(policy, row, call)


def _no_pause(policy: ir.Policy, row: PolicyDecision | None, call: _Call) -> PolicyDecision | None:
    """Law: an `ask` where no pause can carry it is a denial."""
    if row is not None and row.outcome == "ask" and not call.can_pause:
        reason = (f"policy `{policy.name}` asked a person to decide, and there is no pause here "
                  f"to carry that ask: {row.reason or 'no question given'}")
        return row._replace(outcome="deny", reason=reason)
    return row


# ---------------------------------------------------------------- rule policies
def _run_rule(policy: ir.Policy, rule: ir.Rule, cond: Compiled, call: _Call,
              evidence: bool = True) -> PolicyDecision | None:
    """The row of a rule that holds or cannot be evaluated; None when it does not hold. Without
    `evidence` the row's conditions are left empty."""
    try:
        out = cond.evaluate(call.env)
        conditions = out.conditions if evidence else ()
        if out.error is not None:
            reason = f"policy `{policy.name}`: the condition could not be evaluated: {out.error}"
            row = call.decision(policy, "deny", reason, rule.span, conditions)
        elif out.holds:
            row = call.decision(policy, rule.action, rule.because, rule.span, conditions)
        else:
            return None
    except Exception as exc:  # law: a link that raises is a denial with the exception's message
        return call.decision(policy, "deny", exc_text(exc), policy.span)
    return _no_pause(policy, row, call)


def _block_applies(block: ir.PolicyBlock, moment: str, tool: str | None) -> bool:
    if block.moment != moment:
        return False
    if moment in ("input", "output"):
        return True
    if block.any_tool:
        return True
    return block.tool is not None and tool is not None and block.tool.name == tool
