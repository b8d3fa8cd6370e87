"""Evidence as the trace records it: a condition's actual value shortened, after redaction.

Role:       `shorten` turns a value into its evidence form (text of at most 80 characters;
            structured JSON as compact text); `clip_evidence` shortens the conditions of an event
            payload the recorder has already redacted. Split from `evaluate`.
Invariants: pure; `clip_evidence` copies only what it changes and leaves any unexpected shape
            as it is; nothing is shortened before it is redacted (semantics §4, §9).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .frozen import plain as _plain

SHORT = 80


def shorten(value: Any, limit: int = SHORT) -> Any:
    """Evidence form of a value: strings and structured JSON become text of at most `limit` chars."""
    if type(value) is not str and isinstance(value, (Mapping, list, tuple)):
        value = _compact_json(value)
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def clip_evidence(kind: str, payload: Any) -> Any:
    """`payload` with every recorded condition's `actual` shortened (`shorten`), for the kinds
    that carry conditions evaluated with `clip=False`. Runs after redaction: a secret cut in two
    before it is scrubbed would no longer match and part of it would be recorded (semantics §4:
    "shortened to 80 characters, redacted"). Copies only what it changes; any other shape (a
    list a rule replaced by its placeholder) is left as it is."""
    paths = _EVIDENCE.get(kind)
    if paths is None or type(payload) is not dict:
        return payload
    for outer, inner in paths:
        if outer is None:
            payload = _clip_item(payload, inner)
            continue
        items = payload.get(outer)
        if type(items) is not list or not items:  # (most compositions: no conditions at all)
            continue
        new = [_clip_item(item, inner) for item in items]
        for a, b in zip(new, items):
            if a is not b:
                payload = {**payload, outer: new}
                break
    return payload


def _clip_item(item: Any, key: str) -> Any:
    conds = item.get(key) if type(item) is dict else None
    if type(conds) is not list or not conds:
        return item
    new = [_clip_condition(c) for c in conds]
    for a, b in zip(new, conds):
        if a is not b:
            return {**item, key: new}
    return item


def _clip_condition(cond: Any) -> Any:
    if type(cond) is not dict or "actual" not in cond:
        return cond
    actual = cond["actual"]
    short = shorten(actual)
    return cond if short is actual else {**cond, "actual": short}


# the event kinds whose payloads hold conditions: (list key or None for the payload, its key)
_EVIDENCE = {
    "route.evaluated": ((None, "conditions"),),
    "cursor.moved": ((None, "witness"), ("refused_entries", "conditions")),
    "context.composed": (("pieces", "detail"), ("skipped", "conditions")),
}


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(_plain(value), separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return str(value)
