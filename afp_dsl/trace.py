"""The run trace: immutable events appended in order, with a deterministic JSON form.

Role:       every observable decision of a run is one `Event`; `afpc why`, exports and tests
            read it. The interpreter appends; nothing else writes. `tally` counts what a run
            without `run.finished` (still going, or cut off) did so far.
Emits:      the kinds in `KINDS` (semantics §12).
Invariants: payloads are plain JSON and already redacted when appended; `to_json` is
            byte-identical for equal traces (sorted keys, compact separators); appends are O(1).
"""
from __future__ import annotations

import json
from itertools import islice
from typing import Any, Iterable, Iterator, NamedTuple

from .source import Span

KINDS = (
    "run.started", "context.composed", "llm.called", "llm.replied", "tool.called",
    "tool.args_invalid", "policy.decided", "checkin.requested", "checkin.decided",
    "tool.returned", "route.evaluated", "route.conflict", "cursor.moved", "skill.rejected",
    "step.advanced", "step.skipped", "steps.unfinished", "budget.exhausted", "run.paused",
    "run.resumed", "redaction.applied", "run.finished",
    "llm.retry", "llm.fallback", "llm.circuit",  # reported by resilient providers
)


# Speed: a named tuple, not a frozen attrs class. The interpreter makes one per recorded event
# (5 to 8 per tool-calling iteration); a named tuple is built in one C call, where a frozen attrs
# instance sets each of its 8 fields through `object.__setattr__` (≈ 6,500 instructions more per
# event, measured with bench.instructions). It is as immutable, and equal, hashed and printed by
# its fields as before.
class Event(NamedTuple):
    """One trace event. `caused_by` holds ids of earlier events this one depends on."""

    seq: int
    id: str
    kind: str
    iteration: int
    time: int
    caused_by: tuple[str, ...]
    source: Span | None
    payload: Any

    def to_dict(self) -> dict:
        src = None
        if self.source is not None:
            src = {"file": self.source.file, "start": self.source.start, "end": self.source.end}
        return {"seq": self.seq, "id": self.id, "kind": self.kind, "iteration": self.iteration,
                "time": self.time, "caused_by": list(self.caused_by), "source": src,
                "payload": self.payload}

    @classmethod
    def from_dict(cls, d: dict) -> "Event":
        s = d.get("source")
        span = Span(s["file"], s["start"], s["end"]) if s else None
        return cls(d["seq"], d["id"], d["kind"], d["iteration"], d["time"],
                   tuple(d.get("caused_by", ())), span, d.get("payload"))

    def to_json(self) -> str:
        return dumps(self.to_dict())


def takes_edge(payload: Any, src: str, dst: str) -> bool:
    """True when a `cursor.moved` payload took the declared edge `src -> dst`: a route fired
    over it, or the model picked `dst` over it (the move names the edge). An entry, a stay, or
    a pick no route from `src` allowed moves the cursor without taking an edge."""
    return (isinstance(payload, dict) and payload.get("from") == src and payload.get("to") == dst
            and payload.get("cause") in ("route", "model-pick") and payload.get("edge") is not None)


def tally(events: Iterable[Event]) -> dict:
    """For a run without `run.finished` (still going, or its process was cut off): the counts
    `run.finished` would give, counted from its events, and `so_far: True`. Stored payloads are
    not trusted to have any shape."""
    tokens, iterations, llm_calls, tool_calls = [0, 0], 0, 0, 0
    for e in events:
        if type(e.iteration) is int:
            iterations = max(iterations, e.iteration)
        llm_calls += e.kind == "llm.called"
        tool_calls += e.kind == "tool.called"
        usage = e.payload.get("usage") if e.kind == "llm.replied" and isinstance(e.payload, dict) else None
        if isinstance(usage, list) and len(usage) == 2 and all(type(u) is int for u in usage):
            tokens = [tokens[0] + usage[0], tokens[1] + usage[1]]
    return {"iterations": iterations, "llm_calls": llm_calls, "tool_calls": tool_calls,
            "tokens": tokens, "so_far": True}


