"""The SQLite store on files it may only read or does not own: a read-only store or folder,
another application's database, a database from a newer afp.

Each case failed before its fix: the old behaviour is named in each docstring.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from interp_support import make

from afp_dsl import stores
from afp_dsl.store_sqlite_schema import LATEST

AFPC = [sys.executable, "-m", "afp_dsl.cli"]


def _unprivileged() -> list[str] | None:
    """A prefix that runs a command bound by file permissions: nothing as a plain user; as root,
    `setpriv` dropping the capabilities that bypass them (None: cannot)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
            "-dac_override,-dac_read_search"]


@pytest.fixture
def saved(tmp_path: Path):
    """A folder holding a store with one finished run; made writable again afterwards."""
    folder = tmp_path / "runs"
    store = stores.sqlite(folder / "runs.db")
    agent, _ = make("agent a { system = \"x\" }", ["hello"], store=store)
    run_id = agent.run("hi").run_id
    store.close()
    yield folder / "runs.db", run_id
    folder.chmod(0o755)


@pytest.mark.parametrize("locked", ["folder", "folder and file", "file"])
def test_the_readers_read_a_store_they_may_not_write(saved, locked: str) -> None:
    """Before: with the folder read-only, `trace list`, `trace show` and `why` failed with
    "attempt to write a readonly database" (WAL mode needs `-wal`/`-shm` files beside the
    store; the reader now opens it read-only)."""
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a file read-only")
    path, run_id = saved
    if "file" in locked:
        path.chmod(0o444)
    if "folder" in locked:
        path.parent.chmod(0o555)
    before = sorted(p.name for p in path.parent.iterdir())
    for args in (["trace", "list"], ["trace", "show", "last"], ["why", "last"],
                 ["trace", "export", "last", "--format", "jsonl"]):
        proc = subprocess.run(prefix + AFPC + args + ["--store", str(path)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert run_id in proc.stdout and not proc.stderr
    if "folder" in locked:
        assert sorted(p.name for p in path.parent.iterdir()) == before


def test_a_store_with_unsaved_wal_in_a_read_only_folder_is_read_or_named(saved) -> None:
    """A writer still holds the store open (its `-wal` file has commits not yet copied into the
    store): a reader that cannot write the folder reads them too, or says why it cannot; it never
    shows a stale store."""
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a folder read-only")
    path, first = saved
    writer = stores.sqlite(path)
    writer._db.execute("PRAGMA wal_autocheckpoint=0")
    second = "r-2"
    writer.save_run(second, "a", None, "finished", "answered", "hello", {}, [])
    assert os.path.getsize(f"{path}-wal") > 0
    path.parent.chmod(0o555)
    try:
        proc = subprocess.run(prefix + AFPC + ["trace", "list", "--store", str(path)],
                              capture_output=True, text=True, timeout=120)
    finally:
        path.parent.chmod(0o755)
        writer.close()
    if proc.returncode == 0:
        assert first in proc.stdout and second in proc.stdout
    else:
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "read-only" in proc.stderr and str(path) in proc.stderr


def test_a_reader_leaves_another_applications_database_as_it_was(tmp_path: Path) -> None:
    """Before: `afpc trace list --store app.db` said "not a run store" but had already switched
    the application's database to WAL journaling (a change that stays with the file)."""
    path = tmp_path / "app.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(stores.StoreError, match="not a run store"):
        stores.from_url(str(path), create=False)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_writer_refuses_another_applications_database_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    """Before: `afpc run --store app.db` on another application's SQLite file added afp's five
    tables to it and switched it to WAL journaling."""
    path = tmp_path / "app.db"
    db = sqlite3.connect(path)
    for name in ("users", "orders", "items", "prices"):
        db.execute(f"CREATE TABLE {name} (id INTEGER)")
    db.execute("CREATE VIEW totals AS SELECT COUNT(*) FROM users")
    db.commit()
    db.close()
    with pytest.raises(stores.StoreError, match=r"`.*app\.db` is not a run store: it is a database "
                                                r"with other tables \(`items`, `orders`, `prices`, …\)"
                                                r".*e\.g\. --store runs\.db"):
        stores.from_url(str(path))
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master ORDER BY name")] == [
        "items", "orders", "prices", "totals", "users"]
    db.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    proc = subprocess.run(AFPC + ["run", str(_spec(tmp_path)), "-m", "hi", "--store", str(path)],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode != 0 and "is not a run store" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_empty_database_file_becomes_a_store(tmp_path: Path) -> None:
    """A file with no tables (new, or emptied) is no other application's: afp makes it a store."""
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    store = stores.from_url(str(path))
    assert store.runs() == []
    store.close()


def _spec(folder: Path) -> Path:
    spec = folder / "agent.afp"
    spec.write_text('agent a {\n  system = "Be brief."\n}\n', encoding="utf-8")
    return spec


def test_a_file_from_a_newer_afp_is_refused_naming_it_and_left_as_it_was(tmp_path: Path) -> None:
    """Before: "the run store was written by a newer afp" did not say which store."""
    path = tmp_path / "new.db"
    stores.sqlite(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version VALUES (?, 'from the future')", (LATEST + 1,))
    db.commit()
    db.execute("PRAGMA journal_mode=DELETE")
    db.close()
    for create in (True, False):
        with pytest.raises(stores.StoreError, match=f"run store `{path}` was written by a newer "
                                                    f"afp .*upgrade afp"):
            stores.from_url(str(path), create=create)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_an_older_store_that_is_read_only_here_says_it_needs_upgrading(tmp_path: Path) -> None:
    """A store from before a migration cannot be upgraded without writing: the reader says so
    (before: "attempt to write a readonly database")."""
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a folder read-only")
    from test_store_sqlite import V1
    folder = tmp_path / "old"
    folder.mkdir()
    db = sqlite3.connect(folder / "runs.db")
    db.executescript(V1)
    db.close()
    folder.chmod(0o555)
    try:
        proc = subprocess.run(prefix + AFPC + ["trace", "list", "--store", str(folder / "runs.db")],
                              capture_output=True, text=True, timeout=120)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "schema version 1, which this afp upgrades to" in proc.stderr
    assert "read-only here; open it once where it can be written" in proc.stderr
