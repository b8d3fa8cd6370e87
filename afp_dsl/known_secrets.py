"""What a run's redactor knows before its first event: the secrets the spec itself holds, and
those of the history a resumed or follow-up run carries.

Role:       `runner` primes every run's `Redactor` here (split from `runner`), so a secret under a
            redacted key in `fact` data, a `returns` value, an earlier call's arguments or an
            earlier tool result is scrubbed from the first event on.
Invariants: learning counts no redaction and records nothing; a tool result's text is read as the
            data it was recorded as (lenient JSON, else the text).
"""
from __future__ import annotations

import json
from typing import Any

from . import ir
from .frozen import thaw
from .plan import Plan
from .redaction import Redactor
from .recorder import learn


def prime_redactor(red: Redactor, plan: Plan) -> None:
    """Teach the redactor secrets the spec itself holds (fact data, `returns` values)."""
    for c in plan.context:
        data = getattr(c.decl, "data", None)
        if data is not None and not isinstance(data, ir.Text):
            learn(red, thaw(data.value))
    for t in plan.tools.values():
        if isinstance(t.decl.impl, ir.ReturnsImpl):
            learn(red, thaw(t.decl.impl.value))


def relearn(red: Redactor, history: list) -> None:
    """Re-teach remembered secrets from raw history (a resumed or follow-up run)."""
    for m in history:
        for c in m.tool_calls:
            learn(red, thaw(c.arguments))
        if m.role == "tool":
            learn(red, _as_recorded(m.content))


def _as_recorded(text: str) -> Any:
    """A tool result's text as the data it was recorded as: JSON (NaN and infinities included,
    as `toolcall.to_text` writes them; guards' `parse_result` refuses those), else the text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text