def dumps(value: Any) -> str:
    """The one JSON encoding of trace data: sorted keys, compact, UTF-8 kept, strict JSON."""
    return json_text(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                     default=str)


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)` that always writes strict JSON: a NaN or an infinity (a host
    tool may return one; the interpreter keeps it) is written as the string "NaN", "Infinity" or
    "-Infinity", the convention of protobuf's JSON mapping, instead of Python's bare `NaN`,
    which no strict JSON reader accepts. Values without one are encoded exactly as before."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
    return json.dumps(finite(value), allow_nan=False, **options)


def finite(value: Any) -> Any:
    """A copy of plain data with every NaN or infinity replaced by its string (`json_text`)."""
    if isinstance(value, float):
        if value != value:
            return "NaN"
        return value if abs(value) != _INF else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


_INF = float("inf")


def run_events(events: Any) -> list[Event]:
    """The events of a run given as its trace, a list of events, or its `RunResult` (what every
    export takes); anything else is a `TypeError` saying what to pass."""
    trace = getattr(events, "trace", None)
    if trace is not None and not isinstance(events, (str, bytes)):
        events = trace
    if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
        raise TypeError(f"pass the run's events (`result.trace`, or the `RunResult`), not a "
                        f"value of type `{type(events).__name__}`; a stored run's are "
                        f"`store.events(run_id)`")
    out = list(events)
    if not all(hasattr(e, "kind") and hasattr(e, "id") for e in out):
        raise TypeError("pass the run's events (`result.trace`): these are not trace events")
    return out


class Trace:
    """An append-only list of events of one run (and, after a resume, its continuation)."""

    __slots__ = ("run_id", "_events")

    def __init__(self, run_id: str, events: list[Event] | None = None):
        self.run_id = run_id
        self._events: list[Event] = list(events or ())

    def append(self, event: Event) -> Event:
        self._events.append(event)
        return event

    def appender(self) -> Any:
        """The list's own `append` for this trace's events: what the recorder calls (one C call
        per event instead of a method call and then the list's)."""
        return self._events.append

    @property
    def next_seq(self) -> int:
        return len(self._events) + 1 if not self._events else self._events[-1].seq + 1

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __repr__(self) -> str:
        return f"<Trace {self.run_id}: {len(self._events)} events>"

    def __getitem__(self, i: int) -> Event:
        return self._events[i]

    def tail(self, k: int) -> list[Event]:
        """The last `k` events (O(k))."""
        return self._events[-k:] if k > 0 else []

    def index(self, event_id: str) -> int | None:
        """The position of the event with this id, or None. O(1) for this trace's own ids (its
        events' seqs run on without gaps: the id ends with the seq); any other id is searched
        for from the newest event."""
        events = self._events
        if not events:
            return None
        seq = event_id.rpartition(":")[2]
        if seq.isascii() and seq.isdigit():
            i = int(seq) - events[0].seq
            if 0 <= i < len(events) and events[i].id == event_id:
                return i
        for i in range(len(events) - 1, -1, -1):
            if events[i].id == event_id:
                return i
        return None

    def since(self, i: int) -> list[Event]:
        """The events after position `i`, oldest first."""
        return self._events[i + 1:]

    def latest(self, k: int) -> Iterator[Event]:
        """The last `k` events, newest first, without copying (O(1) until iterated)."""
        return islice(reversed(self._events), k)

    @property
    def events(self) -> tuple[Event, ...]:
        return tuple(self._events)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self._events if e.kind == kind]

    def by_id(self, event_id: str) -> Event | None:
        for e in self._events:
            if e.id == event_id:
                return e
        return None

    def to_json(self) -> str:
        """The whole trace as one JSON document (deterministic)."""
        return dumps({"run_id": self.run_id, "events": [e.to_dict() for e in self._events]})

    def to_jsonl(self) -> str:
        return "".join(e.to_json() + "\n" for e in self._events)

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        """The trace `to_json` wrote; anything else is a `ValueError` saying what was expected."""
        d = json.loads(text)  # (a JSONDecodeError is a ValueError)
        try:
            return cls(d["run_id"], [Event.from_dict(e) for e in d["events"]])
        except (KeyError, TypeError, AttributeError, IndexError) as e:
            raise ValueError(f"not a trace as `Trace.to_json` writes it ({type(e).__name__}: "
                             f"{str(e)[:80]}): expected {{\"run_id\": ..., \"events\": [{{\"seq\", "
                             f"\"id\", \"kind\", \"iteration\", \"time\", ...}}, ...]}}") from None
