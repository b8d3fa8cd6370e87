"""The SQLite run store: the default `.afp/runs.db`, shared safely by several local processes.

Role:       implements `store.Store` on the stdlib `sqlite3`: WAL journal, busy timeout, every
            write one `BEGIN IMMEDIATE` transaction; the schema is versioned (`schema_version`)
            and brought up to date by `store_sqlite_schema.migrate` under the write lock; reads
            rows through `store_rows`, the codec both SQL stores share.
Emits:      `StoreError` for a file that cannot be opened, was written by a newer afp, is
            another application's database (tables, no runs table), is missing or no run store
            when opened with `create=False`, needs a migration but is read-only, or fails later
            (with the fix); for a new run saved under a used id; `StoreDamaged` for rows that do
            not decode.
Invariants: events hold only redacted payloads; raw checkpoints live in their own table and
            `secure_delete` zeroes their pages when deleted, and the `-wal` file that held them
            is emptied; `decide_checkin` is a single
            conditional UPDATE inside a write transaction (compare-and-set across processes);
            a `new_run` save checks the id inside its write transaction; `create=False` never
            creates a file or folder; no opener changes anything in a file that is no run store
            (an empty file becomes one); a reader reads a store it may not write read-only.
"""
from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .store import (DEFAULT_PATH, Stamp, StoreError, check_limit, encode, encode_raw, failed,
                    newer_schema, reused_run_id, summarize)
from .store_rows import batches, checkin_dict, clean_text, decode, run_dict, unbatch
from .store_sqlite_schema import LATEST, _foreign_tables, migrate, rollback, schema_version
from .trace import Event, Trace


_RUN_COLS = ("run_id, agent, spec, status, outcome, answer, meta, iterations, time, n_events, "
             "started, updated, rowid")
_UPSERT = (
    "INSERT INTO runs (run_id, agent, spec, status, outcome, answer, meta, iterations, time, "
    "n_events, started, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE "
    "SET status=excluded.status, outcome=excluded.outcome, answer=excluded.answer, "
    "meta=excluded.meta, iterations=MAX(runs.iterations, excluded.iterations), "
    "time=MAX(runs.time, excluded.time), n_events=MAX(runs.n_events, excluded.n_events), "
    "updated=excluded.updated")
# The summary counts what was appended (a save may pass only the events since the last one).
_COUNTS = ("UPDATE runs SET n_events=n_events+?, iterations=MAX(iterations, ?), time=MAX(time, ?) "
           "WHERE run_id=?")


def _checked_path(path: Any) -> str:
    """The store's file as text; `TypeError`/`ValueError` naming `path` for what is no path."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise TypeError(f"`path` must be a file path (str or os.PathLike), not "
                        f"{type(path).__name__}; `afp.stores.sqlite()` without it opens "
                        f"`{DEFAULT_PATH}`")
    if not os.fspath(path).strip():
        raise ValueError("`path` is empty; name a file such as `runs.db` (or `:memory:` for a "
                         "private in-process database)")
    if "://" in os.fspath(path):  # (it would become a folder named `sqlite:` or `postgresql:`)
        raise ValueError(f"`path` {os.fspath(path)!r} is a URL; pass it to "
                         f"`afp.stores.from_url(...)`, or name the file itself (`runs.db`)")
    return os.fspath(path)


def _must_exist(path: str) -> None:
    """For readers (`create=False`): a store that is not there is an error, never created."""
    if path == ":memory:":
        raise StoreError("`:memory:` is a private in-process database: it holds no runs of "
                         "earlier commands; name the store the runs were saved to")
    try:
        is_file, is_dir = Path(path).is_file(), Path(path).is_dir()
    except OSError as exc:  # (a name too long, a path through something not a folder...)
        raise StoreError(f"no run store at `{path[:200]}`: {exc.strerror or exc}; check the "
                         f"path, or pass --store / AFP_STORE naming the store `afpc run` "
                         f"wrote") from None
    if not is_file:
        what = "is a folder" if is_dir else (_special(path) or "does not exist")
        raise StoreError(f"no run store at `{path}`: it {what}; check the path, or pass "
                         f"--store / AFP_STORE naming the store `afpc run` wrote (it creates "
                         f"one on the first run)")


def _special(path: str) -> str | None:
    """What `path` is when it exists but is neither a regular file nor a folder (a store can
    only be a file: SQLite fails on these with a misleading "disk I/O error"), or None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return ("is a named pipe (FIFO)" if stat.S_ISFIFO(mode) else
            "is a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "is a socket or special file") + ", not a regular file"


# SQLite's words when it cannot write a store's file or the `-wal`/`-shm` files beside it (on a
# full disk, creating the `-shm` file fails as a "disk I/O error")
_CANNOT_WRITE = ("readonly", "read-only", "unable to open", "disk i/o error", "disk is full")


def _open(target: str, *, uri: bool = False) -> sqlite3.Connection:
    db = sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False,
                         uri=uri)
    db.execute("PRAGMA busy_timeout=30000")
    db.execute("PRAGMA secure_delete=ON")  # deleted checkpoints leave no bytes
    return db


