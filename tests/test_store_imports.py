"""Each store module imports on its own in a fresh interpreter: `store` once imported its
implementations as it loaded, and they import `store`, so `import afp_dsl.store_sqlite` first
was a circular import."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("store", "stores", "store_memory", "store_sqlite", "store_sqlite_schema", "store_rows",
           "store_postgres")


@pytest.mark.parametrize("module", MODULES)
def test_a_store_module_imports_first(module):
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import afp_dsl.{module}; "
            "from afp_dsl.store import MemoryStore, SqliteStore; "
            "print(MemoryStore.__name__, SqliteStore.__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["MemoryStore", "SqliteStore"]
