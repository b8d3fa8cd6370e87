"""The bounded in-process run store: the API's default, the `Store` interface without encoding.

Role:       `MemoryStore` keeps runs, events, checkpoints and check-ins in dicts, LRU-bounded;
            split from `store` (the interface, errors and selection) like the SQL stores.
Emits:      `RunDropped` when asked for a run it evicted; `StoreError` for a new run saved under
            an id it holds.
Invariants: at most `max_runs` runs, finished ones evicted before paused ones; an evicted run's
            events, checkpoint and check-ins go with it; a check-in is decided at most once; a
            run's first events are indexed by seq and counted when first read (`_settle`), so
            every read sees what an eager save would have stored.
"""
from __future__ import annotations

import json
import operator
import threading
from collections import OrderedDict
from typing import Iterable

from .store import (DEFAULT_MAX_RUNS, RunDropped, Stamp, StoreError, check_limit, encode,
                    encode_raw, reused_run_id, summarize)
from .frozen import a_type
from .trace import Event, Trace

_SEQ = operator.attrgetter("seq")


class MemoryStore:
    """The API's in-process default: the `Store` interface without encoding cost, bounded.

    Keeps at most `max_runs` runs (LRU: saving or reading a run makes it recent). Finished runs
    are evicted before paused ones; an evicted run's events, checkpoint and check-ins go, and
    asking for it raises `RunDropped` naming it. `dropped` counts evictions. `max_runs=None`
    keeps everything (tests, short scripts). Not `durable`: a run is saved once, when it ends
    (or pauses)."""

    durable = False

    def __init__(self, max_runs: int | None = DEFAULT_MAX_RUNS, *, stamp: Stamp | None = None):
        if max_runs is not None and (isinstance(max_runs, bool) or not isinstance(max_runs, int)):
            raise TypeError(f"`max_runs` must be a number of runs (an `int` ≥ 1) or None for no "
                            f"bound, not {a_type(max_runs)}")
        if max_runs is not None and max_runs < 1:
            raise StoreError(f"`max_runs` must be at least 1 (or None for no bound), "
                             f"not {max_runs}")
        self.max_runs = max_runs
        self.path = ":memory:"
        self.dropped = 0
        self._stamp = stamp
        self._lock = threading.RLock()
        self._runs: OrderedDict[str, dict] = OrderedDict()
        self._events: dict[str, dict[int, Event]] = {}
        # Speed: a run's first save keeps its events as they are (a tuple); they are indexed by
        # seq and counted (`summarize`) when the run is first read or saved again (`_settle`): a
        # host that never reads a run back pays nothing per event (≈ 100 ns an event eagerly).
        self._unsettled: dict[str, tuple[Event, ...]] = {}
        self._checkpoints: dict[str, dict] = {}
        self._checkins: dict[str, dict] = {}
        self._gone: OrderedDict[str, None] = OrderedDict()  # recently dropped ids (bounded)
        self._order = 0

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ runs and events
    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event], *, new_run: bool = False) -> None:
        with self._lock:
            if new_run and run_id in self._runs:
                raise reused_run_id(self.path, run_id)
            self._settle(run_id)
            stored = self._events.get(run_id)
            if stored:
                for e in events:
                    stored.setdefault(e.seq, e)
                counts = summarize(stored.values())
            else:  # (a fresh run: kept as it is until read, see `_settle`)
                self._events.pop(run_id, None)
                self._unsettled[run_id] = tuple(events)
                counts = (None, None, None)
            old = self._runs.get(run_id)
            if old is None:
                self._order += 1
            now = self._stamp() if self._stamp else None
            self._runs[run_id] = {
                "run_id": run_id, "agent": agent if old is None else old["agent"],
                "spec": spec if old is None else old["spec"], "status": status,
                "outcome": outcome, "answer": answer, "meta": json.loads(encode(meta)),
                "iterations": counts[1], "time": counts[2], "events": counts[0],
                "started": now if old is None else old["started"], "updated": now,
                "order": self._order if old is None else old["order"]}
            self._runs.move_to_end(run_id)
            self._gone.pop(run_id, None)
            self._evict()

    def _settle(self, run_id: str) -> None:
        """Index and count the events of `run_id`'s first save, if not done yet: what an eager
        save stores (the first event of each seq; the counts of its run row)."""
        events = self._unsettled.get(run_id)
        if events is None:
            return
        stored: dict[int, Event] = {}
        stored.update(zip(map(_SEQ, reversed(events)), reversed(events)))  # (the first wins)
        n, iterations, time = summarize(stored.values())
        self._events[run_id] = stored
        del self._unsettled[run_id]
        self._runs[run_id].update(iterations=iterations, time=time, events=n)

    def _evict(self) -> None:
        if self.max_runs is None:
            return
        while len(self._runs) > self.max_runs:
            victim = next((r for r, d in self._runs.items() if d["status"] != "paused"), None)
            victim = victim or next(iter(self._runs))
            self._drop(victim)

    def _drop(self, run_id: str) -> None:
        self._runs.pop(run_id, None)
        self._events.pop(run_id, None)
        self._unsettled.pop(run_id, None)
        self._checkpoints.pop(run_id, None)
        for cid in [c for c, v in self._checkins.items() if v["run_id"] == run_id]:
            del self._checkins[cid]
        self.dropped += 1
        self._gone[run_id] = None
        while len(self._gone) > 10 * (self.max_runs or 1) + 100:
            self._gone.popitem(last=False)

    def _known(self, run_id: str) -> bool:
        """True when held (and now recent); raises `RunDropped` when evicted."""
        if run_id in self._runs:
            self._runs.move_to_end(run_id)
            return True
        if run_id in self._gone:
            raise RunDropped(
                f"run `{run_id}` was dropped from memory: this in-process store keeps the "
                f"{self.max_runs} most recent runs and has dropped {self.dropped}; use a "
                f"persistent store (`afp.stores.sqlite(path)` or `afp.stores.postgres(url)`) to "
                f"keep every run, or raise `max_runs`")
        return False

    def run(self, run_id: str) -> dict | None:
        with self._lock:
            if not self._known(run_id):
                return None
            self._settle(run_id)
            return dict(self._runs[run_id])

    def runs(self, limit: int | None = None) -> list[dict]:
        limit = check_limit(limit)
        with self._lock:
            for run_id in list(self._unsettled):
                self._settle(run_id)
            out = sorted((dict(r) for r in self._runs.values()), key=lambda r: r["order"])
        return out if limit is None else out[max(0, len(out) - limit):]

    def events(self, run_id: str) -> list[Event]:
        with self._lock:
            if not self._known(run_id):
                return []
            self._settle(run_id)
            stored = self._events.get(run_id, {})
            return [stored[k] for k in sorted(stored)]

    def trace(self, run_id: str) -> Trace:
        return Trace(run_id, self.events(run_id))

    # ------------------------------------------------------------ checkpoints (raw)
    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        with self._lock:
            self._checkpoints[run_id] = json.loads(encode_raw(checkpoint))

    def checkpoint(self, run_id: str) -> dict | None:
        with self._lock:
            c = self._checkpoints.get(run_id)
            if c is None:
                self._known(run_id)  # a dropped paused run says so
                return None
            return json.loads(json.dumps(c))

    def delete_checkpoint(self, run_id: str) -> bool:
        with self._lock:
            return self._checkpoints.pop(run_id, None) is not None

    # ------------------------------------------------------------ check-ins
    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        with self._lock:
            self._checkins.setdefault(checkin_id, {"id": checkin_id, "run_id": run_id, "fp": fp,
                                                   "state": "pending", "decision": None})

    def checkin(self, checkin_id: str) -> dict | None:
        with self._lock:
            c = self._checkins.get(checkin_id)
            return dict(c) if c is not None else None

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        with self._lock:
            c = self._checkins.get(checkin_id)
            if c is None or c["state"] != "pending" or c["fp"] != fp:
                return False
            c.update(state="decided", decision=json.loads(encode(decision)), fp="")  # (see `Store.decide_checkin`)
            return True
