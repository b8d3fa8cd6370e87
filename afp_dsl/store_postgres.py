"""The PostgreSQL run store: several processes or machines sharing runs, check-ins and decisions.

Role:       implements `store.Store` on psycopg 3 with a `psycopg_pool.ConnectionPool` (the
            optional extra `afp-dsl[postgres]`); the schema is versioned like SQLite's and
            migrated under a transaction-scoped advisory lock, so concurrent openers migrate once.
Emits:      `StoreError` when psycopg is missing, the server cannot be reached, the schema
            is newer than this afp, it holds no afp tables when opened with `create=False`, a
            query fails later (with the fix), or a new run is saved under a used id;
            `StoreDamaged` for rows that do not decode.
Invariants: events hold only redacted payloads; raw checkpoints live in their own table and
            are deleted when the run ends; `decide_checkin` is one conditional UPDATE (the row
            lock makes a concurrent second decider see `decided`): "once" across processes; a
            `new_run` save inserts the run's row or fails, in its own transaction.
"""
from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, Iterable, Iterator, Sequence
from urllib.parse import unquote

from .store import (Migration, Stamp, StoreError, check_limit, encode, encode_raw, failed,
                    newer_schema, reused_run_id, run_step, summarize)
from .store_rows import (batches, checkin_dict, clean_text, decode, run_dict, unbatch,
                         v1_events_to_batches)
from .trace import Event, Trace

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
        "ALTER TABLE runs ADD COLUMN iterations INTEGER NOT NULL DEFAULT 0, "
        "ADD COLUMN time BIGINT NOT NULL DEFAULT 0, "
        "ADD COLUMN n_events INTEGER NOT NULL DEFAULT 0, "
        "ADD COLUMN started TEXT, ADD COLUMN updated TEXT, ADD COLUMN ord BIGSERIAL",
        "CREATE INDEX IF NOT EXISTS runs_by_ord ON runs (ord)",
        "CREATE INDEX IF NOT EXISTS checkins_by_run ON checkins (run_id)",
        "CREATE TABLE event_batches (run_id TEXT NOT NULL, first_seq INTEGER NOT NULL, "
        "last_seq INTEGER NOT NULL, iteration INTEGER NOT NULL, body TEXT NOT NULL, "
        "PRIMARY KEY (run_id, first_seq))",
        lambda conn: _v1_events(conn),
        "DROP TABLE events",
    )),
)


def _v1_events(conn: Any) -> None:
    def read(run_id: str) -> list[str]:
        return [b for (b,) in conn.execute("SELECT body FROM events WHERE run_id=%s ORDER BY seq",
                                           (run_id,))]

    def write(run_id: str, summary: tuple[int, int, int], rows: list[tuple]) -> None:
        conn.execute("UPDATE runs SET n_events=%s, iterations=%s, time=%s WHERE run_id=%s",
                     (*summary, run_id))
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO event_batches VALUES (%s,%s,%s,%s,%s)", rows)
    ids = [r for (r,) in conn.execute("SELECT DISTINCT run_id FROM events").fetchall()]
    v1_events_to_batches(ids, read, write)


LATEST = MIGRATIONS[-1].version
_LOCK_KEY = 0x6166705F73746F72  # "afp_stor": the advisory lock serialising migrations

_RUN_COLS = ("run_id, agent, spec, status, outcome, answer, meta, iterations, time, n_events, "
             "started, updated, ord")
_UPSERT = (
    "INSERT INTO runs (run_id, agent, spec, status, outcome, answer, meta, iterations, time, "
    "n_events, started, updated) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
    "ON CONFLICT (run_id) DO UPDATE SET status=EXCLUDED.status, outcome=EXCLUDED.outcome, "
    "answer=EXCLUDED.answer, meta=EXCLUDED.meta, "
    "iterations=GREATEST(runs.iterations, EXCLUDED.iterations), "
    "time=GREATEST(runs.time, EXCLUDED.time), n_events=GREATEST(runs.n_events, EXCLUDED.n_events), "
    "updated=EXCLUDED.updated")
