"""Which run store a URL or path names: what `--store`, `AFP_STORE` and `from_url` take.

Role:       `open_url(url, stamp, create)` behind `store.from_url` (split from `store`): picks
            the PostgreSQL, memory or SQLite store, after refusing what only looks like a store
            URL; docs/stores.md lists the forms.
Emits:      `StoreError` naming the accepted forms for an unknown scheme, a blank path, and for
            a string that would otherwise become a SQLite file by mistake: a libpq `key=value`
            connection string, `sqlite://NAME` (two slashes), a `sqlite:///` URL with a `?`
            query, a known scheme without its `//` (`sqlite:runs.db`); and for a store whose
            folder does not exist (or is a file), or whose file name is too long for it.
Invariants: refuses before any file or folder is made; a message never repeats the text of a
            connection string (it may hold a password), only its form; a scheme is read
            case-insensitively, and SQLAlchemy's `+driver` suffix (`postgresql+psycopg://`) is
            dropped, so the same URL works here as in SQLAlchemy.
"""
from __future__ import annotations

import os
import re
from typing import Any

from .store import DEFAULT_PATH, Stamp, StoreError

FORMS = "a SQLite path, `sqlite:///path`, `postgresql://user@host/db` or `memory:`"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9.-]*)(\+[A-Za-z0-9_.-]+)?://")
_KNOWN = ("postgresql", "postgres", "sqlite")
_NO_SLASHES = re.compile(r"(?i)(postgresql|postgres|sqlite|memory):(?!//)(?=.)")
_CONNINFO = re.compile(r"(?i)\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|"
                       r"service|options|connect_timeout|application_name)\s*=")


def open_url(url: str, stamp: Stamp | None, create: bool) -> Any:
    """The store `url` names (see the module docstring)."""
    url = normalised(url)
    _refuse_lookalikes(url)
    if url.startswith(("postgresql://", "postgres://")):
        from .store_postgres import PostgresStore
        return PostgresStore(url, stamp=stamp, create=create)
    if url.lower() in ("memory:", "memory://"):
        if not create:
            raise StoreError(f"`{url}` is a private in-process store: it holds no runs of earlier "
                             f"commands; name the store the runs were saved to")
        from .store_memory import MemoryStore
        return MemoryStore(stamp=stamp)
    if url.startswith("sqlite:///"):  # SQLAlchemy's form: sqlite:///rel.db, sqlite:////abs.db
        url = url[len("sqlite:///"):]
        if not url.strip():
            raise StoreError("`sqlite:///` names no file; write `sqlite:///relative/runs.db` or "
                             "`sqlite:////absolute/runs.db`")
    elif url in ("sqlite://", "sqlite://:memory:"):
        url = ":memory:"
    elif "://" in url:
        raise StoreError(f"unknown store URL scheme `{url.split('://', 1)[0]}://`; use {FORMS}")
    if not url.strip():
        raise StoreError(f"the store `{url}` is blank; name a SQLite file (`runs.db`), "
                         f"`sqlite:///path` or `postgresql://user@host/db`")
    if create and url != ":memory:":
        _folder_exists(url)
    from .store_sqlite import SqliteStore
    return SqliteStore(url, stamp=stamp, create=create)


def normalised(url: str) -> str:
    """A known scheme in lower case and without SQLAlchemy's `+driver` (`SQLite:///x.db`,
    `postgresql+psycopg://…`): URL schemes are case-insensitive, and libpq reads only
    `postgresql://` and `postgres://`."""
    m = _SCHEME.match(url)
    if m is None or m.group(1).lower() not in _KNOWN:
        return url
    return m.group(1).lower() + url[m.end(1) + len(m.group(2) or ""):]


def _refuse_lookalikes(url: str) -> None:
    """`StoreError` for a string that is meant as a store URL but would be taken as the name of
    a new SQLite file (`sqlite:runs.db`, `host=db dbname=afp`, `sqlite:///x.db?mode=ro`)."""
    if _CONNINFO.match(url):
        raise StoreError("the store looks like a PostgreSQL key=value connection string "
                         "(`host=… dbname=…`), which afp does not read; write it as a URL, "
                         "postgresql://user[:password]@host[:port]/db (for a SQLite file whose "
                         "name starts so, write `./NAME`)")
    if url.startswith("sqlite://") and not url.startswith("sqlite:///") \
            and url not in ("sqlite://", "sqlite://:memory:"):
        name = url[len("sqlite://"):]
        raise StoreError(f"`{url}` names a host (`{name.split('/', 1)[0]}`), not a file: a SQLite "
                         f"URL has three slashes before a relative path, `sqlite:///{name}`, "
                         f"and four before an absolute one, `sqlite:////srv/afp/runs.db`")
    if url.startswith("sqlite:///") and "?" in url:
        raise StoreError(f"`{url}` has a `?` query, which afp does not read (it opens and "
                         f"configures the store itself); name the file only, "
                         f"`{url.split('?', 1)[0]}`")
    m = _NO_SLASHES.match(url)
    if m and url.lower() != "memory:":
        scheme = m.group(1).lower()
        fix = ("`memory:`" if scheme == "memory" else
               f"`sqlite:///{url[m.end():]}`" if scheme == "sqlite" else
               "`postgresql://user[:password]@host[:port]/db`")
        raise StoreError(f"the store `{url[:m.end()]}…` is missing the `//` of a URL; write "
                         f"{fix} (for a SQLite file whose name starts so, write `./NAME`)")


def _folder_exists(path: str) -> None:
    """A store named by `--store` or `AFP_STORE` goes in a folder that exists (the default's,
    `.afp/`, afp's own, is made): a typo (`/srv/afp/runz/x.db`) would otherwise start an empty
    store somewhere unexpected, while readers (`afpc trace`) refuse the same path. (`sqlite(path)`
    in Python makes the folder, as asked.)"""
    if os.path.normpath(path) == os.path.normpath(DEFAULT_PATH):
        return
    parent = os.path.dirname(path) or "."
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise StoreError(f"cannot create the run store `{path}`: `{parent}` is a file, not a "
                         f"folder; name a file inside a folder, e.g. `runs.db`")
    if not os.path.isdir(parent):
        raise StoreError(f"cannot create the run store `{path}`: the folder `{parent}` does not "
                         f"exist; create it first, or name a file in an existing folder")
    name = os.path.basename(path)
    limit = _name_max(parent)
    if limit and len(os.fsencode(name)) > limit and not os.path.exists(path):
        raise StoreError(f"cannot create the run store `{path[:80]}…`: its file name is "
                         f"{len(os.fsencode(name))} bytes long, and the folder `{parent}` takes "
                         f"names of at most {limit}; choose a shorter name")


def _name_max(folder: str) -> int | None:
    """The longest file name (in bytes) the file system of `folder` takes, when it says."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # (no pathconf on Windows)
        return None
