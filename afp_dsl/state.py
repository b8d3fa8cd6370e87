"""The mutable state of one run, and its raw (unredacted) checkpoint form.

Role:       what the loop carries from iteration to iteration; `to_checkpoint` / `from_checkpoint`
            make a paused or failed run resumable in another process; `Mark` / `rewind` take a
            failed run back to the start of its iteration (the last completed one's state).
Invariants: owned by one running loop at a time; checkpoints hold raw values and are therefore
            stored apart from the (redacted) trace and deleted when the run ends; a damaged
            checkpoint (a field missing or of the wrong type) is a `CheckpointError` from
            `from_checkpoint`, before anything of the run is resumed; version 1 still resumes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import attrs

from .providers.base import Message, ToolCall, UnreadCall


CHECKPOINT_VERSION = 2  # 2 added `decided`, `wrapping`, `mark`, `turn`; 1 lacks them
# (the optional top-level `remembered`, the redactor's memory, needs no new version: a reader
# without it resumes and only forgets the secrets it would have scrubbed again)
_READS = (1, 2)


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: it was damaged or edited by hand."""


def check_checkpoint(run_id: str, data: Any) -> None:
    """`CheckpointError` for checkpoint data that is not what `interp` writes (version 1 or 2)."""
    if not isinstance(data, Mapping) or "state" not in data:
        raise CheckpointError(f"the checkpoint of run `{run_id}` is damaged (not a checkpoint "
                              f"document); it cannot be resumed: start the run again")
    if not isinstance(data.get("agent"), str):  # (every version names its agent)
        raise CheckpointError(f"the checkpoint of run `{run_id}` is damaged (a malformed "
                              f"`agent`); it cannot be resumed: start the run again")
    if data.get("version") not in _READS:
        raise CheckpointError(f"the checkpoint of run `{run_id}` has version "
                              f"{data.get('version')!r}, and this afp resumes versions 1 and 2: "
                              f"resume it with the afp that paused it, or start the run again")


@attrs.define(slots=True)
class ToolResult:
    """One finished tool call of a batch, as routes, `last` and `why` see it."""

    tool: str
    call_id: str
    args: Any
    status: str
    result: Any  # parsed JSON (or the string)
    event: str  # id of the tool.returned event

    def to_dict(self) -> dict:
        return attrs.asdict(self)


@attrs.define
class Pending:
    """A batch being run: the reply's calls, the next index, and a pause in progress."""

    calls: list[ToolCall]
    index: int
    reply_event: str
    checkin: dict | None = None  # {id, tool, call_id, args_fp, link, source, question, ...}
    inner: dict | None = None  # checkpoint of an inner agent run paused inside the call


class Mark(NamedTuple):
    """What an iteration starts from, once its cursor is decided: what its model call and tools
    change (the history grows; results, steps, opened skills, picks), as it was before them.
    Speed: a named tuple (built in one C call): one is made at every iteration."""

    history: int
    last_batch: tuple[ToolResult, ...]
    returned: frozenset[str]
    steps: dict[str, int]
    opened: tuple[str, ...]
    pick: str | None
    pick_event: str | None

    def to_dict(self) -> dict:
        return {"history": self.history, "last_batch": [r.to_dict() for r in self.last_batch],
                "returned": sorted(self.returned), "steps": dict(self.steps),
                "opened": list(self.opened), "pick": self.pick, "pick_event": self.pick_event}

    @classmethod
    def from_dict(cls, d: dict) -> "Mark":
        if type(d["history"]) is not int or not isinstance(d["steps"], dict):
            raise ValueError("`state.mark` is not a mark")
        return cls(d["history"], tuple(ToolResult(**r) for r in d["last_batch"]),
                   frozenset(d["returned"]), dict(d["steps"]), tuple(d["opened"]), d["pick"],
                   d["pick_event"])


@attrs.define
class RunState:
    run_id: str
    agent: str
    message: str
    conversation: str | None = None
    iteration: int = 1
    history: list[Message] = attrs.field(factory=list)
    cursor: str | None = None
    cursor_cause: str | None = None
    cursor_event: str | None = None
    opened: list[str] = attrs.field(factory=list)
    pick: str | None = None
    pick_event: str | None = None
    last_batch: list[ToolResult] = attrs.field(factory=list)
    returned: set[str] = attrs.field(factory=set)
    steps: dict[str, int] = attrs.field(factory=dict)
    nudged: bool = False
    # the last tool result when the previous iteration ran no tool (a nudge's): what `last` reads
    last_result: ToolResult | None = None
    executions: dict[str, int] = attrs.field(factory=dict)
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tool_calls: int = 0
    pending: Pending | None = None
    start_event: str = ""
    seq: int = 0
    time: int = 0
    decided: int = 0  # the iteration whose cursor decision is made (a retry reuses it)
    wrapping: str | None = None  # while the wrap-up call is due: the id of the event it follows
    turn: list[str] = attrs.field(factory=list)  # the events this iteration follows from
    mark: Mark | None = None

    def set_mark(self) -> None:
        """Remember the start of this iteration (its cursor decided): `rewind` goes back to it."""
        self.mark = Mark(len(self.history), tuple(self.last_batch), frozenset(self.returned),
                         dict(self.steps), tuple(self.opened), self.pick, self.pick_event)

    def rewind(self) -> bool:
        """Back to the mark: the state the last completed iteration left, with this iteration's
        cursor decision kept; totals stay (what ran was counted). False when there is no mark."""
        m = self.mark
        if m is None:
            return False
        del self.history[m.history:]
        self.pending, self.last_batch, self.returned = None, list(m.last_batch), set(m.returned)
        self.steps, self.opened = dict(m.steps), list(m.opened)
        self.pick, self.pick_event = m.pick, m.pick_event
        return True

    def to_checkpoint(self) -> dict:
        d = attrs.asdict(self, recurse=False)
        d["history"] = [_msg_to(m) for m in self.history]
        d["last_batch"] = [r.to_dict() for r in self.last_batch]
        d["returned"] = sorted(self.returned)
        if self.last_result is not None:
            d["last_result"] = self.last_result.to_dict()
        else:
            del d["last_result"]  # (absent, as in checkpoints written before it existed)
        d["pending"] = None if self.pending is None else {
            "calls": [_call_to(c) for c in self.pending.calls], "index": self.pending.index,
            "reply_event": self.pending.reply_event, "checkin": self.pending.checkin,
            "inner": self.pending.inner}
        d["turn"] = list(self.turn)
        d["mark"] = None if self.mark is None else self.mark.to_dict()
        return d

    @classmethod
    def from_checkpoint(cls, d: dict) -> "RunState":
        _check_fields(d)
        try:
            return cls._from_checked(dict(d))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise _damaged(f"{type(e).__name__}: {e}") from None

    @classmethod
    def _from_checked(cls, d: dict) -> "RunState":
        d["history"] = [_msg_from(m) for m in d["history"]]
        d["last_batch"] = [ToolResult(**r) for r in d["last_batch"]]
        d["returned"] = set(d["returned"])
        if d.get("last_result") is not None:
            d["last_result"] = ToolResult(**d["last_result"])
        d.setdefault("decided", d.get("iteration", 1))  # (version 1: that cursor was decided)
        d["mark"] = None if d.get("mark") is None else Mark.from_dict(d["mark"])
        p = d.get("pending")
        d["pending"] = None if p is None else _pending_from(p)
        return cls(**d)


