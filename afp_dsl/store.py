"""The run store interface (`Store`), the stores' errors, and store selection.

Role:       runs, redacted events, raw checkpoints and check-in decisions behind one Protocol;
            `MemoryStore` (store_memory.py, the API's default), `SqliteStore` (store_sqlite.py,
            the default `.afp/runs.db`) and `PostgresStore` (store_postgres.py) implement it and
            pass one shared test suite. Also the stores'
            error wording (`failed`, `damaged`) and the runner's one-run-per-id save (`save`).
Emits:      `StoreError` for a store that cannot be opened or used (with the fix), and for a
            new run saved under an id the store holds; `StoreDamaged` for a store whose rows do
            not decode or whose tables are missing; `RunDropped` when a bounded memory store is
            asked for a run it evicted.
Invariants: events hold only redacted payloads; checkpoints (raw) live apart and are deleted when
            the run ends; a check-in is decided at most once (compare-and-set), across processes
            for the persistent stores; two runs never share an id (a fresh run's first save
            refuses a used one); readers get decoded rows or `StoreDamaged`, never a raw decoding
            error; no wall clock here (a caller may pass `stamp`).
"""
from __future__ import annotations

import functools
import inspect
import json
import operator
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, runtime_checkable

import attrs

from .trace import Event, Trace

if TYPE_CHECKING:
    from .store_memory import MemoryStore
    from .store_postgres import PostgresStore
    from .store_sqlite import SqliteStore

DEFAULT_PATH = ".afp/runs.db"
DEFAULT_MAX_RUNS = 1000
Stamp = Callable[[], str]  # an ISO-8601 time from the caller (the CLI); never read in the core


class StoreError(Exception):
    """A store that cannot be opened, migrated or reached; the message names the fix."""


class RunDropped(StoreError):
    """A bounded in-memory store evicted this run (it still counts it in `dropped`)."""


class StoreDamaged(StoreError, ValueError):
    """A stored row that does not decode, or a missing table (edited or corrupted by hand)."""


def damaged(path: str, what: str) -> StoreDamaged:
    return StoreDamaged(f"the run store `{path}` is damaged: {what}; restore it from a backup, or "
                        f"move it aside so afp starts a new store")


# SQLite's and PostgreSQL's words for a store whose tables or file are damaged
_DAMAGE = re.compile(r'no such (table|column)|(relation|column) "[^"]*" does not exist|malformed')


def failed(text: str, cause: str) -> StoreError:
    """`text: cause; fix` for a driver's error: `StoreDamaged` when the cause says the store is
    damaged (a missing table, a corrupt file), else `StoreError`."""
    low = cause.lower()
    if _DAMAGE.search(low):
        return StoreDamaged(f"{text}: {cause}; the store is damaged (a table is missing or the "
                            f"file is corrupt): restore it from a backup, or move it aside so "
                            f"afp starts a new store")
    if "not a database" in low:
        return StoreDamaged(f"{text}: {cause}; check the path names the run store (not another "
                            f"file), or restore the store from a backup")
    if "closed database" in low or "is already closed" in low:
        fix = ("this store object was closed (`close()`); open the store again (e.g. "
               "`afp.stores.from_url(...)`) and give the agent the new one")
    elif "locked" in low or "busy" in low:
        fix = "another process holds the store: retry when it is done"
    elif "no schema has been selected" in low:
        fix = ("the database's search_path names no schema that exists: create the schema "
               "(`CREATE SCHEMA …`), or fix `?options=-c search_path=…` in the URL")
    elif "disk i/o error" in low:
        fix = ("the disk may be full or failing: free disk space (SQLite also writes the `-wal` "
               "and `-shm` files beside the store), then retry")
    elif "full" in low:
        fix = "free disk space and check the store's file permissions"
    elif "readonly" in low or "permission" in low:
        fix = ("the store or its folder may not be written here: check their permissions (SQLite "
               "also writes the `-wal` and `-shm` files beside the store), or choose another path")
    elif "unable to open database file" in low:
        fix = ("check that its folder exists and can be written (SQLite writes the store and its "
               "`-wal` and `-shm` files there), or choose another path")
    elif "file exists" in low or "not a directory" in low:
        fix = "a part of the path is a file, not a folder: choose a path inside a folder"
    else:
        fix = "check that the store is reachable and intact, or choose another one"
    return StoreError(f"{text}: {cause}; {fix}")


def newer_schema(path: str, version: int, latest: int) -> StoreError:
    """A store written by a newer afp: refused, never modified."""
    where = f"the run store `{path}`" if path else "the run store"
    return StoreError(f"{where} was written by a newer afp (schema version {version}; this afp "
                      f"knows up to {latest}); upgrade afp, or pass --store / AFP_STORE naming "
                      f"another store")


