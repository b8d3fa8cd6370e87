"""The report of what a run redacted, and the JSON paths it names (never the values).

Role:       `RedactionReport` (counts per rule, the paths touched) and the text of a path from
            the lazy form `Redactor` builds while it walks a value: the root's name, or
            (parent, key or index, is_index). Split from `redaction`.
Invariants: pure; a path's key is written `.key` when it is an identifier, else as a quoted
            JSON string in brackets, so no key text can forge another path.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .frozen import FrozenMap

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@attrs.frozen
class RedactionReport:
    """What was redacted: counts per rule name and the JSON paths touched, never the values."""

    counts: FrozenMap
    paths: tuple[str, ...]
    paths_dropped: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def unique(key: Any, taken: Mapping) -> Any:
    if key not in taken:
        return key
    n = 2
    while f"{key}#{n}" in taken:
        n += 1
    return f"{key}#{n}"


def path_text(path: Any) -> str:
    """A JSON path as text from its lazy form: the root's name, or (parent, key or index, is_index)."""
    segs = []
    while type(path) is tuple:
        path, seg, index = path
        segs.append(f"[{seg}]" if index else path_segment(seg))
    return path + "".join(reversed(segs))


def path_segment(key: Any) -> str:
    text = str(key)
    return f".{text}" if _IDENT.match(text) else f"[{json.dumps(text, ensure_ascii=False)}]"
