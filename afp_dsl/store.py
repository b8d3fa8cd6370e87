"""The run store interface (`Store`), the bounded in-process `MemoryStore`, and store selection.

Role:       runs, redacted events, raw checkpoints and check-in decisions behind one Protocol;
            `SqliteStore` (store_sqlite.py, the default `.afp/runs.db`) and `PostgresStore`
            (store_postgres.py) implement it and pass one shared test suite.
Emits:      `StoreError` for a store that cannot be opened or used; `RunDropped` when a bounded
            memory store is asked for a run it evicted.
Invariants: events hold only redacted payloads; checkpoints (raw) live apart and are deleted when
            the run ends; a check-in is decided at most once (compare-and-set), across processes
            for the persistent stores; no wall clock here (a caller may pass `stamp`).
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from typing import Any, Callable, Iterable, Protocol, runtime_checkable

import attrs

from .source import Span
from .trace import Event, Trace

DEFAULT_PATH = ".afp/runs.db"
DEFAULT_MAX_RUNS = 1000
Stamp = Callable[[], str]  # an ISO-8601 time from the caller (the CLI); never read in the core


class StoreError(Exception):
    """A store that cannot be opened, migrated or reached; the message names the fix."""


class RunDropped(StoreError):
    """A bounded in-memory store evicted this run (it still counts it in `dropped`)."""


@runtime_checkable
class Store(Protocol):
    """Where runs live. Every method is safe to call from several threads.

    A run summary (`run`, `runs`) is a dict with the keys `run_id`, `agent`, `spec`, `status`
    (`running` | `paused` | `finished` | `interrupted`), `outcome` (None while running),
    `answer` (redacted), `meta`, `iterations` (highest iteration stored), `time` (logical time
    of the last event, from the effects clock), `events` (how many are stored), `started` /
    `updated` (ISO stamps from the caller's `stamp`, else None) and `order` (creation order
    within the store).

    A store whose runs outlive the process says so with a class attribute `durable = True`
    (optional; absent means False): the runner then saves each run as it goes, status
    `running`, before every model call, so a process that dies mid-run leaves its trace up to
    there. A `running` run is either in progress or was cut off that way.
    """

    path: str  # where it lives, for messages (a file, `:memory:`, or a URL without password)

    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event]) -> None:
        """Upsert the run's summary and append the events not yet stored (by `seq`), atomically.
        `events` may be all of the run's events or only the newest: the summary's counts cover
        every event stored."""

    def run(self, run_id: str) -> dict | None:
        """The run's summary; None when unknown; `RunDropped` when evicted from memory."""

    def runs(self, limit: int | None = None) -> list[dict]:
        """Run summaries, oldest first; with `limit`, only the newest `limit` of them."""

    def events(self, run_id: str) -> list[Event]:
        """The run's events by `seq` ([] when unknown; `RunDropped` when evicted)."""

    def trace(self, run_id: str) -> Trace:
        """`Trace(run_id, events(run_id))`."""

    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        """Store (replace) the raw resume state of a paused or failed run."""

    def checkpoint(self, run_id: str) -> dict | None:
        """The raw resume state, or None (finished, never paused, or already resumed)."""

    def delete_checkpoint(self, run_id: str) -> None:
        """Forget the raw state (the run ended); deleting a missing one is fine."""

    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        """Record a pending check-in for the call with fingerprint `fp` (idempotent)."""

    def checkin(self, checkin_id: str) -> dict | None:
        """`{id, run_id, fp, state: pending|decided, decision}` or None."""

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        """Compare-and-set: True only for the first decision of a pending check-in whose call
        fingerprint is `fp`; every other caller, in any process, gets False."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


# ---------------------------------------------------------------- shared helpers
@attrs.frozen
class Migration:
    """One schema version: its steps (SQL text, or a function given the open connection) run in
    order, once, in one transaction, then the version is recorded in `schema_version`."""

    version: int
    name: str
    steps: tuple[str | Callable[[Any], None], ...]


def summarize(events: Iterable[Event]) -> tuple[int, int, int]:
    """(event count, highest iteration, last logical time) of a run's events."""
    n = iterations = time = 0
    for e in events:
        n += 1
        iterations = max(iterations, e.iteration)
        time = max(time, e.time)
    return n, iterations, time


