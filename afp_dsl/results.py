"""The values a run hands back to its host: `RunResult`, `CheckIn`, `Checkpoint`, decisions.

Role:       plain result types of the run API (split from `runner`, which builds and drives
            runs); `approve`/`decline` make the `Decision` a paused run is resumed with;
            `run_of` reads what `resume` was given.
Invariants: frozen (a `Conversation` excepted: it gathers its runs); a `Checkpoint`'s raw
            `data`, a `Conversation`'s raw history and a `RunResult`'s raw answer never show
            in a repr, nor in an error (a wrong argument is named by its type, never by its
            text).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import attrs

from .launch_checks import _a
from .source import Span
from .trace import Event, Trace

if TYPE_CHECKING:
    from . import ir
    from .api import Program
    from .runner import Agent


class ResumeDecisionError(Exception):
    """A resume that is not exactly one decision for the check-in the run waits on."""


class AgentNotFound(ValueError):
    """`Program.agent(name)` names no agent of the spec (or none was named and there are several);
    the message lists the agents there are."""


@attrs.frozen
class Decision:
    """A person's answer to a check-in (`approve`/`decline`), passed to `Agent.resume`."""

    checkin: str
    approved: bool
    by: str | None = None
    note: str | None = None


def _decision(fn: str, checkin: CheckIn | str | None, by: str | None, note: str | None,
              approved: bool) -> Decision:
    """The decision, or a `TypeError` naming what to pass: a decision names the check-in it
    answers (semantics §10), so `None` or another object is not read as an id."""
    if isinstance(checkin, CheckIn):
        checkin = checkin.id
    if not isinstance(checkin, str):
        hint = (" (`result.checkin` is None unless `result.paused`)" if checkin is None else
                " (pass `result.checkin`)" if isinstance(checkin, RunResult) else "")
        raise TypeError(f"`{fn}` takes the check-in it answers, a `CheckIn` (`result.checkin`) "
                        f"or its id (a `str`), not {_a(checkin)}{hint}")
    for key, value in (("by", by), ("note", note)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"`{fn}(..., {key}=...)` takes text (a `str`) or None, not "
                            f"{_a(value)}")
    return Decision(checkin, approved, by, note)


def approve(checkin: CheckIn | str | None, by: str | None = None,
            note: str | None = None) -> Decision:
    """A person's approval of `checkin` (a `CheckIn` or its id), for `agent.resume`: the chain
    continues after the link that asked, then the tool runs. `by` and `note` are text. (None,
    what `result.checkin` is unless `result.paused`, is typed so that `approve(result.checkin)`
    type-checks under `if result.paused:`; at run time it is a `TypeError`.)"""
    return _decision("approve", checkin, by, note, True)


def decline(checkin: CheckIn | str | None, by: str | None = None,
            note: str | None = None) -> Decision:
    """A person's refusal of `checkin` (a `CheckIn` or its id), for `agent.resume`: the tool
    does not run, and the model reads that a person declined, with the `note`."""
    return _decision("decline", checkin, by, note, False)


def run_of(checkpoint: Any) -> tuple[str, Any]:
    """The run id and checkpoint data (None: read it from the store) `resume` was given: a
    `Checkpoint`, a run id, or a checkpoint kept as JSON (`checkpoint.data`, as a dict or as
    JSON text). Anything else is a `TypeError` (JSON text that is not a checkpoint a
    `CheckpointError`) that names its type, never its text: a checkpoint's raw data holds
    unredacted values."""
    if isinstance(checkpoint, Checkpoint):
        return checkpoint.run_id, checkpoint.data
    if isinstance(checkpoint, str) and checkpoint.lstrip().startswith("{"):  # (JSON text)
        return _of_data(_json_data(checkpoint))
    if isinstance(checkpoint, str):
        return checkpoint, None
    if isinstance(checkpoint, Mapping):
        return _of_data(checkpoint)
    fix = ("the paused result's `Checkpoint` (`result.checkpoint`), its run id (`result.run_id`) "
           "or its data kept as JSON (`result.checkpoint.data`)")
    hint = {RunResult: "; pass `result.checkpoint`",
            CheckIn: "; pass `checkin.run_id` (and the decision as the second argument)",
            }.get(type(checkpoint), "")
    raise TypeError(f"`resume` takes {fix}, not {_a(checkpoint)}{hint}")


def _json_data(text: str) -> Any:
    import json
    from .state import CheckpointError
    try:
        return json.loads(text)
    except ValueError as e:  # (the position only: the text holds unredacted values)
        raise CheckpointError(f"the checkpoint text is not JSON (line {getattr(e, 'lineno', '?')}, "
                              f"column {getattr(e, 'colno', '?')}); pass the text "
                              f"`json.dumps(result.checkpoint.data)` wrote") from None


