"""One line per trace event: what `why`, `afpc trace show` and the HTML report print for it.

Role:       `describe(event)`: a template or a small function per kind, and a generic
            `kind {payload}` line for the rest. Split from `why_walk`, which cites events with it.
Invariants: never raises on odd payloads (a payload missing what its template names gets the
            generic line).
"""
from __future__ import annotations

from typing import Callable

from .trace import Event
from .why import items, payload, short


def describe(e: Event) -> str:
    """One line for an event (shared by the walk, `afpc trace show` and the HTML report)."""
    p = payload(e)
    try:
        if e.kind in _TEMPLATES:
            return _TEMPLATES[e.kind].format_map(_Shown(p))
        fn = _DESCRIBE.get(e.kind)
        return fn(p) if fn else f"{e.kind} {short(p, 80)}"
    except (KeyError, TypeError, AttributeError, ValueError, IndexError):
        return f"{e.kind} {short(p, 80)}"


class _Shown(dict):
    """A payload seen through `short`: one-line, cut values; missing keys are empty."""

    def __init__(self, p: dict):
        super().__init__({k: short(v) for k, v in p.items() if v is not None})

    def __missing__(self, key: str) -> str:
        return ""


_TEMPLATES = {
    "run.started": "run of `{agent}` started: user said {message}",
    "tool.called": "model called `{tool}` ({call_id}) with {args}",
    "tool.args_invalid": "arguments of `{tool}` rejected: {problems}",
    "checkin.requested": "check-in {checkin} asked: {question}",
    "step.advanced": "step {step} of {of} of `{skill}` done",
    "step.skipped": "step {step} of `{skill}` skipped: {reason}",
    "steps.unfinished": "steps of `{skill}` unfinished at step {step} ({action})",
    "budget.exhausted": "iteration budget {limit} exhausted ({action})",
    "run.paused": "run paused on check-in {checkin}",
    "redaction.applied": "redaction applied: {counts}",
    "llm.retry": "provider `{provider}` attempt {attempt} of {of} failed ({error}): retried after {delay} s",
    "llm.fallback": "provider `{from}` failed ({error}): `{to}` was asked instead",
    "llm.circuit": "provider `{provider}` circuit {state} after {failures} failure(s)",
}


def calls_text(p: dict) -> str:
    """The tools a reply calls, each in backticks, comma-separated."""
    return ", ".join(f"`{c.get('tool')}`" for c in items(p, "tool_calls"))


def _if(p: dict, key: str, text: str) -> str:
    """`text` with `{}` filled by the shortened value of `key`, or nothing when it is empty."""
    return text.format(short(p[key], 80)) if p.get(key) else ""


def _context(p: dict) -> str:
    tools = ", ".join(t.get("name", "?") for t in items(p, "tools")) or "none"
    n = len(items(p, "pieces"))
    return f"context composed: {n} piece{'s' if n != 1 else ''}, tools {tools}"


def _returned(p: dict) -> str:
    value = p["result"] if p.get("result") is not None else p.get("read", "(no result)")
    text = f"`{p.get('tool')}` ({p.get('call_id')}) returned {p.get('status')}: {short(value)}"
    read = p.get("read")
    if p.get("result") is not None and isinstance(read, str) and not read.startswith(_text(value)):
        text += f"; the model read: {short(read)}"  # (an `after` link denied or rewrote it)
    return text


def _text(value: object) -> str:
    """A result as the model is sent it (`toolcall.to_text`): a string as it is, else compact
    JSON; a step's line is appended to it, an `after` link's denial or rewrite replaces it."""
    import json
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _policy(p: dict) -> str:
    decided = "rewrote what it was given and allowed" if p.get("changed") is True else (
        f"decided {p.get('outcome')}")
    return (f"policy `{p.get('policy')}` {decided} at {p.get('moment')}"
            + _if(p, "tool", " for `{}`") + _if(p, "reason", ": {}")
            + (f" (now: {short(p.get('value'))})" if p.get("changed") is True else ""))


def _route(p: dict) -> str:
    verdict = "fired" if p.get("fired") else "refused"
    on = f" on `{p['tool']}` ({p.get('call_id')})" if p.get("tool") else ""
    return f"edge `{p.get('edge')}` {verdict}{on}" + (_if(p, "reason", ": {}") or _failed(p))


def _failed(p: dict) -> str:
    """A refusal's first condition that did not hold, with its actual value: the line says why
    (`afpc trace show` prints no conditions), as the graph overlay's caption does."""
    if p.get("fired"):
        return ""
    c = next((c for c in items(p, "conditions") if c.get("passed") is False), None)
    if c is None:
        return ""
    why = f": {short(c['reason'], 60)}" if c.get("reason") else ""
    return f": `{short(c.get('text'), 60)}` did not hold (actual {short(c.get('actual'), 40)}{why})"


def _conflict(p: dict) -> str:
    losers = ", ".join(f"`{x['edge']}`" for x in items(p, "losers"))
    return f"route conflict from `{p.get('from')}`: `{p['winner']['edge']}` won over {losers}"


_DESCRIBE: dict[str, Callable[[dict], str]] = {
    "skill.rejected": lambda p: (f"read_skill `{short(p.get('requested'))}` refused: cursor "
                                 f"{short(p.get('cursor') or 'none')}, reachable "
                                 f"{short(p.get('allowed'))}"),
    "context.composed": _context,
    "llm.called": lambda p: (f"LLM call #{p.get('call')} ({p.get('messages')} messages, "
                             f"model {p.get('model') or 'default'})"),
    "llm.replied": lambda p: (("model replied calling " + calls_text(p)) if p.get("tool_calls")
                              else f"model replied: {short(p.get('text'))}"),
    "tool.returned": _returned,
    "policy.decided": _policy,
    "checkin.decided": lambda p: (f"check-in {p.get('checkin')} {p.get('decision')}d"
                                  + _if(p, "by", " by {}") + _if(p, "note", " ({})")),
    "route.evaluated": _route,
    "route.conflict": _conflict,
    "cursor.moved": lambda p: (f"cursor {p.get('from') or 'none'} -> {p.get('to') or 'none'} "
                               f"({p.get('cause')})" + _if(p, "edge", " over `{}`")),
    "run.resumed": lambda p: "run resumed" + _if(p, "checkin", " after check-in {}") + (
        ": a retry of the iteration that failed" if p.get("retry") is True else ""),
    "run.finished": lambda p: (f"run finished ({p.get('outcome')})"
                               + (f": {short(p.get('answer'))}" if p.get("answer") is not None
                                  else "") + _if(p, "error", " — error: {}")),
}
