"""The SQLite store: WAL, schema versions and migrations, URLs, and raw bytes after a run ends."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest
from interp_support import call, make

from afp_dsl import stores
from afp_dsl.runner import approve
from afp_dsl.store_sqlite_schema import LATEST, MIGRATIONS, schema_version

# The schema every store file had before versioning (schema version 1), verbatim.
V1 = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, agent TEXT, spec TEXT, status TEXT, outcome TEXT, answer TEXT,
  meta TEXT);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT, seq INTEGER, kind TEXT, body TEXT, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT PRIMARY KEY, body TEXT);
CREATE TABLE IF NOT EXISTS checkins (
  checkin_id TEXT PRIMARY KEY, run_id TEXT, fp TEXT, state TEXT, decision TEXT);
"""


def _event(seq: int, iteration: int, time: int) -> str:
    return json.dumps({"seq": seq, "id": f"old:{seq}", "kind": "llm.called",
                       "iteration": iteration, "time": time, "caused_by": [], "source": None,
                       "payload": {}})


def test_a_new_file_is_wal_and_at_the_latest_version(tmp_path):
    s = stores.sqlite(tmp_path / "a" / "runs.db")
    assert s.version == LATEST
    s.close()
    db = sqlite3.connect(tmp_path / "a" / "runs.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = db.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert [v for v, _ in rows] == [m.version for m in MIGRATIONS]


def test_an_older_version_file_is_migrated_and_keeps_its_runs(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(V1)
    db.execute("INSERT INTO runs VALUES ('old', 'desk', NULL, 'paused', 'paused', NULL, '{}')")
    db.executemany("INSERT INTO events VALUES ('old', ?, 'llm.called', ?)",
                   [(1, _event(1, 0, 1)), (2, _event(2, 3, 7))])
    db.execute("INSERT INTO checkpoints VALUES ('old', '{\"state\": 1}')")
    db.execute("INSERT INTO checkins VALUES ('c1', 'old', 'fp', 'pending', NULL)")
    db.commit()
    assert schema_version(db) == 1
    db.close()

    s = stores.sqlite(path)
    assert s.version == LATEST
    r = s.run("old")
    assert (r["agent"], r["status"], r["events"], r["iterations"], r["time"]) == \
        ("desk", "paused", 2, 3, 7)
    assert [e.seq for e in s.events("old")] == [1, 2] and s.checkpoint("old") == {"state": 1}
    assert s.decide_checkin("c1", "fp", {"approved": True})
    s.close()
    again = stores.sqlite(path)  # reopening applies nothing twice
    assert again.version == LATEST and again.run("old")["events"] == 2
    versions = again._read("SELECT version FROM schema_version ORDER BY version")
    assert [v for (v,) in versions] == [m.version for m in MIGRATIONS]


@pytest.mark.parametrize("body, why", [
    ("nope", "is not valid JSON"), ("[]", "not a JSON object"), ("{}", "iteration"),
    ('{"seq": 1, "id": "x", "kind": "k", "iteration": 1, "time": 1, "source": {"file": "f"}}',
     "malformed source span"),
    ('{"seq": "1", "id": "x", "kind": "k", "iteration": 1, "time": 1}', "wrong type")])
def test_an_older_version_file_with_a_damaged_event_is_refused_and_left_as_it_was(
        tmp_path, body, why):
    """Before, migrating such a row raised a bare KeyError, AttributeError or TypeError."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(V1)
    db.execute("INSERT INTO runs VALUES ('old', 'desk', NULL, 'finished', 'answered', NULL, '{}')")
    db.execute("INSERT INTO events VALUES ('old', 1, 'llm.called', ?)", (body,))
    db.commit()
    db.close()
    with pytest.raises(stores.StoreDamaged, match=rf"`{re.escape(str(path))}` is damaged: run "
                       rf"`old`'s event row in the old `events` table .*{re.escape(why)}.* "
                       rf"cannot be upgraded to schema version 2; restore it from a backup"):
        stores.sqlite(path)
    db = sqlite3.connect(path)
    assert schema_version(db) == 1 and db.execute("SELECT body FROM events").fetchall() == [(body,)]
    db.close()


def test_a_file_from_a_newer_afp_is_refused(tmp_path):
    path = tmp_path / "new.db"
    stores.sqlite(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version VALUES (?, 'from the future')", (LATEST + 1,))
    db.commit()
    db.close()
    with pytest.raises(stores.StoreError, match="newer afp"):
        stores.sqlite(path)


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(stores.StoreError, match="cannot open the run store"):
        stores.sqlite(path)


def test_urls_and_env_select_the_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert stores.from_url(str(tmp_path / "p.db")).path == str(tmp_path / "p.db")
    assert stores.from_url("sqlite:///rel.db").path == "rel.db"
    assert stores.from_url(f"sqlite:///{tmp_path}/abs.db").path == f"{tmp_path}/abs.db"
    assert stores.from_url("sqlite://").path == ":memory:"
    assert isinstance(stores.from_url("memory:"), stores.MemoryStore)
    monkeypatch.setenv("AFP_STORE", str(tmp_path / "env.db"))
    assert stores.from_url(None).path == str(tmp_path / "env.db")
    monkeypatch.delenv("AFP_STORE")
    assert stores.from_url(None).path == ".afp/runs.db" and (tmp_path / ".afp/runs.db").exists()
    with pytest.raises(stores.StoreError, match="unknown store URL scheme `redis://`"):
        stores.from_url("redis://localhost/0")


SPEC = """
agent g { tools = [login] redact = [secrets] }
tool login { description = "login" input { password: string } check_in = true }
redact secrets { keys = ["password"] }
"""


def test_a_raw_checkpoint_leaves_no_bytes_in_the_file_once_the_run_ends(tmp_path):
    path = tmp_path / "runs.db"
    agent, _ = make(SPEC, [call("login", password="PW-CANARY-4242"), "in"],
                    store=stores.sqlite(path), tools={"login": lambda password: "ok"})
    r = agent.run("log me in")
    assert r.paused
    assert "PW-CANARY-4242" in json.dumps(agent.store.checkpoint(r.run_id))  # raw, apart
    assert "PW-CANARY-4242" not in "".join(e.to_json() for e in agent.store.events(r.run_id))
    agent.resume(r.checkpoint, approve(r.checkin))
    agent.store.close()
    files = [p for p in tmp_path.iterdir() if p.name.startswith("runs.db")]
    assert files and all(b"PW-CANARY-4242" not in p.read_bytes() for p in files)


@pytest.mark.parametrize("pad", [0, 20_000])  # (20 kB: the checkpoint spills to overflow pages)
def test_a_raw_checkpoint_leaves_no_bytes_in_any_file_while_the_store_stays_open(tmp_path, pad):
    """A long-lived process keeps its store open: the `-wal` file held the checkpoint's frames
    after the run ended (until the last connection closed); now it is emptied on deletion."""
    path = tmp_path / "runs.db"
    secret = "PW-CANARY-4242" + "x" * pad
    agent, _ = make(SPEC, [call("login", password=secret), "in"],
                    store=stores.sqlite(path), tools={"login": lambda password: "ok"})
    r = agent.run("log me in")
    assert r.paused and (tmp_path / "runs.db-wal").stat().st_size > 0
    agent.resume(r.checkpoint, approve(r.checkin))
    files = [p for p in tmp_path.iterdir() if p.name.startswith("runs.db")]
    assert len(files) == 3  # the store, its `-wal` and `-shm`: still open
    assert all(b"PW-CANARY-4242" not in p.read_bytes() for p in files)
    assert agent.store.run(r.run_id)["outcome"] == "answered"
    agent.store.close()


def test_decisions_are_fsynced_other_writes_survive_a_process_crash(tmp_path):
    s = stores.sqlite(tmp_path / "runs.db")
    assert s._read("PRAGMA synchronous") == [(1,)]  # NORMAL: with WAL, crash-safe commits
    log: list[str] = []
    s._db.set_trace_callback(log.append)
    s.open_checkin("c1", "r1", "fp")
    assert not any("synchronous" in q for q in log)
    log.clear()
    assert s.decide_checkin("c1", "fp", {"approved": True})
    upd = next(i for i, q in enumerate(log) if q.startswith("UPDATE checkins"))
    assert "PRAGMA synchronous=FULL" in log[:upd] and log[-1] == "PRAGMA synchronous=NORMAL"
    assert s._read("PRAGMA synchronous") == [(1,)]


def test_a_failing_sqlite_operation_is_a_store_error(tmp_path):
    s = stores.sqlite(tmp_path / "runs.db")
    s._db.execute("DROP TABLE runs")  # the file changed under the store
    with pytest.raises(stores.StoreError, match="run store .* failed: no such table: runs"):
        s.save_run("r1", "a", None, "finished", "answered", None, {}, [])
    with pytest.raises(stores.StoreError, match="no such table: runs"):
        s.runs()
