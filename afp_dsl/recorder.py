"""The recorder: every event of a run, redacted, at the time the Effects clock gives.

Role:       `Recorder.emit` is the one way an event enters a trace (`emit_shaped` for ledger
            rows, `emit_rows` for a settled policy walk's rows, `emit_vouched` /
            `emit_vouched_plus` for a tool call's `tool.called` and `tool.returned`); `run_clock`
            makes a run's clock from its Effects. Split from `runtime`.
Emits:      whatever kind it is given.
Invariants: every recorded payload passes the redactor first; event ids are `<run>:<seq>`; times
            come from the Effects clock (default `LogicalClock`: one tick per event), are ints and
            never go back (`ClockError` names a clock that breaks this, or raises).
"""
from __future__ import annotations

from typing import Any

from .effects import ClockError, LogicalClock
from .evidence import clip_evidence
from .frozen import a_type
from .redaction import Redactor
from .redaction_events import scrub_event
from .source import Span
from .trace import Event, Trace

# Speed: events are built with `tuple.__new__` on their eight fields in order, one C call; the
# named tuple's own `__new__` is a Python function around the same call (≈ 2,000 instructions
# more per event).
_new = tuple.__new__

# Speed: the decimal texts of the seqs met so far, shared by every run (numbers, not run data):
# an event id is then one concatenation, where formatting an int into an f-string costs ≈ 740
# instructions more. `_SEQ_TEXT[i] == str(i)` always: the table is replaced by a longer one
# built whole (never extended in place, so a thread reading it meanwhile sees either table),
# doubling, up to `_SEQ_CAP` entries (≈ 3.5 MB); past that a seq is formatted.
_SEQ_TEXT: list[str] = list(map(str, range(256)))
_SEQ_CAP = 1 << 16


def seq_text(seq: int) -> str:
    """`str(seq)`, from the table when `seq` is below `_SEQ_CAP` (growing it)."""
    global _SEQ_TEXT
    if 0 <= seq < _SEQ_CAP:
        table = _SEQ_TEXT
        if seq >= len(table):
            table = _SEQ_TEXT = list(map(str, range(min(2 * seq + 2, _SEQ_CAP))))
        return table[seq]
    return str(seq)


