"""The one injectable source of nondeterminism: provider, host tools, clock, run ids.

Role:       the interpreter core asks `Effects` for everything outside itself; a run replayed
            with equal effects yields a byte-identical trace.
Invariants: the core never reads the wall clock or a random source; the logical clock ticks
            once per event; event ids are `<run>:<seq>`; only `Effects.live()` uses uuid and
            the real time (the latter only for host tools' `now()`, never for trace times).
"""
from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

import attrs

if TYPE_CHECKING:
    from .providers.base import Provider, SupportsComplete


class ClockError(ValueError):
    """The Effects clock gave an event time that is not an int, or went back."""


class LogicalClock:
    """Monotonic logical time: one tick per read (no wall clock)."""

    __slots__ = ("_t",)

    def __init__(self, start: int = 0):
        self._t = start

    def now(self) -> int:
        self._t += 1
        return self._t

    def peek(self) -> int:
        return self._t


class Clock(Protocol):
    """What `Effects(clock_factory=...)` makes: any object whose `now()` counts up from the
    start it was made with (an int per event, or a `datetime` host tools read as the time)."""

    def now(self) -> int | datetime: ...


def wall_clock() -> datetime:
    """The real time, timezone-aware (UTC): what `Effects.live()` gives host tools as `now()`."""
    return datetime.now(timezone.utc)


def counter_ids(prefix: str = "run") -> Callable[[], str]:
    """Run ids `prefix-1`, `prefix-2`, ... (deterministic)."""
    it = itertools.count(1)
    return lambda: f"{prefix}-{next(it)}"


def _uuid_ids() -> str:
    return "run-" + uuid.uuid4().hex[:12]


def _uuid_conversation_ids() -> str:
    return "conv-" + uuid.uuid4().hex[:12]


@attrs.define
class Effects:
    """Provider, host tool bindings, clock factory and run-id source of a run.

    `provider` may be None: the runner then uses the mock provider's demo mode.
    """

    provider: Provider | SupportsComplete | None = None
    tools: Mapping[str, Callable[..., Any]] = attrs.field(factory=dict)
    run_ids: Callable[[], str] = attrs.field(factory=lambda: counter_ids("run"))
    conversation_ids: Callable[[], str] = attrs.field(factory=lambda: counter_ids("conv"))
    clock_factory: Callable[[int], Clock] = LogicalClock
    wall: Callable[[], Any] | None = None  # what host tools read as "now"; None: the logical clock

    @classmethod
    def live(cls, provider: Provider | SupportsComplete | None = None,
             tools: Mapping[str, Callable[..., Any]] | None = None) -> "Effects":
        """Effects for real use: unique run ids (uuid) so several processes share one store, and
        the real time for host tools that ask for it (trace times stay logical)."""
        return cls(provider=provider, tools=dict(tools or {}), run_ids=_uuid_ids,
                   conversation_ids=_uuid_conversation_ids, wall=wall_clock)

    def new_run_id(self) -> str:
        """A fresh run id, from `run_ids`."""
        return self.run_ids()

    def new_conversation_id(self) -> str:
        """A fresh conversation id, from `conversation_ids` (agents sharing these effects, or a
        store, then never give two conversations one id)."""
        return self.conversation_ids()

    def clock(self, start: int = 0) -> Clock:
        """A run's clock counting from `start`, from `clock_factory`."""
        return self.clock_factory(start)

    def with_provider(self, provider: Provider | SupportsComplete | None) -> "Effects":
        """These effects with another model provider."""
        return attrs.evolve(self, provider=provider)