# ASCII-escaped, so any str (even a lone surrogate from a sloppy decoder) can be stored
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=str)
try:  # CPython's C encoder, built once: most of a store's cost per iteration is this encoding
    from json.encoder import c_encode_basestring_ascii, c_make_encoder  # type: ignore
    _C_JSON = c_make_encoder(None, str, c_encode_basestring_ascii, None, ":", ",", False, False,
                             True) if c_make_encoder and c_encode_basestring_ascii else None
except ImportError:  # pragma: no cover - other interpreters
    _C_JSON = None


def _compact(value: Any) -> str:
    """Compact JSON in the value's own key order; values are JSON trees (no cycle check)."""
    if _C_JSON is not None:
        return "".join(_C_JSON(value, 0))
    return _JSON.encode(value)


def batches(run_id: str, events: Iterable[Event], after: int = 0
            ) -> list[tuple[int, int, int, str]]:
    """The events with `seq > after` as per-iteration rows `(first_seq, last_seq, iteration,
    body)`: one row and one encoder call per iteration, which keeps a persistent store's cost
    per iteration low. `body` is a JSON array of `[seq, kind, time, caused_by, source, payload]`
    (`source` is `[file, start, end]` or null), plus the event id as a 7th item only when it is
    not `<run_id>:<seq>`."""
    rows: list[tuple[int, int, int, str]] = []
    group: list[Event] = []
    for e in events:
        if e.seq <= after:
            continue
        if group and e.iteration != group[-1].iteration:
            rows.append(_batch(run_id + ":", group))
            group = []
        group.append(e)
    if group:
        rows.append(_batch(run_id + ":", group))
    return rows


def _batch(prefix: str, group: list[Event]) -> tuple[int, int, int, str]:
    items = []
    for e in group:
        s = e.source
        item = (e.seq, e.kind, e.time, e.caused_by, s and (s.file, s.start, s.end), e.payload)
        items.append(item if e.id == prefix + str(e.seq) else (*item, e.id))
    return group[0].seq, group[-1].seq, group[0].iteration, _compact(items)


def unbatch(run_id: str, rows: Iterable[tuple[int, str]]) -> list[Event]:
    """The events of stored `(iteration, body)` batch rows, by `seq`."""
    out = []
    for iteration, body in rows:
        for item in json.loads(body):
            seq, kind, time, caused_by, src, payload = item[:6]
            eid = item[6] if len(item) > 6 else f"{run_id}:{seq}"
            out.append(Event(seq, eid, kind, iteration, time, tuple(caused_by),
                             Span(*src) if src else None, payload))
    out.sort(key=lambda e: e.seq)
    return out


def v1_events_to_batches(run_ids: list[str], read: Callable[[str], list[str]],
                         write: Callable[[str, tuple[int, int, int], list[tuple]], None]) -> None:
    """Migration 1 -> 2 for any backend: per run, read v1 event bodies (one JSON event per row),
    write the run's summary `(n_events, iterations, time)` and its batch rows."""
    for run_id in run_ids:
        events = [Event.from_dict(json.loads(b)) for b in read(run_id)]
        write(run_id, summarize(events), [(run_id, *r) for r in batches(run_id, events)])


def encode(value: Any) -> str:
    """JSON for a stored column (meta, decisions, raw checkpoints): sorted, ASCII-escaped."""
    return json.dumps(value, sort_keys=True, default=str)


encode_raw = encode  # raw checkpoints: kept only in the checkpoints table


def clean_text(text: str | None) -> str | None:
    """`text` storable as UTF-8: a lone surrogate becomes U+FFFD instead of failing the write."""
    if text is None or text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


RUN_KEYS = ("run_id", "agent", "spec", "status", "outcome", "answer", "meta", "iterations", "time",
            "events", "started", "updated", "order")


def run_dict(row: Iterable[Any]) -> dict:
    """A run summary from a row in `RUN_KEYS` order (meta as JSON text)."""
    d = dict(zip(RUN_KEYS, row))
    d["meta"] = json.loads(d["meta"] or "{}")
    return d


def checkin_dict(row: Iterable[Any]) -> dict:
    cid, run_id, fp, state, decision = row
    return {"id": cid, "run_id": run_id, "fp": fp, "state": state,
            "decision": json.loads(decision) if decision else None}


