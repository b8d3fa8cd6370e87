"""Every module of the package imports first in a fresh interpreter. `store` once imported its
implementations as it loaded, and they import `store`, so `import afp_dsl.store_sqlite` first
was a circular import; this catches any such cycle."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "afp_dsl"
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for p in PACKAGE.rglob("*.py"))
BATCH = 8  # processes at a time


def _first_import(module: str) -> subprocess.Popen:
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import {module}"
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_every_module_imports_first():
    assert "afp_dsl.store_sqlite" in MODULES and len(MODULES) > 100
    failed = {}
    for i in range(0, len(MODULES), BATCH):
        procs = {m: _first_import(m) for m in MODULES[i:i + BATCH]}
        for module, proc in procs.items():
            _, err = proc.communicate(timeout=120)
            if proc.returncode != 0:
                failed[module] = err.strip().splitlines()[-1:]
    assert not failed, failed


def test_the_store_classes_stay_reachable_from_store():
    from afp_dsl import store
    from afp_dsl.store_memory import MemoryStore
    from afp_dsl.store_sqlite import SqliteStore
    assert (store.MemoryStore, store.SqliteStore) == (MemoryStore, SqliteStore)
    assert isinstance(store.memory(), MemoryStore)
