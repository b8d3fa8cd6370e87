"""The values a run hands back to its host: `RunResult`, `CheckIn`, `Checkpoint`, decisions.

Role:       plain result types of the run API (split from `runner`, which builds and drives
            runs); `approve`/`decline` make the `Decision` a paused run is resumed with.
Invariants: frozen (a `Conversation` excepted: it gathers its runs); a `Checkpoint`'s raw
            `data` never shows in its repr.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import attrs

from .source import Span
from .trace import Trace

if TYPE_CHECKING:
    from .runner import Agent


class ResumeDecisionError(Exception):
    """A resume that is not exactly one decision for the check-in the run waits on."""


class AgentNotFound(ValueError):
    pass


@attrs.frozen
class Decision:
    checkin: str
    approved: bool
    by: str | None = None
    note: str | None = None


def _checkin_id(checkin: Any) -> str:
    return checkin.id if isinstance(checkin, CheckIn) else str(checkin)


def approve(checkin: Any, by: str | None = None, note: str | None = None) -> Decision:
    """A person's approval of `checkin` (a `CheckIn` or its id)."""
    return Decision(_checkin_id(checkin), True, by, note)


def decline(checkin: Any, by: str | None = None, note: str | None = None) -> Decision:
    return Decision(_checkin_id(checkin), False, by, note)


@attrs.frozen
class CheckIn:
    """What a paused run asks: the tool, its (redacted) arguments, the question, who asked."""

    id: str
    run_id: str
    tool: str
    call_id: str
    args: Any
    question: str
    source: str  # policy | tool
    policy: str | None = None
    span: Span | None = None  # the declaration that asked: the policy's rule, or the tool's check_in


@attrs.frozen(repr=False)
class Checkpoint:
    """A handle on a resumable run; `data` is the raw state (kept in memory and the store only)."""

    run_id: str
    checkin: str | None = None
    data: Any = attrs.field(default=None, eq=False)

    def __repr__(self) -> str:
        return f"Checkpoint(run_id={self.run_id!r}, checkin={self.checkin!r})"


@attrs.frozen
class RunResult:
    outcome: str
    answer: str | None
    run_id: str
    trace: Trace
    checkin: CheckIn | None = None
    checkpoint: Checkpoint | None = None
    error: str | None = None
    inner: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    program: Any = attrs.field(default=None, repr=False, eq=False)

    @property
    def paused(self) -> bool:
        return self.outcome == "paused"

    def why(self, event: str | None = None, **kw: Any) -> str:
        """The explanation tree as text: of the answer, or of `event`; `skill=`, `iteration=`,
        `edge="a->b"` and `format="json"` ask the other questions of `afpc why`."""
        from .why import explain
        return explain(self.trace, event, inner=self.inner, program=self.program, **kw)


@attrs.define
class Conversation:
    """A sequence of runs sharing history (and, with `continuity = "conversation"`, the cursor)."""

    agent: "Agent"
    id: str
    history: list = attrs.field(factory=list)
    cursor: str | None = None
    runs: list[str] = attrs.field(factory=list)

    def run(self, message: str) -> RunResult:
        return self.agent.run(message, conversation=self)

    async def arun(self, message: str) -> RunResult:
        return await self.agent.arun(message, conversation=self)
