"""Event times come from the Effects clock (semantics §12): `clock_factory(start)` makes it."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from interp_support import call

import afp_dsl as afp
from afp_dsl.effects import ClockError, Effects, counter_ids
from afp_dsl.providers.mock import MockProvider
from afp_dsl.runner import approve

SPEC = """
agent a { tools = [echo, refund, helper] policies = [guard] }
agent h { tools = [echo] }
tool echo { description = "Echo." input { word: string } }
tool refund { description = "Refund." input { amount: number } }
tool helper { description = "Ask the helper." input { q: string } impl = agent(h) }
policy guard { before refund { ask when args.amount > 100 because "Big refund." } }
"""


class Steps:
    """A logical clock counting up from `start` by `step` (a host's own tick size)."""

    made: list[int] = []

    def __init__(self, start: int = 0, step: int = 10):
        Steps.made.append(start)
        self.t, self.step = start, step

    def now(self) -> int:
        self.t += self.step
        return self.t


class Wall:
    def __init__(self, start: int = 0):
        pass

    def now(self) -> datetime:
        return datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def _agent(script, clock, **kw):
    effects = Effects(run_ids=counter_ids("c"), clock_factory=clock)
    return afp.load(SPEC).agent("a", provider=MockProvider(script), effects=effects,
                                tools={"echo": lambda word: word, "refund": lambda amount: "ok"},
                                **kw)


def test_a_host_clock_gives_every_event_its_time_and_durations_follow_it():
    r = _agent([call("echo", word="x"), "done"], Steps).run("go")
    assert r.outcome == "answered"
    times = [e.time for e in r.trace]
    assert times == [10 * (i + 1) for i in range(len(times))]
    (called,) = [e for e in r.trace if e.kind == "tool.called"]
    (returned,) = [e for e in r.trace if e.kind == "tool.returned"]
    assert returned.payload["duration"] == returned.time - called.time == 10
    again = _agent([call("echo", word="x"), "done"], Steps).run("go")
    assert again.trace.to_json() == r.trace.to_json()  # same effects, same trace


def test_the_default_clock_counts_one_tick_per_event():
    effects = Effects(run_ids=counter_ids("c"))
    r = afp.load(SPEC).agent("a", provider=MockProvider([call("echo", word="x"), "done"]),
                             effects=effects, tools={"echo": lambda word: word}).run("go")
    assert [e.time for e in r.trace] == list(range(1, len(r.trace) + 1))


def test_a_resumed_run_asks_the_clock_to_start_where_the_run_stopped():
    Steps.made = []
    agent = _agent([call("refund", amount=500), "done"], Steps)
    paused = agent.run("refund")
    assert paused.paused
    last = paused.trace[len(paused.trace) - 1].time
    done = agent.resume(paused.checkpoint, approve(paused.checkin, by="ops"))
    assert done.outcome == "answered"
    assert last in Steps.made  # the resumed recorder's clock starts from the checkpoint's time
    times = [e.time for e in done.trace]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert times[len(paused.trace)] == last + 10


def test_an_inner_agent_run_reads_the_same_clock():
    r = _agent([call("helper", q="hi"), "inner answer", "done"], Steps).run("go")
    assert r.outcome == "answered"
    (runs,) = r.inner.values()
    (inner,) = runs.runs.values()
    assert [e.time for e in inner] == [10 * (i + 1) for i in range(len(inner))]


def test_a_wall_clock_is_for_host_tools_and_events_keep_counting():
    r = _agent([call("echo", word="x"), "done"], Wall).run("go")
    assert [e.time for e in r.trace] == list(range(1, len(r.trace) + 1))


@pytest.mark.parametrize("answers", [[5, 3], [1.5], [True]])
def test_a_clock_that_goes_back_or_is_not_an_int_is_named(answers):
    class Bad:
        def __init__(self, start: int = 0):
            self.left = list(answers)

        def now(self):
            return self.left.pop(0) if len(self.left) > 1 else self.left[0]
    with pytest.raises(ClockError, match="Effects clock gave .* event times are ints that never "
                                         "go back; make `clock_factory"):
        _agent([call("echo", word="x"), "done"], Bad).run("go")


def test_a_clock_factory_that_cannot_make_a_clock_is_refused_when_the_agent_is_built():
    with pytest.raises(TypeError, match=r"`Effects\(clock_factory=...\)` must make a clock"):
        _agent(["done"], 5)
