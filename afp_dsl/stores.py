"""Run stores for the public API: `afp.stores.sqlite("runs.db")` (tooling.md §5, §6).

Role:       the public face of `store`: `memory(max_runs=…)`, `sqlite(path)`, `postgres(url)`,
            `from_url(url)` (what `--store` and `AFP_STORE` take), the `Store` Protocol and its
            errors (`StoreError`, `RunDropped`, `StoreDamaged`). See docs/stores.md.
Invariants: importing this needs no optional extra (psycopg is imported when a PostgreSQL store
            is opened).
"""
from __future__ import annotations

from .store import (DEFAULT_MAX_RUNS, DEFAULT_PATH, MemoryStore, RunDropped, SqliteStore, Store,
                    StoreDamaged, StoreError, from_url, memory, postgres, sqlite)
from .store_postgres import PostgresStore


def _documented(*classes: type) -> None:
    """The stores' methods say what they do (`help()`, editors) in the words of `Store`, the
    interface they implement without subclassing it."""
    for cls in classes:
        for name, method in vars(Store).items():
            own = vars(cls).get(name)
            if callable(method) and callable(own) and not own.__doc__:
                own.__doc__ = method.__doc__


_documented(MemoryStore, SqliteStore, PostgresStore)

__all__ = ["DEFAULT_MAX_RUNS", "DEFAULT_PATH", "MemoryStore", "PostgresStore", "RunDropped",
           "SqliteStore", "Store", "StoreDamaged", "StoreError", "from_url", "memory", "postgres",
           "sqlite"]