def _pending_from(p: dict) -> Pending:
    calls, index = [_call_from(c) for c in p["calls"]], p["index"]
    last = len(calls) - (p.get("checkin") is not None)  # (a check-in asks about calls[index])
    if type(index) is not int or not 0 <= index <= last:
        raise ValueError(f"`state.pending.index` is {index!r}, not a position in its "
                         f"{len(calls)} calls")
    return Pending(calls, index, p["reply_event"], p.get("checkin"), p.get("inner"))


_OPT_STR = (str, type(None))
_FIELDS: dict[str, Any] = {
    "run_id": str, "agent": str, "message": str, "conversation": _OPT_STR, "iteration": int,
    "history": list, "cursor": _OPT_STR, "cursor_cause": _OPT_STR, "cursor_event": _OPT_STR,
    "opened": list, "pick": _OPT_STR, "pick_event": _OPT_STR, "last_batch": list,
    "returned": list, "steps": "counts", "nudged": bool, "last_result": (dict, type(None)),
    "executions": "counts",
    "llm_calls": int, "tokens_in": "number", "tokens_out": "number", "tool_calls": int,
    "pending": (dict, type(None)), "start_event": str, "seq": int, "time": int,
    "decided": int, "wrapping": _OPT_STR, "turn": list, "mark": (dict, type(None)),
}


def _check_fields(d: Any) -> None:
    """Every field of the checkpoint's `state` has the type `to_checkpoint` writes."""
    if not isinstance(d, dict):
        raise _damaged(f"its `state` is {type(d).__name__}, not an object")
    for name in ("run_id", "agent", "message", "history", "last_batch", "returned"):
        if name not in d:
            raise _damaged(f"its `state` has no `{name}`")
    for name, value in d.items():
        kind = _FIELDS.get(name)
        if kind is None:
            raise _damaged(f"its `state` has an unknown field `{name}`")
        if kind == "counts":
            ok = isinstance(value, dict) and all(
                isinstance(k, str) and type(v) is int for k, v in value.items())
        elif kind in (int, "number"):
            ok = type(value) is int or (kind == "number" and type(value) is float)
        else:
            ok = isinstance(value, kind)
        if not ok:
            want = {"counts": "a map of names to counts", "number": "a number"}.get(kind) or _names(kind)
            raise _damaged(f"`state.{name}` is {type(value).__name__}, expected {want}")


def _names(kind: Any) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)


def _damaged(what: str) -> CheckpointError:
    return CheckpointError(f"the checkpoint is damaged: {what}; it cannot be resumed (was it "
                           f"edited by hand?): start a new run, or restore the store from a backup")


def _call_to(c: ToolCall) -> dict:
    out = {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
    if type(c) is UnreadCall:  # (unread arguments: still answered as invalid on resume)
        out["problem"] = c.problem
    return out


def _call_from(d: dict) -> ToolCall:
    problem = d.get("problem")
    if problem is not None and type(problem) is not str:
        raise _damaged("a pending call's `problem` is not text")
    if problem is not None:
        return UnreadCall(d["id"], d["name"], d["arguments"], problem)
    return ToolCall(d["id"], d["name"], d["arguments"])


def _msg_to(m: Message) -> dict:
    out = {"role": m.role, "content": m.content, "tool_calls": [_call_to(c) for c in m.tool_calls],
           "tool_call_id": m.tool_call_id, "name": m.name}
    if m.is_error:
        out["is_error"] = True
    if m.thinking:
        out["thinking"] = [dict(b) for b in m.thinking]
    return out


def _msg_from(d: dict) -> Message:
    return Message(d["role"], d["content"], tuple(_call_from(c) for c in d["tool_calls"]),
                   d.get("tool_call_id"), d.get("name"), d.get("is_error") is True,
                   _thinking_from(d.get("thinking")))


def _thinking_from(blocks: Any) -> tuple:
    if blocks is None:
        return ()
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise _damaged("a message's `thinking` is not a list of objects")
    return tuple(blocks)