def _connect(path: str, create: bool) -> tuple[sqlite3.Connection, bool]:
    """(connection, read_only). A reader (`create=False`) that may not write the store or its
    folder (a WAL store needs `-wal`/`-shm` files beside it) opens it read-only instead: with
    `mode=ro` when those files are there, else as `immutable` when no `-wal` holds commits that
    the store file lacks (an unwritable folder: no writer can be adding any)."""
    db = _open(path)
    if create or path == ":memory:":
        return db, False
    try:
        schema_version(db)  # the first read: here SQLite opens (or fails to open) the WAL
        return db, False
    except sqlite3.OperationalError as exc:
        db.close()
        if not _cannot_write(exc):
            raise
    uri = Path(path).absolute().as_uri()
    wal = Path(f"{path}-wal")
    for query in ("mode=ro", "immutable=1"):
        if query == "immutable=1" and wal.exists() and wal.stat().st_size:
            break
        db = _open(f"{uri}?{query}", uri=True)
        try:
            schema_version(db)
            return db, True
        except sqlite3.OperationalError as exc:
            db.close()
            if not _cannot_write(exc):
                raise
    raise StoreError(f"cannot read the run store `{path}`: its folder is read-only (or its disk "
                     f"is full) and "
                     f"`{wal.name}` beside it holds commits a read-only reader cannot see "
                     f"without writing `{path}-shm`; make the folder writable, or copy the store "
                     f"with its `-wal` file to a writable folder and pass --store naming the copy")