def reused_run_id(path: str, run_id: str) -> StoreError:
    return StoreError(
        f"the run store `{path}` already holds a run `{run_id}`: saving a new run under the same "
        f"id would mix the two runs; give every run its own id: `afp.Effects.live()` makes unique "
        f"ids (the default without `effects=`), or pass `Effects(run_ids=…)` a function that "
        f"never repeats an id in this store")


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
                 events: Iterable[Event], *, new_run: bool = False) -> None:
        """Upsert the run's summary and append the events not yet stored (by `seq`), atomically.
        `events` may be all of the run's events or only the newest: the summary's counts cover
        every event stored. `new_run=True` (a fresh run's first save) raises `StoreError`,
        writing nothing, when the store already holds `run_id`. (A store without the keyword
        still works: the runner then asks `run(run_id)` first, outside the save.)"""

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

    def delete_checkpoint(self, run_id: str) -> bool:
        """Forget the raw state (the run ended); deleting a missing one is fine. True when this
        call deleted one: of two processes resuming one `error` run, only the one that deleted
        its checkpoint goes on (atomic, as `decide_checkin` is for decisions)."""

    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        """Record a pending check-in for the call with fingerprint `fp` (idempotent)."""

    def checkin(self, checkin_id: str) -> dict | None:
        """`{id, run_id, fp, state: pending|decided, decision}` or None."""

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        """Compare-and-set: True only for the first decision of a pending check-in whose call
        fingerprint is `fp`; every other caller, in any process, gets False. The decision
        blanks the stored fingerprint: it is a hash of the raw arguments (a short secret such
        as a PIN could be found from it by trying every value), needed only while the check-in
        waits, as the raw checkpoint is (semantics §9)."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


# ---------------------------------------------------------------- shared helpers
# (the row codec both SQL stores share, event batches and JSON columns, is in store_rows.py)
@attrs.frozen
class Migration:
    """One schema version: its steps (SQL text, or a function given the open connection) run in
    order, once, in one transaction, then the version is recorded in `schema_version`."""

    version: int
    name: str
    steps: tuple[str | Callable[[Any], None], ...]


def run_step(step: str | Callable[[Any], None], conn: Any, where: str, m: Migration) -> None:
    """One step of migration `m` on an open connection; a row it cannot convert (a step
    function's `ValueError`) is `StoreDamaged` naming the store, inside the migration's
    transaction, so the store is left as it was."""
    if isinstance(step, str):
        conn.execute(step)
        return
    try:
        step(conn)
    except ValueError as exc:
        raise damaged(where, f"{exc}, so it cannot be upgraded to schema version {m.version}") \
            from None


def summarize(events: Iterable[Event]) -> tuple[int, int, int]:
    """(event count, highest iteration, last logical time) of a run's events."""
    events = events if isinstance(events, (list, tuple)) else list(events)
    if not events:
        return 0, 0, 0
    # Speed: `max` over the named tuples' fields runs in C (a run saves every event it records)
    return (len(events), max(0, max(map(_ITERATION, events))), max(0, max(map(_TIME, events))))


_ITERATION, _TIME = operator.attrgetter("iteration"), operator.attrgetter("time")


def encode(value: Any) -> str:
    """JSON for a stored column (meta, decisions, raw checkpoints): sorted, ASCII-escaped."""
    return json.dumps(value, sort_keys=True, default=str)


encode_raw = encode  # raw checkpoints: kept only in the checkpoints table


def check_limit(limit: Any) -> int | None:
    """`runs(limit)`'s argument: None (every run) or a count >= 0 (0 keeps none); anything else
    is a `TypeError`/`ValueError` naming it, the same in every store."""
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise TypeError(f"`limit` must be a count of runs (an int) or None for all of them, not "
                        f"`{type(limit).__name__}`")
    if limit < 0:
        raise ValueError(f"`limit` must be 0 or more (the newest runs to keep), not {limit}")
    return limit


def check_new_run(store: Any, run_id: str) -> None:
    """`StoreError` when `store` already holds `run_id` (an evicted memory run does not count)."""
    try:
        held = store.run(run_id) is not None
    except RunDropped:
        held = False
    if held:
        raise reused_run_id(getattr(store, "path", "?"), run_id)


def save(store: Any, new_run: bool, run_id: str, *rest: Any) -> None:
    """`store.save_run(run_id, *rest)`; for a fresh run's first save (`new_run`) the store's own
    transaction refuses a used id, or, for a store without that keyword, it is asked first."""
    if new_run and "new_run" in _params(store.save_run):
        store.save_run(run_id, *rest, new_run=True)
        return
    if new_run:
        check_new_run(store, run_id)
    store.save_run(run_id, *rest)


def _params(fn: Callable) -> Any:
    try:  # (a bound method: its function, cached)
        return _params_of(getattr(fn, "__func__", fn))
    except TypeError:  # an unhashable callable: read it every time
        return _params_of.__wrapped__(fn)


@functools.lru_cache(maxsize=64)
def _params_of(fn: Callable) -> Any:
    # Speed: a run saves several times; reading a signature costs more than the save of a
    # memory store, and a store class's `save_run` does not change.
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or an odd callable: assume the old signature
        return {}


# ---------------------------------------------------------------- selection
def memory(max_runs: int | None = DEFAULT_MAX_RUNS) -> MemoryStore:
    """A private in-process store keeping the `max_runs` most recent runs (the API's default)."""
    from .store_memory import MemoryStore  # (see `__getattr__`)
    return MemoryStore(max_runs)


def sqlite(path: str | os.PathLike = DEFAULT_PATH, *, stamp: Stamp | None = None,
           create: bool = True) -> "SqliteStore":
    """A SQLite store (WAL; several local processes may share the file; `:memory:` is private).
    `create=False`: a file that does not exist (or holds no runs) is a `StoreError`."""
    from .store_sqlite import SqliteStore  # (see `__getattr__`)
    return SqliteStore(path, stamp=stamp, create=create)


def postgres(url: str, *, stamp: Stamp | None = None, max_size: int = 4) -> PostgresStore:
    """A PostgreSQL store (psycopg 3 with a connection pool of up to `max_size` connections)."""
    if not isinstance(url, str) or not url.strip():
        raise TypeError(f"postgres() takes the server's URL as a non-empty `str`, e.g. "
                        f"\"postgresql://user@host/db\", not {_shown_type(url)}")
    from .store_url import normalised
    url = normalised(url)
    if not url.startswith(("postgresql://", "postgres://")):  # (not shown: it may hold a password)
        raise ValueError("postgres() takes the server's URL, postgresql://user[:password]@host"
                         "[:port]/db (a libpq key=value string is not read: afp shows a URL's "
                         "parts without its password); for a SQLite file use sqlite(path)")
    from .store_postgres import PostgresStore
    return PostgresStore(url, stamp=stamp, max_size=max_size)


def from_url(url: str | os.PathLike | None = None, *, stamp: Stamp | None = None,
             create: bool = True) -> Store:
    """`--store` / `AFP_STORE`: `postgresql://…` or `postgres://…`, `sqlite:///path`, `memory:`,
    a plain path, or nothing for `.afp/runs.db`. `create=False` (readers: `afpc trace`, `why`)
    opens only a store that exists and holds runs; anything else is a `StoreError` naming it."""
    if url is not None and not isinstance(url, (str, os.PathLike)):
        raise TypeError(f"the store must be a URL or path (`str` or `pathlib.Path`), e.g. "
                        f"`\"runs.db\"` or `\"postgresql://user@host/db\"`, not a "
                        f"`{type(url).__name__}`")
    # (None: the default; "" is refused below as blank, most likely an unset variable)
    from_env = url is None and bool(os.environ.get("AFP_STORE"))
    url = os.fspath(url) if url is not None else (os.environ.get("AFP_STORE") or DEFAULT_PATH)
    if not isinstance(url, str):  # (a path object naming bytes)
        raise TypeError(f"the store path must be text, not `{type(url).__name__}`")
    from .store_url import open_url  # (it imports this module)
    try:
        return open_url(url, stamp, create)
    except StoreError as e:
        if from_env and "AFP_STORE" not in str(e):  # (never typed here: say where it came from)
            raise StoreError(f"{e} (the store named by the environment variable AFP_STORE; "
                             f"fix or unset it, or pass --store)") from None
        raise


def __getattr__(name: str) -> Any:
    """`store.MemoryStore` and `store.SqliteStore`, imported when first asked for (PEP 562).
    Their modules import this one; importing them from here as this module loads made a fresh
    `import afp_dsl.store_sqlite` (or `store_memory`, `store_rows`) a circular import."""
    if name == "MemoryStore":
        from .store_memory import MemoryStore
        return MemoryStore
    if name == "SqliteStore":
        from .store_sqlite import SqliteStore
        return SqliteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _shown_type(value: Any) -> str:
    """How an argument of the wrong type is named: its type, never its text (a URL or a path
    may hold a password)."""
    return "an empty `str`" if isinstance(value, str) else f"a value of type `{type(value).__name__}`"