# ---------------------------------------------------------------- in memory
class MemoryStore:
    """The API's in-process default: the `Store` interface without encoding cost, bounded.

    Keeps at most `max_runs` runs (LRU: saving or reading a run makes it recent). Finished runs
    are evicted before paused ones; an evicted run's events, checkpoint and check-ins go, and
    asking for it raises `RunDropped` naming it. `dropped` counts evictions. `max_runs=None`
    keeps everything (tests, short scripts). Not `durable`: a run is saved once, when it ends
    (or pauses)."""

    durable = False

    def __init__(self, max_runs: int | None = DEFAULT_MAX_RUNS, *, stamp: Stamp | None = None):
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
        self._checkpoints: dict[str, dict] = {}
        self._checkins: dict[str, dict] = {}
        self._gone: OrderedDict[str, None] = OrderedDict()  # recently dropped ids (bounded)
        self._order = 0

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ runs and events
    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event]) -> None:
        with self._lock:
            stored = self._events.setdefault(run_id, {})
            for e in events:
                stored.setdefault(e.seq, e)
            n, iterations, time = summarize(stored.values())
            old = self._runs.get(run_id)
            if old is None:
                self._order += 1
            now = self._stamp() if self._stamp else None
            self._runs[run_id] = {
                "run_id": run_id, "agent": agent if old is None else old["agent"],
                "spec": spec if old is None else old["spec"], "status": status,
                "outcome": outcome, "answer": answer, "meta": json.loads(encode(meta)),
                "iterations": iterations, "time": time, "events": n,
                "started": now if old is None else old["started"], "updated": now,
                "order": self._order if old is None else old["order"]}
            self._runs.move_to_end(run_id)
            self._gone.pop(run_id, None)
            self._evict()

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
            return dict(self._runs[run_id]) if self._known(run_id) else None

    def runs(self, limit: int | None = None) -> list[dict]:
        with self._lock:
            out = sorted((dict(r) for r in self._runs.values()), key=lambda r: r["order"])
        return out[-limit:] if limit else out

    def events(self, run_id: str) -> list[Event]:
        with self._lock:
            if not self._known(run_id):
                return []
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

    def delete_checkpoint(self, run_id: str) -> None:
        with self._lock:
            self._checkpoints.pop(run_id, None)

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
            c.update(state="decided", decision=json.loads(encode(decision)))
            return True


# ---------------------------------------------------------------- selection
def memory(max_runs: int | None = DEFAULT_MAX_RUNS) -> MemoryStore:
    """A private in-process store keeping the `max_runs` most recent runs (the API's default)."""
    return MemoryStore(max_runs)


def sqlite(path: str | os.PathLike = DEFAULT_PATH, *, stamp: Stamp | None = None) -> "SqliteStore":
    """A SQLite store (WAL; several local processes may share the file; `:memory:` is private)."""
    return SqliteStore(path, stamp=stamp)


def postgres(url: str, *, stamp: Stamp | None = None, max_size: int = 4) -> Any:
    """A PostgreSQL store (psycopg 3 with a connection pool of up to `max_size` connections)."""
    from .store_postgres import PostgresStore
    return PostgresStore(url, stamp=stamp, max_size=max_size)


def from_url(url: str | os.PathLike | None = None, *, stamp: Stamp | None = None) -> Any:
    """`--store` / `AFP_STORE`: `postgresql://…` or `postgres://…`, `sqlite:///path`, `memory:`,
    a plain path, or nothing for `.afp/runs.db`."""
    url = os.fspath(url) if url else (os.environ.get("AFP_STORE") or DEFAULT_PATH)
    if url.startswith(("postgresql://", "postgres://")):
        return postgres(url, stamp=stamp)
    if url in ("memory:", "memory://"):
        return MemoryStore(stamp=stamp)
    if url.startswith("sqlite:///"):  # SQLAlchemy's form: sqlite:///rel.db, sqlite:////abs.db
        url = url[len("sqlite:///"):]
    elif url in ("sqlite://", "sqlite://:memory:"):
        url = ":memory:"
    elif "://" in url:
        raise StoreError(f"unknown store URL scheme `{url.split('://', 1)[0]}://`; use a SQLite "
                         f"path, `sqlite:///path` or `postgresql://user@host/db`")
    return SqliteStore(url or DEFAULT_PATH, stamp=stamp)


from .store_sqlite import SqliteStore  # noqa: E402  (the default persistent store)
