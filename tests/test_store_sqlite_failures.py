"""The SQLite store when the disk fails under it: the error says what failed, and a reader still
reads. Each case failed before its fix: the old behaviour is named in each docstring.
"""
from __future__ import annotations

import sqlite3

import pytest

from afp_dsl import stores
from afp_dsl import store_sqlite_schema as schema
from afp_dsl.store import Migration, failed


def _full(conn) -> None:
    """What SQLite does on a full disk mid-transaction: it rolls the transaction back itself."""
    conn.execute("ROLLBACK")
    raise sqlite3.OperationalError("database or disk is full")


def test_a_migration_the_disk_cut_short_reports_the_disk_not_the_rollback(tmp_path, monkeypatch):
    """Before: "cannot rollback - no transaction is active" (the `ROLLBACK` of the failed
    migration's transaction, which SQLite had rolled back already) hid "database or disk is
    full", so the message said to check the store was reachable and intact."""
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    schema.migrate(db)
    monkeypatch.setattr(schema, "MIGRATIONS",
                        schema.MIGRATIONS + (Migration(schema.LATEST + 1, "next", (_full,)),))
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        schema.migrate(db, target=schema.LATEST + 1)
    assert schema.schema_version(db) == schema.LATEST and not db.in_transaction
    db.close()


def test_a_write_the_disk_cut_short_reports_the_disk_not_the_rollback(tmp_path):
    """Before: `StoreError` "… failed: cannot rollback - no transaction is active; check that
    the store is reachable and intact"."""
    store = stores.sqlite(tmp_path / "x.db")
    with pytest.raises(stores.StoreError, match="database or disk is full; free disk space"):
        store._tx(lambda cur: _full(cur.connection))
    store.save_run("r", "a", None, "finished", "answered", "hi", {}, [])  # (still usable)
    assert store.run("r")["answer"] == "hi"
    store.close()


def test_a_disk_io_error_says_the_disk_may_be_full():
    """On a full disk, creating the `-shm` file beside the store fails as "disk I/O error".
    Before: "…; check that the store is reachable and intact, or choose another one"."""
    said = str(failed("cannot open the run store `r.db`", "disk I/O error"))
    assert "the disk may be full or failing: free disk space" in said


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB file system of its own (tmpfs; needs root), unmounted afterwards."""
    import shutil
    import subprocess
    disk = tmp_path / "disk"
    disk.mkdir()
    if shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)],
            capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True)  # (lazy: a handle may stay)


def _fill(disk) -> None:
    with open(disk / "fill", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:  # (no space left: full)
            pass


def test_on_a_full_disk_the_readers_still_read_and_a_writer_says_the_disk_is_full(small_disk):
    """Before: `afpc trace list` failed with "disk I/O error; check that the store is
    reachable and intact" (opening a WAL store creates its `-shm` file), and so did `afpc run`."""
    from click.testing import CliRunner

    from afp_dsl.cli import main
    store = stores.sqlite(small_disk / "runs.db")
    store.save_run("run-1", "a", None, "finished", "answered", "hi", {}, [])
    store.close()
    _fill(small_disk)
    listed = CliRunner().invoke(main, ["trace", "list", "--store", str(small_disk / "runs.db")])
    assert listed.exit_code == 0 and "run-1" in listed.output, listed.output
    spec = small_disk.parent / "a.afp"
    spec.write_text('agent a { system = "x" }\n')
    ran = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--store",
                                    str(small_disk / "runs.db")])
    assert ran.exit_code == 1 and "Traceback" not in ran.output
    assert "free disk space" in ran.output and "reachable and intact" not in ran.output


def test_a_new_store_file_is_private_to_its_owner(tmp_path):
    """It holds raw checkpoints (semantics §9). Before: created with the umask's mode, usually
    0644, so every local user could read a paused run's secrets."""
    import os
    import stat
    store = stores.sqlite(tmp_path / "runs.db")
    store.save_run("r", "a", None, "finished", "answered", "hi", {}, [])
    for name in ("runs.db", "runs.db-wal", "runs.db-shm"):
        if (tmp_path / name).exists():
            assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name
    store.close()
    shared = tmp_path / "shared.db"
    shared.touch(mode=0o660)
    os.chmod(shared, 0o660)
    stores.sqlite(shared).close()  # (an existing file keeps its mode)
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o660


@pytest.mark.parametrize("cause", ["attempt to write a readonly database",
                                   "[Errno 13] Permission denied: 'runs/new.db'"])
def test_a_store_that_may_not_be_written_says_so_not_to_free_disk_space(cause: str) -> None:
    """Before: "free disk space and check the store's file permissions" for a read-only store."""
    said = str(failed("cannot open the run store `runs/new.db`", cause))
    assert "may not be written here: check their permissions" in said
    assert "free disk space" not in said