def _new_private_file(path: str) -> None:
    """Create a new store's file readable and writable by its owner only (0600): it holds raw
    checkpoints (semantics §9), and SQLite gives its `-wal` and `-shm` files the same mode. An
    existing file keeps its mode (a store shared by a group stays shared)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:  # (an existing store, or another process made it just now)
        pass


def _cannot_write(exc: sqlite3.Error) -> bool:
    return any(w in str(exc).lower() for w in _CANNOT_WRITE)


def _use_wal(db: sqlite3.Connection, create: bool) -> bool:
    """Switch to WAL + NORMAL: commits survive a crash of any process; decisions (FULL, in
    `_tx`) also survive power loss, and their fsync flushes every earlier commit too. False
    when a reader may not write the file (it then reads it as it is)."""
    try:
        db.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as exc:
        if create or not _cannot_write(exc):
            raise
        return False
    db.execute("PRAGMA synchronous=NORMAL")
    return True


class SqliteStore:
    """A SQLite file (or `:memory:`) holding runs; safe to share between processes."""

    durable = True  # runs outlive the process: the runner saves a run's events as it goes

    def __init__(self, path: str | os.PathLike = DEFAULT_PATH, *, stamp: Stamp | None = None,
                 create: bool = True):
        self.path = _checked_path(path)
        self._stamp = stamp
        self._lock = threading.Lock()
        if not create:
            _must_exist(self.path)
        elif self.path != ":memory:" and (what := (_special(self.path) or
                                                   ("is a folder" if os.path.isdir(self.path)
                                                    else None))):
            raise StoreError(f"cannot open the run store `{self.path}`: it {what}; name a file "
                             f"(a new one is created), e.g. --store runs.db")
        try:
            if self.path != ":memory:" and create:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                _new_private_file(self.path)
            self._db, self.read_only = _connect(self.path, create)
            version = schema_version(self._db)
            if not create and version == 0:
                raise StoreError(f"`{self.path}` is not a run store (it holds no runs table); "
                                 f"check the path, or pass --store / AFP_STORE naming the store "
                                 f"`afpc run` wrote")
            if version > LATEST:  # refused before anything is written to it
                raise newer_schema(self.path, version, LATEST)
            if version == 0 and (foreign := _foreign_tables(self._db)):
                raise StoreError(f"`{self.path}` is not a run store: it is a database with other "
                                 f"tables ({foreign}) and no runs table, which afp would add its "
                                 f"tables to; name a new file or a run store, e.g. --store "
                                 f"runs.db")
            if self.path != ":memory:" and not self.read_only:
                self.read_only = not _use_wal(self._db, create)
            if self.read_only and version < LATEST:
                raise StoreError(f"the run store `{self.path}` has schema version {version}, "
                                 f"which this afp upgrades to {LATEST} on opening, but it is "
                                 f"read-only here; open it once where it can be written (e.g. "
                                 f"`afpc trace list` as its owner)")
            self.version = migrate(self._db, where=self.path)
        except StoreError:
            if hasattr(self, "_db"):
                self._db.close()
            raise
        except (sqlite3.Error, OSError, ValueError) as exc:  # (ValueError: a NUL in the path)
            raise failed(f"cannot open the run store `{self.path}`", str(exc)) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tx(self, body: Callable[[sqlite3.Cursor], Any], *, full_sync: bool = False) -> Any:
        """Run `body(cursor)` in one write transaction and return its result. `full_sync`:
        fsync at commit (power-loss durable), for decisions."""
        with self._lock:
            cur = self._db.cursor()
            try:
                if full_sync:
                    cur.execute("PRAGMA synchronous=FULL")
                try:
                    cur.execute("BEGIN IMMEDIATE")
                    try:
                        out = body(cur)
                        cur.execute("COMMIT")
                    except BaseException:
                        rollback(self._db)
                        raise
                finally:
                    if full_sync:
                        cur.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise self._failed(exc) from None
        return out

    def _failed(self, exc: sqlite3.Error) -> StoreError:
        return failed(f"the run store `{self.path}` failed", str(exc))

    def _write(self, sql: str, args: Sequence[Any], *, full_sync: bool = False) -> int:
        """One statement in its own write transaction; returns its rowcount."""
        return self._tx(lambda cur: cur.execute(sql, args).rowcount, full_sync=full_sync)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except UnicodeEncodeError:  # a key holding a lone surrogate: no stored text has one
                return []
            except sqlite3.Error as exc:
                raise self._failed(exc) from None

    # ------------------------------------------------------------ runs and events
    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event], *, new_run: bool = False) -> None:
        events = list(events)
        now = self._stamp() if self._stamp else None
        row = (run_id, agent, clean_text(spec), status, outcome, clean_text(answer), encode(meta),
               0, 0, 0, now, now)

        def body(cur: sqlite3.Cursor) -> None:
            if new_run and cur.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
                raise reused_run_id(self.path, run_id)  # (inside the write lock: no race)
            cur.execute(_UPSERT, row)
            # (the newest batch by its key: `MAX(last_seq)` read every batch of the run, bodies
            # and all, at every save; batches never overlap, so the last one ends highest)
            found = cur.execute("SELECT last_seq FROM event_batches WHERE run_id=? "
                                "ORDER BY first_seq DESC LIMIT 1", (run_id,)).fetchone()
            last = found[0] if found else 0
            new = [e for e in events if e.seq > last]
            n, iterations, time = summarize(new)
            cur.execute(_COUNTS, (n, iterations, time, run_id))
            cur.executemany("INSERT INTO event_batches VALUES (?,?,?,?,?)",
                            [(run_id, *b) for b in batches(run_id, new)])
        self._tx(body)

    def run(self, run_id: str) -> dict | None:
        rows = self._read(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=?", (run_id,))
        return run_dict(rows[0], self.path) if rows else None

    def runs(self, limit: int | None = None) -> list[dict]:
        if (limit := check_limit(limit)) is not None:
            rows = self._read(f"SELECT * FROM (SELECT {_RUN_COLS} FROM runs ORDER BY rowid DESC "
                              f"LIMIT ?) ORDER BY rowid", (limit,))
        else:
            rows = self._read(f"SELECT {_RUN_COLS} FROM runs ORDER BY rowid")
        return [run_dict(r, self.path) for r in rows]

    def events(self, run_id: str) -> list[Event]:
        return unbatch(run_id, self._read("SELECT first_seq, iteration, body FROM event_batches "
                                          "WHERE run_id=? ORDER BY first_seq", (run_id,)),
                       self.path)

    def trace(self, run_id: str) -> Trace:
        return Trace(run_id, self.events(run_id))

    # ------------------------------------------------------------ checkpoints (raw)
    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        self._write("INSERT OR REPLACE INTO checkpoints VALUES (?,?)",
                    (run_id, encode_raw(checkpoint)))

    def checkpoint(self, run_id: str) -> dict | None:
        rows = self._read("SELECT body FROM checkpoints WHERE run_id=?", (run_id,))
        return decode(rows[0][0], self.path, f"the checkpoint of run `{run_id}`") if rows \
            else None

    def delete_checkpoint(self, run_id: str) -> bool:
        deleted = self._write("DELETE FROM checkpoints WHERE run_id=?", (run_id,)) == 1
        if deleted and self.path != ":memory:":
            # the `-wal` file still holds the raw checkpoint's earlier frames: copy the zeroed
            # pages into the store and empty it (a reader mid-statement elsewhere defers that
            # to the next deletion or the last close, which does the same)
            self._read("PRAGMA wal_checkpoint(TRUNCATE)")
        return deleted

    # ------------------------------------------------------------ check-ins
    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        self._write("INSERT OR IGNORE INTO checkins VALUES (?,?,?,'pending',NULL)",
                    (checkin_id, run_id, fp))

    def checkin(self, checkin_id: str) -> dict | None:
        rows = self._read("SELECT checkin_id, run_id, fp, state, decision FROM checkins "
                          "WHERE checkin_id=?", (checkin_id,))
        return checkin_dict(rows[0], self.path) if rows else None

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        return self._write("UPDATE checkins SET state='decided', decision=?, fp='' "  # (`Store.decide_checkin`)
                           "WHERE checkin_id=? AND state='pending' AND fp=?", (encode(decision), checkin_id, fp),
                           full_sync=True) == 1
