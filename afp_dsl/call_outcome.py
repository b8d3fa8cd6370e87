"""What one tool call came to: its status, the text the model reads, and what else it carries.

Role:       plain data passed between the stages of the tool pipeline (`toolcall`,
            `toolcall_builtins`, `inner`); split from `toolcall` so the built-ins can share it.
Emits:      nothing.
Invariants: immutable; `pause` is the check-in of a call waiting for a person, `fatal` a run
            error (AFP501), `event` the id of the call's `tool.returned`.
"""
from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class CallOutcome:
    status: str
    text: str
    executed: bool = False
    result: Any = None
    pause: dict | None = None
    fatal: str | None = None
    event: str = ""