class Recorder:
    """Appends redacted events to a trace, each at the time the Effects clock gives."""

    __slots__ = ("trace", "redactor", "seq", "time", "_append", "clock", "_next", "_logical",
                 "_prefix", "names")

    def __init__(self, trace: Trace, redactor: Redactor, seq: int = 0, time: int = 0,
                 clock: Any = None, names: frozenset[str] = frozenset()):
        """`clock`: the run's Effects clock (`Effects.clock(time)`), read once per event; None
        or a plain `LogicalClock` ticks here, one per event, without a call (the same times).
        A clock whose first answer is not a number (a wall clock, for host tools) is not read
        again: the events count their own ticks. `names`: the program's declared names, which
        redaction never rewrites (`redaction_events`)."""
        self.names = names
        self.trace = trace
        self._append = trace.appender()
        self._prefix = f"{trace.run_id}:"  # (an event's id is this and its seq's text)
        self.redactor = redactor
        self.seq = seq
        self.time = time
        self.clock = None if clock is None or type(clock) is LogicalClock else clock
        self._next: int | None = None
        self._logical = False  # the clock has given an event time (a logical clock)

    def next_time(self) -> int:
        """The time the next event will have (a tool call's duration is known before its
        `tool.returned` is recorded); a host clock is read now, and that reading is used."""
        if self.clock is None:
            return self.time + 1
        if self._next is None:
            self._next = self._read()
        return self._next

    def _tick(self) -> int:
        t = self._next
        if t is None:
            return self._read()
        self._next = None
        return t

    def _read(self) -> int:
        try:
            t = self.clock.now()
        except Exception as exc:  # host code: named as the clock's, with the fix
            raise ClockError(
                f"the Effects clock's `now()` raised {type(exc).__name__} after time "
                f"{self.time}; make `clock_factory(start)` return a clock whose `now()` counts up "
                f"from `start` (as `LogicalClock` does)") from exc
        if type(t) is int and t >= self.time:
            self._logical = True
            return t
        if not self._logical and not isinstance(t, (int, float)):
            # a wall clock (its `now()` answers a `datetime`) is what host tools read through
            # `now()`; event times stay logical: counted here from then on
            self.clock = None
            return self.time + 1
        raise ClockError(
            f"the Effects clock gave {repr(t)[:40]} after {self.time}: event times are ints "
            f"that never go back; make `clock_factory(start)` return a clock whose `now()` "
            f"counts up from `start` (as `LogicalClock` does)")

    def emit(self, kind: str, payload: Any, *, iteration: int, source: Span | None = None,
             caused_by: tuple[str, ...] | list[str] = (), clip: bool = False,
             shaper: Any = None, shape_of: Any = None,
             vouch: tuple[str, ...] | None = None) -> str:
        """Record one event; `clip`: its payload holds conditions, whose evidence is shortened
        after the payload is redacted, never before (`evidence.clip_evidence`); `shaper`: how
        its clean check is settled from `shape_of` (`CleanCheck.is_clean_as`), None: in full;
        `vouch`: when the payload is found clean (recorded as it is), the dicts with these keys
        whose values all sit in it, recorded by `emit_vouched` (`emit_vouched_plus`) under this
        event's id, need no check of their own until a secret is remembered
        (`CleanCheck.vouch`)."""
        self.seq += 1
        if self.clock is None:
            self.time += 1
        else:
            self.time = self._tick()
        try:  # Speed: the seq's text from the table (see `_SEQ_TEXT`)
            eid = self._prefix + _SEQ_TEXT[self.seq]
        except IndexError:
            eid = self._prefix + seq_text(self.seq)
        red = self.redactor  # Speed: `not red.inert` inline (a property call per event)
        if payload and (red._rules or red._memory.values):
            if red.is_clean(payload) if shaper is None else red.is_clean_as(payload, shaper,
                                                                            shape_of):
                if vouch is not None:  # Speed: `vouch` inline when its key tuple is known
                    if red._vouched_keys.get(id(vouch)) is vouch:  # (caches current: checked)
                        red._vouched = eid
                    else:
                        red.vouch(eid, vouch)
            else:  # (a clean payload is kept as is, as it is with no rules at all: scrubbing
                payload = scrub_event(red, kind, payload, self.names)  # would only copy it)
        if clip:
            payload = clip_evidence(kind, payload)
        self._append(_new(Event, (self.seq, eid, kind, iteration, self.time,
                                  tuple(filter(None, caused_by)), source, payload)))
        return eid

    def emit_shaped(self, kind: str, payload: dict, shape: tuple, tail: Any, iteration: int,
                    source: Span | None, cause: str) -> str:
        """`emit` for a payload that is a function of `shape`, `tail` and `iteration`
        (`is_clean_shaped`), caused by one event: a ledger row."""
        self.seq += 1
        if self.clock is None:
            self.time += 1
        else:
            self.time = self._tick()
        try:  # Speed: the seq's text from the table (see `_SEQ_TEXT`)
            eid = self._prefix + _SEQ_TEXT[self.seq]
        except IndexError:
            eid = self._prefix + seq_text(self.seq)
        red = self.redactor
        if (red._rules or red._memory.values) and not red.is_clean_shaped(payload, shape, tail,
                                                                         iteration):
            payload = scrub_event(red, kind, payload, self.names)
        self._append(_new(Event, (self.seq, eid, kind, iteration, self.time, (cause,), source,
                                  payload)))
        return eid

    def emit_rows(self, heads: list, call_id: Any, iteration: int, cause: str) -> None:
        """`emit_shaped` of the ledger rows of one walk: each head is (payload with `call_id`
        and `iteration` still None, shape, source span); every row gets `call_id` and
        `iteration`, and is caused by `cause`. Speed: the rows share their call id and
        iteration, checked once, so each row costs one lookup of its shape; a row whose shape is
        not known clean takes `is_clean_shaped`."""
        red = self.redactor
        if not (red._clean_version == red._memory.version and type(call_id) is str
                and call_id in red._clean and type(iteration) is int
                and iteration in red._clean_ints) or self.clock is not None:
            return self._emit_rows(heads, call_id, iteration, (cause,))
        # Speed: the usual walk inline: the call id and iteration known clean (so the clean
        # check has run: there are rules or secrets, and every row is checked), a logical clock
        # (one tick per row, counted here)
        shapes, append, causes = red._clean_shapes, self._append, (cause,)
        seq = start = self.seq
        time = self.time
        for row, shape, span in heads:
            payload = row.copy()
            payload["call_id"] = call_id
            payload["iteration"] = iteration
            if shape not in shapes and not red.is_clean_shaped(payload, shape, call_id, iteration):
                self.seq, self.time = seq, time  # (the general loop takes over here)
                return self._emit_rows(heads[seq - start:], call_id, iteration, causes)
            seq += 1
            time += 1
            try:
                eid = self._prefix + _SEQ_TEXT[seq]
            except IndexError:
                eid = self._prefix + seq_text(seq)
            append(_new(Event, (seq, eid, "policy.decided", iteration, time, causes, span,
                                payload)))
        self.seq, self.time = seq, time
        return None

    def _emit_rows(self, heads: list, call_id: Any, iteration: int, causes: tuple) -> None:
        """`emit_rows`' general loop: each row checked (`is_clean_shaped`, when there is
        anything to check), the clock read per row."""
        red, append = self.redactor, self._append
        check = bool(red._rules or red._memory.values)
        for row, shape, span in heads:
            payload = row.copy()
            payload["call_id"] = call_id
            payload["iteration"] = iteration
            if check and not red.is_clean_shaped(payload, shape, call_id, iteration):
                payload = scrub_event(red, "policy.decided", payload, self.names)
            self.seq = seq = self.seq + 1
            self.time = time = self.time + 1 if self.clock is None else self._tick()
            append(_new(Event, (seq, self._prefix + seq_text(seq), "policy.decided",
                                iteration, time, causes, span, payload)))

    def emit_vouched(self, kind: str, payload: dict, token: str, iteration: int,
                     source: Span | None, cause: str) -> str:
        """`emit` of a payload made as `vouch` says, caused by one event."""
        self.seq += 1
        if self.clock is None:
            self.time += 1
        else:
            self.time = self._tick()
        try:  # Speed: the seq's text from the table (see `_SEQ_TEXT`)
            eid = self._prefix + _SEQ_TEXT[self.seq]
        except IndexError:
            eid = self._prefix + seq_text(self.seq)
        red = self.redactor
        if (red._rules or red._memory.values) and (  # Speed: the vouch's test inline
                token != red._vouched or red._clean_version != red._memory.version) and (
                not red.is_clean_vouched(payload, token)):
            payload = scrub_event(red, kind, payload, self.names)
        self._append(_new(Event, (self.seq, eid, kind, iteration, self.time,
                                  (cause,) if cause else (), source, payload)))
        return eid

    def emit_vouched_plus(self, kind: str, payload: dict, token: str, keys: tuple[str, ...],
                          values: tuple, iteration: int, source: Span | None,
                          caused_by: tuple[str, ...]) -> str:
        """`emit` of a payload made of entries as `vouch` says and the entries `keys` →
        `values` (`CleanCheck.is_clean_vouched_plus`)."""
        self.seq += 1
        if self.clock is None:
            self.time += 1
        else:
            self.time = self._tick()
        try:  # Speed: the seq's text from the table (see `_SEQ_TEXT`)
            eid = self._prefix + _SEQ_TEXT[self.seq]
        except IndexError:
            eid = self._prefix + seq_text(self.seq)
        red = self.redactor
        if red._rules or red._memory.values:
            # Speed: `is_clean_vouched_plus` inline when its caches answer (one call less)
            if token == red._vouched and red._clean_version == red._memory.version and (
                    red._vouched_keys.get(id(keys)) is keys):
                try:
                    clean = red._clean_items(values)
                except RecursionError:  # too deep to walk: `scrub` replaces it whole
                    clean = False
            else:
                clean = red.is_clean_vouched_plus(payload, token, keys, values)
            if not clean:
                payload = scrub_event(red, kind, payload, self.names)
        self._append(_new(Event, (self.seq, eid, kind, iteration, self.time,
                                  tuple(filter(None, caused_by)), source, payload)))
        return eid


def run_clock(effects: Any, start: int) -> Any:
    """The Effects clock of a run whose time is `start` (None: the recorder counts its ticks;
    an effects object without a `clock` has none)."""
    make = getattr(effects, "clock", None)
    if not callable(make):
        return None
    try:
        clock = make(start)
    except Exception as exc:  # host code: named as the clock factory's, with the fix
        raise ClockError(f"`Effects(clock_factory=...)` raised {type(exc).__name__} making the "
                         f"clock of a run starting at time {start}; {_CLOCK_FIX}") from exc
    if not callable(getattr(clock, "now", None)):
        raise ClockError(f"`Effects(clock_factory=...)` made {a_type(clock)}, which "
                         f"has no `now()`; {_CLOCK_FIX}")
    return clock


_CLOCK_FIX = ("make `clock_factory(start)` return a clock whose `now()` counts up from `start` "
              "(as `LogicalClock` does)")


def learn(red: Redactor, value: Any) -> None:
    """Teach `red` the secrets under redacted keys in `value` without counting a redaction."""
    red.learn(value)


def inert(red: Redactor) -> bool:
    """True when scrubbing cannot change anything: no rules and nothing remembered."""
    return red.inert
