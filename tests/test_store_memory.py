"""Bounded memory: the in-process store keeps the most recent runs (LRU), counts what it dropped,
says so when asked for a dropped run; the persistent stores keep everything."""
from __future__ import annotations

import gc
import tracemalloc

import pytest
from interp_support import load

from afp_dsl import stores
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock
from afp_dsl.trace import Event


def ev(run: str, seq: int) -> Event:
    return Event(seq, f"{run}:{seq}", "llm.called", seq, seq, (), None, {"text": "x" * 40})


def save(s, run: str, status: str = "finished", n: int = 2) -> None:
    s.save_run(run, "a", None, status, status if status == "paused" else "answered", None, {},
               [ev(run, i) for i in range(1, n + 1)])


def test_the_oldest_runs_are_dropped_counted_and_named_when_asked_for():
    s = stores.memory(max_runs=3)
    for i in range(1, 6):
        save(s, f"r{i}")
    assert [r["run_id"] for r in s.runs()] == ["r3", "r4", "r5"] and s.dropped == 2
    for ask in (s.run, s.events, s.trace):
        with pytest.raises(stores.RunDropped) as err:
            ask("r1")
        msg = str(err.value)
        assert "run `r1` was dropped from memory" in msg and "keeps the 3 most recent" in msg
        assert "has dropped 2" in msg and "afp.stores.sqlite" in msg
    assert isinstance(err.value, stores.StoreError)
    assert s.run("never-seen") is None and s.events("never-seen") == []


def test_reading_a_run_makes_it_recent():
    s = stores.memory(max_runs=3)
    for i in range(1, 4):
        save(s, f"r{i}")
    s.trace("r1")
    save(s, "r4")
    assert [r["run_id"] for r in s.runs()] == ["r1", "r3", "r4"]


def test_paused_runs_outlive_finished_ones_and_a_dropped_paused_run_says_so():
    s = stores.memory(max_runs=2)
    save(s, "p1", "paused")
    s.put_checkpoint("p1", {"raw": 1})
    s.open_checkin("c1", "p1", "fp")
    save(s, "f1")
    save(s, "f2")
    assert [r["run_id"] for r in s.runs()] == ["p1", "f2"] and s.checkpoint("p1") == {"raw": 1}
    save(s, "p2", "paused")
    save(s, "p3", "paused")  # only paused runs left: the oldest goes, checkpoint and check-in too
    assert [r["run_id"] for r in s.runs()] == ["p2", "p3"] and s.checkin("c1") is None
    with pytest.raises(stores.RunDropped, match="run `p1` was dropped"):
        s.checkpoint("p1")


def test_max_runs_none_keeps_everything_and_zero_is_refused():
    s = stores.MemoryStore(max_runs=None)
    for i in range(50):
        save(s, f"r{i}")
    assert len(s.runs()) == 50 and s.dropped == 0
    with pytest.raises(stores.StoreError, match="at least 1"):
        stores.MemoryStore(max_runs=0)


def test_an_agent_on_a_bounded_store_keeps_the_recent_runs_and_explains_older_ones():
    program = load("agent g { }")
    agent = program.agent(provider=mock(["a"] * 6), store=stores.memory(max_runs=2),
                          effects=Effects(run_ids=counter_ids("r")))
    ids = [agent.run("hi").run_id for _ in range(5)]
    assert [r["run_id"] for r in agent.store.runs()] == ids[-2:] and agent.store.dropped == 3
    with pytest.raises(stores.RunDropped, match=f"run `{ids[0]}` was dropped from memory"):
        agent.store.trace(ids[0])


def test_the_agents_default_store_is_bounded():
    agent = load("agent g { }").agent(provider=mock(["a"]))
    assert isinstance(agent.store, stores.MemoryStore)
    assert agent.store.max_runs == stores.DEFAULT_MAX_RUNS


def test_the_persistent_store_keeps_what_memory_drops(tmp_path):
    program = load("agent g { }")
    agent = program.agent(provider=mock(["a"] * 6), store=stores.sqlite(tmp_path / "r.db"),
                          effects=Effects(run_ids=counter_ids("r")))
    ids = [agent.run("hi").run_id for _ in range(5)]
    assert [r["run_id"] for r in agent.store.runs()] == ids
    assert len(agent.store.trace(ids[0])) > 0


def _retained(max_runs: int | None, runs: int) -> int:
    """Bytes still held after `runs` runs of 50 events went through a store."""
    gc.collect()
    tracemalloc.start()
    s = stores.MemoryStore(max_runs=max_runs)
    for i in range(runs):
        save(s, f"r{i}", n=50)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(s.runs()) == min(max_runs or runs, runs)
    return held


def test_retained_memory_is_bounded_by_max_runs_not_by_the_events_seen():
    bounded = _retained(10, 1000)  # 5·10^4 events seen, 10 runs kept
    unbounded = _retained(None, 100)  # 5·10^3 events seen, all kept
    assert bounded < 1_000_000 < unbounded


def _eager(saves: list[list[Event]]) -> tuple[list[Event], tuple[int, int, int]]:
    """What the store held after `saves` of one run when every save indexed and counted at once:
    the first event of each seq, in seq order, and (count, highest iteration, last time)."""
    stored: dict[int, Event] = {}
    for events in saves:
        for e in events:
            stored.setdefault(e.seq, e)
    events = [stored[k] for k in sorted(stored)]
    if not events:
        return events, (0, 0, 0)
    return events, (len(events), max(0, *(e.iteration for e in events)),
                    max(0, *(e.time for e in events)))


@pytest.mark.parametrize("read_between", [False, True])
def test_a_first_save_indexed_when_read_gives_what_an_eager_save_gave(read_between):
    """A run's first save is kept as given and indexed when read (`MemoryStore._settle`): every
    read, and a later save merging into it, sees the eager store's events and counts (duplicate
    and unordered seqs, empty saves, a resumed run's second save)."""
    def e(seq: int, iteration: int, time: int, tag: str = "") -> Event:
        return Event(seq, f"r:{seq}{tag}", "llm.called", iteration, time, (), None, {"t": tag})

    cases = [[[e(1, 0, 1), e(2, 1, 2), e(3, 1, 5)]],
             [[e(3, 2, 9), e(1, 0, 1), e(3, 7, 2, "dup"), e(2, 1, 3)]],
             [[]], [[], [e(1, 1, 1)]],
             [[e(1, 0, 1), e(2, 1, 2)], [e(2, 5, 50, "again"), e(3, 2, 3), e(4, 3, 4)]]]
    for saves in cases:
        s = stores.memory(max_runs=None)
        for k, events in enumerate(saves):
            s.save_run("r", "a", None, "finished", "answered", None, {}, iter(events),
                       new_run=k == 0)
            if read_between:
                s.run("r")
        want, (n, iterations, time) = _eager(saves)
        row = s.run("r")
        assert (row["events"], row["iterations"], row["time"]) == (n, iterations, time)
        assert s.events("r") == want and list(s.trace("r")) == want
        assert [(r["events"], r["iterations"], r["time"]) for r in s.runs()] == [
            (n, iterations, time)]
