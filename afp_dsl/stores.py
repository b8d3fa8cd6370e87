"""Run stores for the public API: `afp.stores.sqlite("runs.db")` (tooling.md §5, §6).

Role:       the public face of `store`: `memory(max_runs=…)`, `sqlite(path)`, `postgres(url)`,
            `from_url(url)` (what `--store` and `AFP_STORE` take), the `Store` Protocol and its
            errors. See docs/stores.md.
"""
from __future__ import annotations

from typing import Any

from .store import (DEFAULT_MAX_RUNS, DEFAULT_PATH, MemoryStore, RunDropped, SqliteStore, Store,
                    StoreError, from_url, memory, postgres, sqlite)


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # imported on use: psycopg is an optional extra
        from .store_postgres import PostgresStore
        return PostgresStore
    raise AttributeError(f"module 'afp_dsl.stores' has no attribute {name!r}")


__all__ = ["DEFAULT_MAX_RUNS", "DEFAULT_PATH", "MemoryStore", "PostgresStore", "RunDropped",
           "SqliteStore", "Store", "StoreError", "from_url", "memory", "postgres", "sqlite"]
