"""The PostgreSQL store against a real server: schema versions, the canary in raw table dumps,
`--store URL` / `AFP_STORE` selection, and clear errors."""
from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner
from interp_support import call, make
from store_support import dump_tables, pg_url  # noqa: F401  (fixture)
from test_conformance_redaction import CLI_SPEC, MESSAGE, SCRIPT, SECRETS, SPEC, TOOLS

from afp_dsl import stores
from afp_dsl.runner import approve
from afp_dsl.store_postgres import safe_url


def _event(seq: int, iteration: int, time: int) -> str:
    return json.dumps({"seq": seq, "id": f"old:{seq}", "kind": "llm.called",
                       "iteration": iteration, "time": time, "caused_by": [], "source": None,
                       "payload": {}})


def test_a_new_database_is_at_the_latest_version(pg_url):
    import psycopg
    from afp_dsl.store_postgres import LATEST, MIGRATIONS
    s = stores.postgres(pg_url)
    assert s.version == LATEST
    s.close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert [v for (v,) in rows] == [m.version for m in MIGRATIONS]


def test_an_older_version_database_is_migrated_and_keeps_its_runs(pg_url):
    import psycopg
    from afp_dsl.store_postgres import LATEST, migrate, schema_version
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn, target=1) == 1
        conn.execute("INSERT INTO runs VALUES ('old', 'desk', NULL, 'finished', 'answered', "
                     "'hi', '{}')")
        for seq, it, t in ((1, 0, 1), (2, 2, 5), (3, 4, 9)):
            conn.execute("INSERT INTO events VALUES ('old', %s, 'llm.called', %s)",
                         (seq, _event(seq, it, t)))
        conn.execute("DROP TABLE schema_version")  # as written before versioning existed
        assert schema_version(conn) == 1
    s = stores.postgres(pg_url)
    assert s.version == LATEST
    r = s.run("old")
    assert (r["agent"], r["answer"], r["events"], r["iterations"], r["time"]) == \
        ("desk", "hi", 3, 4, 9)
    s.save_run("new", "desk", None, "finished", "answered", None, {}, [])
    assert [x["run_id"] for x in s.runs()] == ["old", "new"]
    s.close()
    assert stores.postgres(pg_url).version == LATEST  # reopening applies nothing twice


