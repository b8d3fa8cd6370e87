"""Host-bound policy links: calling one, and reading its answer (allow, deny, ask, a rewrite).

Role:       `policy.walk_steps` calls `run_host` for a link bound with `impl = python("m:f")`;
            the host function gets `policy_context` (fresh plain copies) and answers `"allow"`,
            `"deny"`, `"ask"`, `(outcome, reason)`, `None`, or a rewrite: `Rewrite(value,
            because)` (`afp_dsl.rewrite`) or `("allow", because, value)`. Split from `policy`
            along the seam between the chain's walk and what one host link may answer.
Emits:      `PolicyDecision` rows (through the walk's `_Call.decision`).
Invariants: an answer outside the vocabulary, a rewrite without its reason, a non-text rewrite
            of the message or answer, non-object arguments and non-JSON data are denials naming
            what was answered; a rewrite's value is copied (the host keeps no handle on it).
"""
from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from . import ir
from .evaluate import Env

if TYPE_CHECKING:
    from .policy import PolicyDecision, _Call

OUTCOMES = ("allow", "deny", "ask")
CTX_ROOTS = ("tool", "args", "message", "iteration", "skill", "result", "status", "text")


class Rewrite(NamedTuple):
    """A host link's `allow` that hands on another value: the message at `input`, the arguments
    at `before`, the result the model reads at `after`, the answer at `output`. The next link,
    and then the run, see `value`; `because` (required) is the row's reason."""

    value: Any
    because: str


def rewrite(value: Any, because: str) -> Rewrite:
    """What a host policy returns to allow with a rewritten value (`afp_dsl.rewrite`), e.g.
    `return rewrite(SSN.sub("[ssn]", ctx["message"]), "SSNs stay out of the model's view")`.
    The same as answering `("allow", because, value)`."""
    return Rewrite(value, because)


# The root a rewrite replaces at each moment (the value the next link, and the run, see).
REWRITES = {"input": "message", "before": "args", "after": "result", "output": "text"}


def run_host(policy: ir.Policy, impl: ir.PythonImpl, call: _Call) -> PolicyDecision | None:
    if call.host is None:
        reason = f"policy `{policy.name}` is bound to `{impl.target}` but no host can run it"
        return call.decision(policy, "deny", reason, impl.span)
    fn = call.host(impl)
    answer = fn(policy_context(call.moment, call.env, tool=call.tool, call_id=call.call_id,
                               iteration=call.iteration))
    if answer is None:
        return None
    rewrite_ = _as_rewrite(answer)
    if rewrite_ is not None:
        return _rewritten(policy, impl, call, *rewrite_)
    parsed = _parse_answer(answer)
    if parsed is None:
        if inspect.iscoroutine(answer):  # (never awaited: a link answers at once)
            answer.close()
            reason = (f"policy `{policy.name}` is bound to `{impl.target}`, an `async def` "
                      f"function: a policy link must answer at once, so make it a plain `def`")
            return call.decision(policy, "deny", reason, impl.span)
        reason = f"policy `{policy.name}` answered something it may not: {_answer_text(answer)}"
        return call.decision(policy, "deny", reason, impl.span)
    outcome, reason = parsed
    return call.decision(policy, outcome, reason, impl.span)


def _as_rewrite(answer: Any) -> tuple[Any, Any] | None:
    """(value, because) of an answer that is a rewrite, else None."""
    if type(answer) is Rewrite:
        return answer.value, answer.because
    if type(answer) is tuple and len(answer) == 3 and answer[0] == "allow":
        return answer[2], answer[1]
    return None


def _rewritten(policy: ir.Policy, impl: ir.PythonImpl, call: _Call, value: Any,
               because: Any) -> PolicyDecision:
    """The row of a link that allows with a rewritten value (a copy: the host keeps no handle
    on what the run goes on with), or a denial naming what the moment cannot take."""
    problem = _rewrite_problem(call.moment, value, because)
    if problem is not None:
        reason = f"policy `{policy.name}` answered something it may not: {problem}"
        return call.decision(policy, "deny", reason, impl.span)
    return call.decision(policy, "allow", because.strip(), impl.span)._replace(
        rewritten=(_copy(value),))


def _rewrite_problem(moment: str, value: Any, because: Any) -> str | None:
    if not isinstance(because, str) or not because.strip():
        return ("a rewrite without its reason (answer `afp_dsl.rewrite(value, because)` or "
                "`(\"allow\", because, value)` with `because` a non-empty text)")
    if moment not in REWRITES:
        return f"a rewrite at `{moment}`, where there is nothing to rewrite"
    if moment in ("input", "output"):
        if not isinstance(value, str):
            return (f"a rewrite of the {'message' if moment == 'input' else 'answer'} to a value "
                    f"of type {type(value).__name__}; at the message boundary it must be text")
        return None
    if moment == "before" and not isinstance(value, Mapping):
        return (f"a rewrite of the arguments to a value of type {type(value).__name__}; "
                f"arguments are an object (a dict)")
    bad = _not_json(value)
    if bad is not None:
        return f"a rewrite of the {'arguments' if moment == 'before' else 'result'} holding {bad}; it must be JSON data"
    return None


def _not_json(value: Any, depth: int = 0) -> str | None:
    """What in `value` is not JSON data (text keys; no NaN or infinity), or None."""
    if depth > 100:
        return "more than 100 levels of nesting"
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the number {value!r}"
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"a key of type {type(k).__name__}"
            bad = _not_json(v, depth + 1)
            if bad is not None:
                return bad
        return None
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = _not_json(v, depth + 1)
            if bad is not None:
                return bad
        return None
    return f"a value of type {type(value).__name__}"


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
    """The plain-dict view a host policy receives (fresh copies: it changes the run only through
    its answer, e.g. a `Rewrite`)."""
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


def _answer_text(answer: Any, limit: int = 2000) -> str:
    """An answer a link may not give, for the denial's reason: its `repr` whole (the reason is
    redacted when recorded, and a cut could split a secret so that what is left no longer
    matches), or only its type when the `repr` is long or cannot be made."""
    try:
        text = repr(answer)
    except Exception:  # noqa: BLE001 - host code: a `__repr__` that raises
        text = ""
    if not text or len(text) > limit:
        return f"a value of type {type(answer).__name__}"
    return _ADDRESS.sub("", text)  # (`<X object at 0x7f…>`: the trace is the same at every replay)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def exc_text(exc: BaseException) -> str:
    try:
        text = str(exc).strip()
    except Exception:  # noqa: BLE001 - host code: a `__str__` that raises
        return f"{type(exc).__name__} (its message cannot be shown)"
    return text or type(exc).__name__
