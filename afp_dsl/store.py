"""The local run store (SQLite): runs, redacted events, raw checkpoints, check-in decisions.

Role:       what `afpc run/resume/trace/why` and `Agent(store=...)` read and write; several
            processes may share one file. `MemoryStore` is the API's in-process default.
Invariants: events hold only redacted payloads; checkpoints (raw) live in their own table and
            are deleted when the run ends; a check-in is decided at most once (compare-and-set
            in one transaction), so "once" holds across processes.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Iterable

from .trace import Event, Trace, dumps

DEFAULT_PATH = ".afp/runs.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, agent TEXT, spec TEXT, status TEXT, outcome TEXT, answer TEXT,
  meta TEXT);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT, seq INTEGER, kind TEXT, body TEXT, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, body TEXT);
CREATE TABLE IF NOT EXISTS checkins (
  checkin_id TEXT PRIMARY KEY, run_id TEXT, fp TEXT, state TEXT, decision TEXT);
"""


class StoreError(Exception):
    pass


class SqliteStore:
    """A SQLite file (or `:memory:`) holding runs; safe to share between processes."""

    def __init__(self, path: str | os.PathLike = DEFAULT_PATH):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA secure_delete=ON")  # deleted checkpoints leave no bytes
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store `{self.path}`: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def _tx(self, sql_items: Iterable[tuple[str, tuple]]) -> None:
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in sql_items:
                    cur.execute(sql, args)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------ runs and events
    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event]) -> None:
        """Upsert the run row and append the events not yet stored (by seq)."""
        items = [("INSERT INTO runs VALUES (?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET "
                  "status=excluded.status, outcome=excluded.outcome, answer=excluded.answer, "
                  "meta=excluded.meta", (run_id, agent, spec, status, outcome, answer,
                                         dumps(meta)))]
        rows = [(run_id, e.seq, e.kind, e.to_json()) for e in events]
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in items:
                    cur.execute(sql, args)
                cur.executemany("INSERT OR IGNORE INTO events VALUES (?,?,?,?)", rows)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def run(self, run_id: str) -> dict | None:
        row = self._db.execute("SELECT run_id, agent, spec, status, outcome, answer, meta FROM runs "
                               "WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        keys = ("run_id", "agent", "spec", "status", "outcome", "answer", "meta")
        d = dict(zip(keys, row))
        d["meta"] = json.loads(d["meta"] or "{}")
        return d

    def runs(self) -> list[dict]:
        ids = [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY rowid")]
        return [self.run(i) for i in ids]

    def events(self, run_id: str) -> list[Event]:
        rows = self._db.execute("SELECT body FROM events WHERE run_id=? ORDER BY seq", (run_id,))
        return [Event.from_dict(json.loads(r[0])) for r in rows]

    def trace(self, run_id: str) -> Trace:
        return Trace(run_id, self.events(run_id))

    # ------------------------------------------------------------ checkpoints (raw)
    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        self._tx([("INSERT OR REPLACE INTO checkpoints VALUES (?,?)",
                   (run_id, json.dumps(checkpoint, sort_keys=True, default=str)))])

    def checkpoint(self, run_id: str) -> dict | None:
        row = self._db.execute("SELECT body FROM checkpoints WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def delete_checkpoint(self, run_id: str) -> None:
        self._tx([("DELETE FROM checkpoints WHERE run_id=?", (run_id,))])

    # ------------------------------------------------------------ check-ins
    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        self._tx([("INSERT OR IGNORE INTO checkins VALUES (?,?,?,?,NULL)",
                   (checkin_id, run_id, fp, "pending"))])

    def checkin(self, checkin_id: str) -> dict | None:
        row = self._db.execute("SELECT checkin_id, run_id, fp, state, decision FROM checkins "
                               "WHERE checkin_id=?", (checkin_id,)).fetchone()
        if row is None:
            return None
        return {"id": row[0], "run_id": row[1], "fp": row[2], "state": row[3],
                "decision": json.loads(row[4]) if row[4] else None}

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        """Compare-and-set: True only for the first decision of a pending check-in whose call
        fingerprint matches."""
        with self._lock:
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.execute("UPDATE checkins SET state='decided', decision=? WHERE checkin_id=? "
                            "AND state='pending' AND fp=?", (dumps(decision), checkin_id, fp))
                ok = cur.rowcount == 1
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return ok


class MemoryStore:
    """The in-process default store: the same interface as `SqliteStore`, no encoding cost.

    Events are kept as the (already redacted) `Event` objects; checkpoints as raw dicts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, dict] = {}
        self._events: dict[str, dict[int, Event]] = {}
        self._checkpoints: dict[str, dict] = {}
        self._checkins: dict[str, dict] = {}
        self.path = ":memory:"

    def close(self) -> None:
        pass

    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event]) -> None:
        with self._lock:
            self._runs[run_id] = {"run_id": run_id, "agent": agent, "spec": spec,
                                  "status": status, "outcome": outcome, "answer": answer,
                                  "meta": json.loads(dumps(meta))}
            stored = self._events.setdefault(run_id, {})
            for e in events:
                stored.setdefault(e.seq, e)

    def run(self, run_id: str) -> dict | None:
        r = self._runs.get(run_id)
        return dict(r) if r is not None else None

    def runs(self) -> list[dict]:
        return [dict(r) for r in self._runs.values()]

    def events(self, run_id: str) -> list[Event]:
        stored = self._events.get(run_id, {})
        return [stored[k] for k in sorted(stored)]

    def trace(self, run_id: str) -> Trace:
        return Trace(run_id, self.events(run_id))

    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        self._checkpoints[run_id] = json.loads(json.dumps(checkpoint, default=str))

    def checkpoint(self, run_id: str) -> dict | None:
        c = self._checkpoints.get(run_id)
        return json.loads(json.dumps(c)) if c is not None else None

    def delete_checkpoint(self, run_id: str) -> None:
        self._checkpoints.pop(run_id, None)

    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        with self._lock:
            self._checkins.setdefault(checkin_id, {"id": checkin_id, "run_id": run_id, "fp": fp,
                                                   "state": "pending", "decision": None})

    def checkin(self, checkin_id: str) -> dict | None:
        c = self._checkins.get(checkin_id)
        return dict(c) if c is not None else None

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        with self._lock:
            c = self._checkins.get(checkin_id)
            if c is None or c["state"] != "pending" or c["fp"] != fp:
                return False
            c.update(state="decided", decision=json.loads(dumps(decision)))
            return True


def memory() -> MemoryStore:
    """A private in-process store (the API's default)."""
    return MemoryStore()


def sqlite(path: str | os.PathLike = DEFAULT_PATH) -> SqliteStore:
    """A SQLite store (`:memory:` for a private in-process one)."""
    return SqliteStore(path)


def from_url(url: str | None) -> SqliteStore:
    """`--store` / `AFP_STORE`: a path, `sqlite:///path`, or nothing for `.afp/runs.db`."""
    url = url or os.environ.get("AFP_STORE") or DEFAULT_PATH
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///"):]
    elif url.startswith(("postgresql://", "postgres://")):
        raise StoreError("the PostgreSQL store is not available in this build; use a SQLite path")
    return SqliteStore(url)