def test_an_older_version_database_with_a_damaged_event_is_refused_and_left_as_it_was(pg_url):
    """Before, migrating the row raised a bare KeyError."""
    import psycopg
    from afp_dsl.store_postgres import migrate, schema_version
    with psycopg.connect(pg_url, autocommit=True) as conn:
        migrate(conn, target=1)
        conn.execute("INSERT INTO runs VALUES ('old', 'desk', NULL, 'finished', 'answered', "
                     "NULL, '{}')")
        conn.execute("INSERT INTO events VALUES ('old', 1, 'llm.called', '{}')")
    with pytest.raises(stores.StoreDamaged, match="is damaged: run `old`'s event row in the old "
                       "`events` table does not decode .* cannot be upgraded to schema version 2"):
        stores.postgres(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert schema_version(conn) == 1
        assert conn.execute("SELECT body FROM events").fetchall() == [("{}",)]


def test_a_database_from_a_newer_afp_is_refused(pg_url):
    import psycopg
    from afp_dsl.store_postgres import LATEST
    stores.postgres(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version VALUES (%s, 'future')", (LATEST + 1,))
    with pytest.raises(stores.StoreError, match="newer afp") as err:
        stores.postgres(pg_url)
    assert f"the run store `{safe_url(pg_url)}` was written" in str(err.value)  # names it


def test_an_unreachable_server_is_a_clear_error_without_the_password():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://maya:hunter2-secret@127.0.0.1:{port}/nowhere"
    with pytest.raises(stores.StoreError) as err:
        stores.from_url(url)
    msg = str(err.value)
    assert msg.startswith("cannot open the PostgreSQL run store") and f":{port}/nowhere" in msg
    assert "hunter2" not in msg


def assert_clean(text: str) -> None:
    for s in SECRETS:
        assert s not in text, s


def test_canary_no_secret_reaches_any_postgres_table(pg_url):
    agent, prov = make(SPEC % "", SCRIPT, tools=TOOLS, store=stores.postgres(pg_url))
    r = agent.run(MESSAGE)
    assert r.outcome == "answered"
    agent.store.close()
    dump = dump_tables(pg_url)
    assert "run.finished" in dump and "[REDACTED]" in dump  # the dump holds the run
    assert_clean(dump)


PAUSING = """
agent g { tools = [login] redact = [secrets] }
tool login { description = "login" input { password: string } check_in = true }
redact secrets { keys = ["password"] }
"""


def test_a_raw_checkpoint_lives_apart_and_goes_when_the_run_ends(pg_url):
    agent, _ = make(PAUSING, [call("login", password="PW-CANARY-4242"), "in"],
                    store=stores.postgres(pg_url), tools={"login": lambda password: "ok"})
    r = agent.run("log me in")
    assert r.paused
    import psycopg
    with psycopg.connect(pg_url) as conn:
        raw = conn.execute("SELECT body FROM checkpoints").fetchall()
        events = conn.execute("SELECT body FROM event_batches").fetchall()
    assert "PW-CANARY-4242" in raw[0][0] and "PW-CANARY-4242" not in json.dumps(events)
    agent.resume(r.checkpoint, approve(r.checkin))
    assert "PW-CANARY-4242" not in dump_tables(pg_url)


def test_the_cli_takes_a_postgres_url_from_store_and_from_afp_store(pg_url, tmp_path, monkeypatch):
    from afp_dsl.cli import main
    spec = tmp_path / "c.afp"
    spec.write_text(CLI_SPEC)
    res = CliRunner().invoke(main, ["run", str(spec), "-m", MESSAGE, "--script", "canary",
                                    "--store", pg_url, "--json"])
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.stdout)["run_id"]
    monkeypatch.setenv("AFP_STORE", pg_url)
    res2 = CliRunner().invoke(main, ["run", str(spec), "-m", "again", "--script", "canary",
                                     "--json"])
    assert res2.exit_code == 0, res2.output
    s = stores.from_url(None)
    assert isinstance(s, stores.PostgresStore)
    assert [r["run_id"] for r in s.runs()] == [run_id, json.loads(res2.stdout)["run_id"]]
    assert all(r["outcome"] == "answered" and r["iterations"] >= 3 for r in s.runs())
    s.close()
    assert_clean(dump_tables(pg_url))


def test_a_server_that_goes_away_is_a_store_error(pg_url):
    import psycopg
    s = stores.postgres(pg_url)
    s.save_run("r1", "a", None, "finished", "answered", None, {}, [])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the tables vanish under the store
        conn.execute("DROP TABLE runs CASCADE")
    with pytest.raises(stores.StoreError, match="PostgreSQL run store .* failed: .*runs"):
        s.run("r1")
    s.close()


def test_connections_the_server_dropped_are_replaced_not_failed(pg_url):
    """A server restart, or a proxy closing idle connections, leaves the pool holding dead
    connections. Before: the next store calls (one per pooled connection) each failed with
    "terminating connection due to administrator command"."""
    import psycopg
    store = stores.postgres(pg_url, max_size=2)
    agent, _ = make(PAUSING, [call("login", password="pw-1"), "in"], store=store,
                    tools={"login": lambda password: "ok"})
    paused = agent.run("log me in")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     "pid <> pg_backend_pid() AND datname = current_database()")
    for _ in range(3):
        assert store.run(paused.run_id)["outcome"] == "paused"
    done = agent.resume(paused.checkpoint, approve(paused.checkin, by="maya"))
    assert done.outcome == "answered"
    store.close()


def test_the_pool_s_warnings_do_not_reach_stderr_unasked(pg_url, capfd):
    """psycopg_pool logs what it retries as warnings; with no handler configured, Python
    printed them on stderr ("discarding closed connection: …") beside afpc's own errors."""
    import logging
    stores.postgres(pg_url).close()
    stores.postgres(pg_url).close()
    pool_log = logging.getLogger("psycopg.pool")
    assert sum(isinstance(h, logging.NullHandler) for h in pool_log.handlers) == 1
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()  # (as in afpc: nothing configured)
    try:
        pool_log.warning("discarding closed connection: <test>")
    finally:
        root.handlers[:] = saved
    assert "discarding closed connection" not in capfd.readouterr().err