_INSERT_NEW = _UPSERT.split(" ON CONFLICT")[0] + " ON CONFLICT (run_id) DO NOTHING"
# The summary counts what was appended (a save may pass only the events since the last one).
_COUNTS = ("UPDATE runs SET n_events=n_events+%s, iterations=GREATEST(iterations, %s), "
           "time=GREATEST(time, %s) WHERE run_id=%s")


def safe_url(url: str) -> str:
    """The URL without its password (for messages and `store.path`): the one after the user
    name, up to the `@` that ends the credentials (`_credentials_end`: a password written with
    a raw `/`, `?` or `@` in it included), and a `password=` or `sslpassword=` query parameter."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    at = _credentials_end(rest)
    if at >= 0 and ":" in rest[:at]:
        rest = rest[:at].split(":", 1)[0] + ":***" + rest[at:]
    head, q, query = rest.partition("?")
    if q:
        query = re.sub(r"(?i)((?:^|&)(?:ssl)?password=)[^&#]*", r"\1***", query)
    return scheme + sep + head + q + query


def _credentials_end(rest: str) -> int:
    """Where the `user:password@` part of a URL (after `://`) ends, or -1: the last `@` before
    the first `/` (as libpq reads it) or before the first `?`, whichever is further, so that a
    password holding a raw `/`, `?` or `@` is hidden however a reader splits it."""
    slash = rest.find("/")
    return max(rest[:slash if slash >= 0 else len(rest)].rfind("@"),
               rest.partition("?")[0].rfind("@"))


def _first_line(exc: BaseException, url: str = "") -> str:
    """The driver's message, first line, without the URL's password: libpq quotes the URL, or
    the part of it it could not parse (`invalid percent-encoded token: "<password>"`)."""
    text = str(exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    return _scrubbed(text, url) if url else text


def _passwords(url: str) -> list[str]:
    """The secrets a URL holds, as written and percent-decoded, and the pieces a parser may cut
    them into (at `@`, `/`, `?`, `#`, `:`): the password after the user name (as `safe_url`
    finds it) and `password=` / `sslpassword=` query values."""
    rest = url.partition("://")[2]
    at = _credentials_end(rest)
    found = [rest[:at].split(":", 1)[1]] if at >= 0 and ":" in rest[:at] else []
    found += re.findall(r"(?i)(?:^|&|\?)(?:ssl)?password=([^&#]*)", rest[max(at, 0):])
    whole = {s for f in found for s in (f, unquote(f)) if s}
    return sorted(whole | {p for s in whole for p in re.split(r"[@/?#:]", s) if len(p) >= 3},
                  key=len, reverse=True)


def _scrubbed(text: str, url: str) -> str:
    """`text` with the URL shown as `safe_url` shows it, and with every quoted token holding a
    password (or a piece of one) replaced by `***`, as is any other occurrence of 4 or more
    characters."""
    secrets = _passwords(url)
    if not secrets:
        return text
    hole = "\x00url\x00"
    text = text.replace(url, hole)

    def token(m: re.Match) -> str:
        quoted, mark = m.group(0), m.group(0)[0]
        return mark + "***" + mark if any(s in quoted for s in secrets) else quoted
    text = re.sub(r'"[^"]*"|\'[^\']*\'', token, text)
    for s in secrets:
        text = text.replace(s, "***") if len(s) >= 4 else text
    return text.replace(hole, safe_url(url))


# libpq's words for a URL it could not parse (before any connection was tried)
_URL_FAULT = re.compile(r'in URI|URI query parameter|percent-encoded|for connection option|'
                        r'invalid connection option|invalid \w+ value')


def _psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
        # The pool logs what it retries ("discarding closed connection") as warnings; with no
        # handler anywhere, Python prints them on stderr beside afpc's own one-line errors. A
        # host that configures logging still receives them (they propagate).
        pool_log = logging.getLogger("psycopg.pool")
        if not any(isinstance(h, logging.NullHandler) for h in pool_log.handlers):
            pool_log.addHandler(logging.NullHandler())
    except ImportError:
        raise StoreError("the PostgreSQL store needs psycopg 3 and psycopg-pool: "
                         "pip install 'afp-dsl[postgres]'") from None
    return psycopg, psycopg_pool


def schema_version(conn: Any) -> int:
    """The version of the database: 0 empty, 1 before versioning, else `schema_version`.

    Reads `pg_class` with the statement's snapshot (not `to_regclass`, whose catalog cache can
    miss a table another opener created while this one waited for the migration lock)."""
    found = {r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname IN ('schema_version', 'runs')")}
    if "schema_version" in found:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        if row[0] is not None:
            return int(row[0])
    return 1 if "runs" in found else 0


def migrate(conn: Any, target: int = LATEST, *, where: str = "") -> int:
    """Apply the migrations after the database's version up to `target` in one transaction,
    holding an advisory lock so concurrent openers migrate once. Returns the version reached;
    `where` names the store in errors."""
    if schema_version(conn) == target:  # the usual case: no lock, no DDL
        return target
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        current = schema_version(conn)
        if current > LATEST:
            raise newer_schema(where, current, LATEST)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL)")
        if current:
            conn.execute("INSERT INTO schema_version VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (current, MIGRATIONS[current - 1].name))
        for m in MIGRATIONS[current:target]:
            for step in m.steps:
                run_step(step, conn, where, m)
            conn.execute("INSERT INTO schema_version VALUES (%s, %s)", (m.version, m.name))
    return max(current, target)


class PostgresStore:
    """Runs in a PostgreSQL database (`postgresql://user[:password]@host[:port]/db`)."""

    durable = True  # runs outlive the process: the runner saves a run's events as it goes

    def __init__(self, url: str, *, stamp: Stamp | None = None, max_size: int = 4,
                 create: bool = True):
        psycopg, pool_mod = _psycopg()
        self.path = safe_url(url)
        self._url = url  # (only to scrub its password from the driver's messages)
        self._stamp = stamp
        self._errors = (psycopg.Error, pool_mod.PoolTimeout)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                if not create and schema_version(conn) == 0:
                    raise StoreError(f"no run store in `{self.path}`: the database holds no afp "
                                     f"tables; check the URL (database, search_path), or run "
                                     f"`afpc run --store URL` once to create them")
                self.version = migrate(conn, where=self.path)
            self._pool = pool_mod.ConnectionPool(
                url, min_size=1, max_size=max(1, max_size), open=True, timeout=30,
                check=pool_mod.ConnectionPool.check_connection,  # (a dropped one: replaced)
                kwargs={"autocommit": True, "connect_timeout": 10})
        except psycopg.Error as exc:
            said = _first_line(exc, url)
            if _URL_FAULT.search(said):  # (libpq could not parse the URL: nothing was reached)
                raise StoreError(f"cannot open the PostgreSQL run store `{self.path}`: the URL "
                                 f"is malformed: {said}; write postgresql://user[:password]@host"
                                 f"[:port]/db (percent-encode `@`, `:`, `/`, `?`, `#` and `%` "
                                 f"in a user name or password, e.g. `%40` for `@`)") from None
            raise failed(f"cannot open the PostgreSQL run store `{self.path}`", said) from None

    def close(self) -> None:
        self._pool.close()

    @contextlib.contextmanager
    def _conn(self) -> Iterator[Any]:
        """A pooled connection (autocommit); driver errors become `StoreError`."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._errors as exc:
            raise failed(f"the PostgreSQL run store `{self.path}` failed",
                         _first_line(exc, self._url)) from None

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        if any(type(a) is str and not _encodable(a) for a in args):
            return []  # a key holding a lone surrogate: no stored text has one
        with self._conn() as conn:
            return conn.execute(sql, args).fetchall()

    def _write(self, sql: str, args: Sequence[Any]) -> int:
        with self._conn() as conn:
            return conn.execute(sql, args).rowcount

    # ------------------------------------------------------------ runs and events
    def save_run(self, run_id: str, agent: str, spec: str | None, status: str,
                 outcome: str | None, answer: str | None, meta: dict,
                 events: Iterable[Event], *, new_run: bool = False) -> None:
        events = list(events)
        now = self._stamp() if self._stamp else None
        row = (run_id, agent, clean_text(spec), status, outcome, clean_text(answer), encode(meta),
               0, 0, 0, now, now)
        with self._conn() as conn, conn.transaction():
            cur = conn.execute(_INSERT_NEW if new_run else _UPSERT, row)  # locks the row
            if new_run and cur.rowcount == 0:  # till commit; a new run's id was taken
                raise reused_run_id(self.path, run_id)
            found = conn.execute("SELECT last_seq FROM event_batches WHERE run_id=%s "  # (see
                                 "ORDER BY first_seq DESC LIMIT 1", (run_id,)).fetchone()  # sqlite)
            last = found[0] if found else 0
            new = [e for e in events if e.seq > last]
            conn.execute(_COUNTS, (*summarize(new), run_id))
            rows = batches(run_id, new)
            if rows:
                with conn.cursor() as cur, cur.copy(
                        "COPY event_batches (run_id, first_seq, last_seq, iteration, body) "
                        "FROM STDIN") as copy:
                    for b in rows:
                        copy.write_row((run_id, *b))

    def run(self, run_id: str) -> dict | None:
        rows = self._read(f"SELECT {_RUN_COLS} FROM runs WHERE run_id=%s", (run_id,))
        return run_dict(rows[0], self.path) if rows else None

    def runs(self, limit: int | None = None) -> list[dict]:
        if (limit := check_limit(limit)) is not None:
            rows = self._read(f"SELECT * FROM (SELECT {_RUN_COLS} FROM runs ORDER BY ord DESC "
                              f"LIMIT %s) t ORDER BY ord", (limit,))
        else:
            rows = self._read(f"SELECT {_RUN_COLS} FROM runs ORDER BY ord")
        return [run_dict(r, self.path) for r in rows]

    def events(self, run_id: str) -> list[Event]:
        return unbatch(run_id, self._read("SELECT first_seq, iteration, body FROM event_batches "
                                          "WHERE run_id=%s ORDER BY first_seq", (run_id,)),
                       self.path)

    def trace(self, run_id: str) -> Trace:
        return Trace(run_id, self.events(run_id))

    # ------------------------------------------------------------ checkpoints (raw)
    def put_checkpoint(self, run_id: str, checkpoint: dict) -> None:
        self._write("INSERT INTO checkpoints VALUES (%s, %s) ON CONFLICT (run_id) DO UPDATE "
                    "SET body=EXCLUDED.body", (run_id, encode_raw(checkpoint)))

    def checkpoint(self, run_id: str) -> dict | None:
        rows = self._read("SELECT body FROM checkpoints WHERE run_id=%s", (run_id,))
        return decode(rows[0][0], self.path, f"the checkpoint of run `{run_id}`") if rows \
            else None

    def delete_checkpoint(self, run_id: str) -> bool:
        return self._write("DELETE FROM checkpoints WHERE run_id=%s", (run_id,)) == 1

    # ------------------------------------------------------------ check-ins
    def open_checkin(self, checkin_id: str, run_id: str, fp: str) -> None:
        self._write("INSERT INTO checkins VALUES (%s, %s, %s, 'pending', NULL) "
                    "ON CONFLICT DO NOTHING", (checkin_id, run_id, fp))

    def checkin(self, checkin_id: str) -> dict | None:
        rows = self._read("SELECT checkin_id, run_id, fp, state, decision FROM checkins "
                          "WHERE checkin_id=%s", (checkin_id,))
        return checkin_dict(rows[0], self.path) if rows else None

    def decide_checkin(self, checkin_id: str, fp: str, decision: dict) -> bool:
        return self._write("UPDATE checkins SET state='decided', decision=%s, fp='' "  # (`Store.decide_checkin`)
                           "WHERE checkin_id=%s AND state='pending' AND fp=%s",
                           (encode(decision), checkin_id, fp)) == 1


def _encodable(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (a lone surrogate does not; psycopg would raise)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
