"""Redaction of an event payload: the run's data is scrubbed, the trace's own structure is kept.

Role:       `scrub_event(red, kind, payload, names)` is what the recorder records of a payload
            that is not clean. A payload is the trace's structure (its field names, the program's
            names, the code's enums, counts and spans) holding the run's data (arguments,
            results, messages, answers, reasons, condition values). The redact rules are about
            the data: a key rule selects user keys inside the data, never a field of the event
            (`keys = ["name"]` must not blank `context.composed.tools[0].name`, nor `"outcome"`
            the run's outcome), and a pattern or a remembered secret never rewrites a declared
            name (`/card/` must not turn the tool `get_card` into `get_[REDACTED]`: the trace
            would then name a tool that does not exist, and `expect called get_card` fail).
Invariants: every value under a `DATA` field is scrubbed as `Redactor.scrub` scrubs a value (its
            keys matched by the key rules, its strings by the patterns and remembered secrets);
            outside them, keys and non-string scalars are kept, a `KEEP` field is kept whole,
            and a string is kept when it is one of `names` (the program's declared names), else
            scrubbed by the patterns and remembered secrets (a name the model made up, an id,
            a path). Secrets are remembered from the data alone. Nesting too deep to walk
            replaces that field's value whole (fails closed). Scrubbing here changes a subset
            of what `Redactor.scrub` of the whole payload changes, so the recorder's clean
            checks (which answer for the whole payload) stay sound.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .frozen import FrozenMap

# fields whose value is the run's data, at any depth of a payload (docs/trace.md §1, §7)
DATA = frozenset({"args", "result", "read", "message", "answer", "actual", "value", "question",
                  "note", "text", "conversation", "error", "reason"})
# fields whose value is the code's: enums, spans, the redaction report (built from scrubbed keys)
KEEP = frozenset({"outcome", "status", "cause", "origin", "moment", "stop", "action",
                  "decision", "kind", "error_type", "source", "rule", "span", "paths", "counts", "executions",
                  "state"})
# the trace's other fields (docs/trace.md §1): walked, their keys never matched by a key rule;
# a field not named here nor above is taken for data under a key of its own (fails closed)
STRUCTURE = frozenset({
    "active", "agent", "allowed", "attempt", "by", "call", "call_id", "chars", "checkin",
    "changed", "conditions", "cool_down", "cursor", "delay", "detail", "duration", "edge", "end",
    "event", "executed", "failures", "file", "fired", "from", "id", "iteration",
    "iterations", "limit", "llm_calls", "losers", "messages", "model", "name", "next", "of",
    "paths_dropped", "passed", "pending", "pieces", "policy", "problems", "provider",
    "refused_entries", "remaining", "requested", "response_id", "response_model", "retry", "run_id", "skill", "skipped",
    "start", "step", "superseded_pick", "system_chars", "to", "tokens", "tool", "tool_calls",
    "tools", "usage", "winner", "witness"})


def scrub_event(red: Any, kind: str, payload: Any, names: frozenset[str]) -> Any:
    """`payload` of a `kind` event with its data scrubbed (see the module docstring)."""
    if not isinstance(payload, Mapping):
        return red.scrub(payload, at=kind)
    try:
        if red._keys:
            _learn(red, payload)
        red._check_clean()
        return _structure(red, payload, kind, names)
    except RecursionError:  # the structure itself too deep: as `scrub`, fail closed
        return red.scrub(payload, at=kind)


def _learn(red: Any, value: Any) -> None:
    """Remember the secrets under redacted keys of every data field of `value`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k in STRUCTURE:
                _learn(red, v)
            elif k in DATA:
                red._collect(v)
            elif k not in KEEP:
                red._collect({k: v})
    elif isinstance(value, (list, tuple)):
        for v in value:
            _learn(red, v)


def _structure(red: Any, value: Any, path: Any, names: frozenset[str]) -> Any:
    t = type(value)
    if t is str or isinstance(value, str):
        return value if value in names else red._scrub_str(value, path)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if k in STRUCTURE:
                out[k] = _structure(red, v, (path, k, False), names)
            elif k in KEEP:
                out[k] = v
            elif k in DATA:
                out[k] = _data(red, v, (path, k, False))
            else:  # not a field of the trace: a user's key, as `Redactor.scrub` takes it
                out.update(_data(red, {k: v}, path))
        return FrozenMap(out) if isinstance(value, FrozenMap) else out
    if isinstance(value, (list, tuple)):
        items = [_structure(red, v, (path, i, True), names) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    return value  # numbers, booleans, null: the code's (counts, flags, times)


def _data(red: Any, value: Any, path: Any) -> Any:
    try:
        return red._scrub(value, path)
    except RecursionError:
        rule = red._fallback_rule()
        red._count(rule, path)
        return rule.placeholder

