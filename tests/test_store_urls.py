"""Store URLs from `--store`, `AFP_STORE` and `from_url`: what a mistyped or malformed one says
(tooling.md §5; docs/stores.md). Each case failed before its fix: the old behaviour is named in
each docstring.
"""
from __future__ import annotations

import socket

import pytest

from afp_dsl import stores


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("url, secret", [
    ("postgresql://maya:hunter2-secret@[::1/afp", "hunter2"),           # libpq quotes the URL
    ("postgresql://maya:hunter2%zz@127.0.0.1/afp", "hunter2"),          # ... or the bad token
    ("postgresql://maya:pa@ssw0rd@127.0.0.1:{port}/afp", "ssw0rd"),     # ... or the host it read
    ("postgresql://maya:hunt?er2@127.0.0.1:{port}/afp", "er2"),         # a raw `?` in it
    ("postgresql://maya@127.0.0.1/afp?password=sec%zzret", "sec"),
])
def test_a_postgres_url_s_password_never_reaches_the_error(url: str, secret: str) -> None:
    """Before: libpq's message, kept as the cause, quoted the whole URL (`end of string reached
    … in URI: "postgresql://maya:hunter2-secret@[::1/afp"`) or the piece it could not parse
    (`invalid percent-encoded token: "hunter2%zz"`, `failed to resolve host 'ssw0rd@127…'`),
    password and all; and a password with a raw `?` was shown whole in the store's name."""
    pytest.importorskip("psycopg_pool")
    url = url.format(port=_closed_port())
    with pytest.raises(stores.StoreError) as err:
        stores.from_url(url)
    said = str(err.value)
    assert said.startswith("cannot open the PostgreSQL run store `postgresql://maya")
    assert secret not in said and "***" in said


@pytest.mark.parametrize("url", [
    "postgresql://maya:pw@[::1/afp",
    "postgresql://maya@127.0.0.1:port/afp",
    "postgresql://maya@127.0.0.1/afp?colour=blue",
])
def test_a_malformed_postgres_url_says_how_to_write_one(url: str) -> None:
    """Before: "…; check that the store is reachable and intact", for a URL no server was ever
    asked about."""
    pytest.importorskip("psycopg_pool")
    with pytest.raises(stores.StoreError) as err:
        stores.from_url(url)
    assert "the URL is malformed" in str(err.value)
    assert "write postgresql://user[:password]@host[:port]/db" in str(err.value)


@pytest.mark.parametrize("url, said", [
    ("host=db.internal dbname=afp password=hunter2", "key=value connection string"),
    ("dbname=afp", "key=value connection string"),
    ("sqlite://runs.db", "names a host (`runs.db`), not a file"),
    ("sqlite:///runs.db?mode=ro", "name the file only, `sqlite:///runs.db`"),
    ("sqlite:runs.db", "write `sqlite:///runs.db`"),
    ("postgresql:/afp", "write `postgresql://user[:password]@host[:port]/db`"),
    ("memory:x", "write `memory:`"),
])
def test_what_only_looks_like_a_store_url_is_refused_not_made_a_file(tmp_path, monkeypatch,
                                                                      url: str, said: str) -> None:
    """Before: each became the name of a new SQLite file in the working directory (a connection
    string, password and all, as a file name; `x.db?mode=ro`; `sqlite:runs.db`)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(stores.StoreError) as err:
        stores.from_url(url)
    assert said in str(err.value)
    assert "hunter2" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url, file", [
    ("SQLite:///runs.db", "runs.db"),
    ("sqlite+pysqlite:///runs.db", "runs.db"),
    ("./host=x.db", "host=x.db"),
])
def test_a_scheme_in_any_case_or_with_a_driver_and_a_dotted_name_open_sqlite(
        tmp_path, monkeypatch, url: str, file: str) -> None:
    """Before: `SQLite:///` and `sqlite+pysqlite:///` were unknown schemes."""
    monkeypatch.chdir(tmp_path)
    store = stores.from_url(url)
    store.close()
    assert (tmp_path / file).is_file()


@pytest.mark.parametrize("url", ["POSTGRESQL://maya@127.0.0.1:{port}/afp",
                                 "postgresql+psycopg://maya@127.0.0.1:{port}/afp"])
def test_a_postgres_url_in_capitals_or_with_a_driver_reaches_postgres(url: str) -> None:
    """Before: "unknown store URL scheme `POSTGRESQL://`" (`postgresql+psycopg://` too)."""
    pytest.importorskip("psycopg_pool")
    port = _closed_port()
    with pytest.raises(stores.StoreError) as err:
        stores.from_url(url.format(port=port))
    assert f"cannot open the PostgreSQL run store `postgresql://maya@127.0.0.1:{port}/afp`" \
        in str(err.value)


def test_a_store_under_a_file_or_with_a_name_too_long_says_so(tmp_path, monkeypatch) -> None:
    """Before: "the folder `notes.txt` does not exist" for a file, and "unable to open database
    file; check that its folder exists and can be written" for a 300-byte name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(stores.StoreError, match="`notes.txt` is a file, not a folder"):
        stores.from_url("notes.txt/runs.db")
    with pytest.raises(stores.StoreError, match="its file name is 303 bytes long"):
        stores.from_url("a" * 300 + ".db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_closed_store_says_it_was_closed(tmp_path) -> None:
    """Before: "Cannot operate on a closed database.; check that the store is reachable and
    intact, or choose another one"."""
    import afp_dsl as afp
    store = stores.sqlite(tmp_path / "runs.db")
    agent = afp.load('agent a { system = "x" }').agent(provider=afp.providers.mock(["hi"]),
                                                      store=store)
    store.close()
    with pytest.raises(stores.StoreError, match=r"this store object was closed \(`close\(\)`\)"):
        agent.run("hello")


def test_a_search_path_naming_no_schema_says_so() -> None:
    """PostgreSQL's "no schema has been selected to create in" (a `?options=-c search_path=…`
    naming a schema that does not exist). Before: "check that the store is reachable and
    intact"."""
    from afp_dsl.store import failed
    said = str(failed("cannot open the PostgreSQL run store `postgresql://h/db`",
                      "no schema has been selected to create in"))
    assert "search_path names no schema that exists: create the schema" in said


@pytest.mark.parametrize("url", ["host=127.0.0.1 password=hunter2 dbname=afp", "runs.db"])
def test_postgres_takes_a_url_only_and_never_repeats_what_it_was_given(url: str) -> None:
    """Before: a libpq key=value string was accepted and became the store's `path`, password
    and all, in every later message; `runs.db` was sent to libpq ("missing "=" after …")."""
    with pytest.raises(ValueError, match=r"postgres\(\) takes the server's URL") as err:
        stores.postgres(url)
    assert url not in str(err.value)


def test_postgres_reads_a_scheme_in_any_case_as_from_url_does() -> None:
    pytest.importorskip("psycopg_pool")
    port = _closed_port()
    with pytest.raises(stores.StoreError) as err:
        stores.postgres(f"PostgreSQL+psycopg://maya@127.0.0.1:{port}/afp")
    assert f"`postgresql://maya@127.0.0.1:{port}/afp`" in str(err.value)
