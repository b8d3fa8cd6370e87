"""Shared fixtures for the store tests: a real PostgreSQL server, one fresh schema per test.

`AFP_TEST_POSTGRES_URL` names a server; when unset and `initdb`/`pg_ctl` exist, `.ci/postgres.sh
start` starts a throwaway one (stopped at the end if we started it). Without a server the
PostgreSQL tests SKIP with the reason, except under CI=true, where that is a failure.
"""
from __future__ import annotations

import atexit
import glob
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "postgres.sh"
_cache: dict[str, object] = {}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL store tests need a server under CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason}")


def _have_server_binaries() -> bool:
    return bool(shutil.which("pg_ctl") and shutil.which("initdb")
                or glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def _start_server() -> str:
    was_running = subprocess.run(["bash", str(SCRIPT), "url"], capture_output=True,
                                 text=True).returncode == 0
    res = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True,
                         timeout=300)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("export ")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f".ci/postgres.sh start failed: {res.stderr.strip()[-500:]}")
    if not was_running:
        atexit.register(subprocess.run, ["bash", str(SCRIPT), "stop"], capture_output=True)
    return lines[-1].split("=", 1)[1].strip()


def server_url() -> str:
    """The base URL of a reachable server, or skip/fail with the reason."""
    if "url" in _cache:
        return str(_cache["url"])
    if "why" in _cache:
        _unavailable(str(_cache["why"]))
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        _cache["why"] = ("psycopg 3 / psycopg-pool are not installed "
                         "(pip install 'afp-dsl[postgres]')")
        _unavailable(str(_cache["why"]))
    url = os.environ.get("AFP_TEST_POSTGRES_URL")
    if not url:
        if not _have_server_binaries():
            _cache["why"] = ("AFP_TEST_POSTGRES_URL is unset and initdb/pg_ctl are not installed "
                             "(run `bash .ci/postgres.sh start`)")
            _unavailable(str(_cache["why"]))
        try:
            url = _start_server()
        except (RuntimeError, subprocess.SubprocessError) as exc:
            _cache["why"] = str(exc)
            _unavailable(str(exc))
    _cache["url"] = url
    return str(url)


def with_schema(url: str, schema: str) -> str:
    """`url` with every connection's search_path set to `schema` (libpq's `options`)."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-c search_path={schema}')}"


@pytest.fixture
def pg_url():
    """A URL whose connections see a fresh, empty schema (dropped afterwards)."""
    import psycopg
    base = server_url()
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def dump_tables(url: str) -> str:
    """Every row of every table the URL's schema holds, as COPY text (what a dump would hold)."""
    import psycopg
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        for t in tables:
            with conn.cursor() as cur, cur.copy(f"COPY {t} TO STDOUT") as copy:
                out.append(b"".join(bytes(b) for b in copy).decode("utf-8"))
    assert tables, "no tables found in the test schema"
    return "\n".join(out)