def _of_data(data: Any) -> tuple[str, Any]:
    """A checkpoint's data as `checkpoint.data` holds it: its run id is `data["state"]["run_id"]`."""
    from .state import CheckpointError
    state = data.get("state") if isinstance(data, Mapping) else None
    run_id = state.get("run_id") if isinstance(state, Mapping) else None
    if not isinstance(run_id, str) or not run_id:
        raise CheckpointError("the checkpoint data names no run (`state.run_id`): it is damaged, "
                              "or not a checkpoint's data; pass `result.checkpoint`, its "
                              "`data`, or the run id")
    return run_id, data


@attrs.frozen
class CheckIn:
    """What a paused run asks: the tool, its (redacted) arguments, the question, who asked."""

    id: str
    run_id: str
    tool: str
    call_id: str
    args: Mapping[str, Any]
    question: str
    source: str  # policy | tool | inner (asked inside an agent-backed tool's run)
    policy: str | None = None
    span: Span | None = None  # the declaration that asked: the policy's rule, or the tool's check_in


@attrs.frozen(repr=False)
class Checkpoint:
    """A handle on a resumable run; `data` is the raw state (kept in memory and the store only)."""

    run_id: str
    checkin: str | None = None
    data: Any = attrs.field(default=None, eq=False)
    # the run's recorded (redacted) events up to the pause: a resume through a store that never
    # saw the run (another agent's own memory store) starts its trace from them
    events: tuple = attrs.field(default=(), eq=False, repr=False)

    def __repr__(self) -> str:
        return f"Checkpoint(run_id={self.run_id!r}, checkin={self.checkin!r})"


@attrs.frozen(repr=False)
class RunResult:
    """What a run (or resume) hands back: its `outcome` (`answered`, `paused`,
    `max_iterations`, `denied`, `error`), `answer`, `run_id` and `trace`; `checkin` and
    `checkpoint` when paused (`checkpoint` also after a resumable `error`), `error` the message
    of an `error` run; `inner` the kept inner runs of agent-backed tools, `program` the
    `afp.Program` that ran (what the agent was made from)."""

    outcome: str
    answer: str | None
    run_id: str
    trace: Trace
    checkin: CheckIn | None = None
    checkpoint: Checkpoint | None = None
    error: str | None = None
    inner: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    program: Program | ir.Program | None = attrs.field(default=None, repr=False, eq=False)

    def __repr__(self) -> str:
        # the answer as the trace recorded it (redacted, semantics §9), not the raw one the host
        # holds in `answer`: a repr goes to logs
        return (f"RunResult(outcome={self.outcome!r}, answer={self._recorded_answer()!r}, "
                f"run_id={self.run_id!r}, trace={self.trace!r}, checkin={self.checkin!r}, "
                f"checkpoint={self.checkpoint!r}, error={self.error!r})")

    def _recorded_answer(self) -> str | None:
        if self.answer is None:
            return None
        for event in reversed(self.trace.tail(2)):
            if event.kind == "run.finished" and isinstance(event.payload, Mapping):
                answer = event.payload.get("answer")
                return answer if isinstance(answer, str) else None
        return "[not shown]"

    @property
    def paused(self) -> bool:
        """The run waits on a check-in: resume it with `agent.resume(result.checkpoint,
        afp.approve(result.checkin))` (or `decline`)."""
        return self.outcome == "paused"

    def why(self, event: str | int | Event | None = None, *, skill: str | None = None,
            iteration: int | None = None, edge: str | None = None, format: str = "text") -> str:
        """The explanation tree as text: of the answer, or of `event` (its id, seq number or the
        `Event`); `skill=`, `iteration=`, `edge="a->b"` and `format="json"` ask the other
        questions of `afpc why`. A wrong argument is a `TypeError` or `ValueError`."""
        from .why import explain
        return explain(self.trace, event, inner=self.inner, program=self.program, skill=skill,
                       iteration=iteration, edge=edge, format=format)


@attrs.define
class Conversation:
    """A sequence of runs sharing history (and, with `continuity = "conversation"`, the cursor)."""

    agent: "Agent"
    id: str
    history: list = attrs.field(factory=list)
    cursor: str | None = None
    runs: list[str] = attrs.field(factory=list)
    # a run of it is going (set and cleared by the agent, under its lock): one message at a time,
    # as each run starts from the history the one before left
    busy: bool = attrs.field(default=False, init=False, repr=False, eq=False)

    def __repr__(self) -> str:
        # (never the history: it holds the raw messages and tool results, unredacted)
        return (f"Conversation(id={self.id!r}, agent={self.agent.name!r}, runs={self.runs!r}, "
                f"cursor={self.cursor!r}, history=<{len(self.history)} messages>)")

    def run(self, message: str) -> RunResult:
        """The next run of this conversation, seeing the history of the earlier ones."""
        return self.agent.run(message, conversation=self)

    async def arun(self, message: str) -> RunResult:
        """`run`, awaiting async host tools and providers."""
        return await self.agent.arun(message, conversation=self)
