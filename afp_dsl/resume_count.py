"""What a run (and the inner runs of its agent-backed tools) did before a resume: model calls
made and tool executions, counted from its events.

Role:       a resume from another process (`afpc resume`, or a fresh `Agent` on the same store)
            numbers its model calls after the run's own, and a replayed test script skips the
            replies and stubs already used; inner runs count too (they share the script and the
            numbering). Used by `runner` and `cli_run`.
Invariants: pure over the events given (stored `Event`s or their dicts, as a checkpoint keeps an
            inner run's); an event seen twice (in the store and in a checkpoint) counts once.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping


def inner_events(checkin: Any, depth: int = 0) -> list[Any]:
    """The events of the inner runs a pending check-in carries (an inner agent's pause), at
    every depth."""
    if not isinstance(checkin, Mapping) or depth > 16:
        return []
    out = list(checkin.get("inner_events") or [])
    inner = checkin.get("inner_checkpoint")
    state = inner.get("state") if isinstance(inner, Mapping) else None
    pending = state.get("pending") if isinstance(state, Mapping) else None
    if isinstance(pending, Mapping):
        out += inner_events(pending.get("checkin"), depth + 1)
    return out


def calls_made(events: Iterable[Any]) -> int:
    """The highest LLM call number among the events (0: none): calls are numbered for the whole
    session, inner runs included."""
    made = [_payload(e).get("call") for e in events if _kind(e) == "llm.called"]
    return max((n for n in made if type(n) is int), default=0)


def executions(events: Iterable[Any]) -> dict[str, int]:
    """Executions per tool (a body ran or a stub answered): `tool.returned` with `executed`."""
    seen: set = set()
    out: Counter = Counter()
    for e in events:
        key = _id(e)
        if _kind(e) != "tool.returned" or (key is not None and key in seen):
            continue
        seen.add(key)
        p = _payload(e)
        if p.get("executed") is True and isinstance(p.get("tool"), str):
            out[p["tool"]] += 1
    return dict(out)


def _kind(e: Any) -> Any:
    return e.get("kind") if isinstance(e, Mapping) else getattr(e, "kind", None)


def _id(e: Any) -> Any:
    return e.get("id") if isinstance(e, Mapping) else getattr(e, "id", None)


def _payload(e: Any) -> Mapping:
    p = e.get("payload") if isinstance(e, Mapping) else getattr(e, "payload", None)
    return p if isinstance(p, Mapping) else {}
