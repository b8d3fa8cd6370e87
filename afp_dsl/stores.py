"""Run stores for the public API: `afp.stores.sqlite("runs.db")` (tooling.md §5, §6).

Role:       the public face of `store`; PostgreSQL lands here later behind the same interface.
"""
from __future__ import annotations

from .store import DEFAULT_PATH, MemoryStore, SqliteStore, StoreError, from_url, memory, sqlite

__all__ = ["DEFAULT_PATH", "MemoryStore", "SqliteStore", "StoreError", "from_url", "memory",
           "sqlite"]
