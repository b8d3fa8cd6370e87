"""The SQLite run store's schema: its versioned migrations and `migrate`, which applies them.

Role:       used by `store_sqlite` when a store is opened (split from it): `schema_version` reads
            a database's version, `migrate` brings it to `LATEST` with `MIGRATIONS` in order;
            `_foreign_tables` names the tables of a database that holds no run store.
Emits:      `StoreError` (`newer_schema`) for a database written by a newer afp; `StoreDamaged`
            (`store.run_step`) for a row a migration step cannot convert.
Invariants: the migrations run in one `BEGIN IMMEDIATE` transaction, so concurrent openers
            migrate once; a database already at the target takes no write lock.
"""
from __future__ import annotations

import sqlite3

from .store import Migration, newer_schema, run_step
from .store_rows import v1_events_to_batches


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial: runs, events, checkpoints, checkins", (
        "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, agent TEXT, spec TEXT, "
        "status TEXT, outcome TEXT, answer TEXT, meta TEXT)",
        "CREATE TABLE IF NOT EXISTS events (run_id TEXT, seq INTEGER, kind TEXT, body TEXT, "
        "PRIMARY KEY (run_id, seq))",
        "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, body TEXT)",
        "CREATE TABLE IF NOT EXISTS checkins (checkin_id TEXT PRIMARY KEY, run_id TEXT, fp TEXT, "
        "state TEXT, decision TEXT)",
    )),
    Migration(2, "run summaries (iterations, time, event count, stamps); events stored in "
                 "per-iteration batches", (
        "ALTER TABLE runs ADD COLUMN iterations INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN time INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN n_events INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN started TEXT",
        "ALTER TABLE runs ADD COLUMN updated TEXT",
        "CREATE INDEX IF NOT EXISTS checkins_by_run ON checkins (run_id)",
        "CREATE TABLE event_batches (run_id TEXT NOT NULL, first_seq INTEGER NOT NULL, "
        "last_seq INTEGER NOT NULL, iteration INTEGER NOT NULL, body TEXT NOT NULL, "
        "PRIMARY KEY (run_id, first_seq)) WITHOUT ROWID",
        lambda db: _v1_events(db),
        "DROP TABLE events",
    )),
)


def _v1_events(db: sqlite3.Connection) -> None:
    def read(run_id: str) -> list[str]:
        return [b for (b,) in db.execute("SELECT body FROM events WHERE run_id=? ORDER BY seq",
                                         (run_id,))]

    def write(run_id: str, summary: tuple[int, int, int], rows: list[tuple]) -> None:
        db.execute("UPDATE runs SET n_events=?, iterations=?, time=? WHERE run_id=?",
                   (*summary, run_id))
        db.executemany("INSERT INTO event_batches VALUES (?,?,?,?,?)", rows)
    v1_events_to_batches([r for (r,) in db.execute("SELECT DISTINCT run_id FROM events")],
                         read, write)


LATEST = MIGRATIONS[-1].version

def schema_version(db: sqlite3.Connection) -> int:
    """The version of an open database: 0 empty, 1 before versioning, else `schema_version`."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "schema_version" in tables:
        row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        if row[0] is not None:
            return int(row[0])
    return 1 if "runs" in tables else 0


def _foreign_tables(db: sqlite3.Connection) -> str:
    """The first tables of a database that holds no run store (version 0), named for a message;
    empty when it holds none (a new or empty file, which becomes a store)."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN "
                                      "('table', 'view') AND name NOT LIKE 'sqlite_%' "
                                      "ORDER BY name LIMIT 4")]
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (", …" if len(names) > 3 else "")


def migrate(db: sqlite3.Connection, target: int = LATEST, *, where: str = "") -> int:
    """Apply the migrations after the database's version up to `target`, in one write
    transaction (so concurrent openers migrate once). Returns the version reached; `where`
    names the store in errors."""
    if schema_version(db) == target:  # the usual case: no write lock needed
        return target
    db.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(db)
        if current > LATEST:
            raise newer_schema(where, current, LATEST)
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                   "name TEXT NOT NULL)")
        if current:
            db.execute("INSERT OR IGNORE INTO schema_version VALUES (?, ?)",
                       (current, MIGRATIONS[current - 1].name))
        for m in MIGRATIONS[current:target]:
            for step in m.steps:
                run_step(step, db, where, m)
            db.execute("INSERT INTO schema_version VALUES (?, ?)", (m.version, m.name))
        db.execute("COMMIT")
    except BaseException:
        rollback(db)
        raise
    return max(current, target)


def rollback(db: sqlite3.Connection) -> None:
    """Roll back the open write transaction, keeping the error that got here: SQLite has rolled
    it back itself after some failures (a full disk, an I/O error), and a `ROLLBACK` then would
    fail with "no transaction is active", hiding the cause."""
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:  # (the original error says more)
            pass
