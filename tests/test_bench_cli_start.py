"""The cold-start benchmark's interpreter without start-up hooks (bench/cli_start.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cli_start import hook_free_python, startup_hooks  # noqa: E402


def test_startup_hooks_are_the_pth_files_with_import_lines(tmp_path: Path) -> None:
    (tmp_path / "paths.pth").write_text("/some/folder\n# import nothing\n", encoding="utf-8")
    (tmp_path / "hook.pth").write_text("/a\nimport os; os.environ\n", encoding="utf-8")
    (tmp_path / "tab.pth").write_text("import\tsys\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("import os\n", encoding="utf-8")
    assert startup_hooks([str(tmp_path)]) == ["hook.pth", "tab.pth"]


def test_hook_free_python_imports_the_project_and_runs_no_hook(tmp_path: Path) -> None:
    python = hook_free_python(tmp_path / "venv")
    code = ("import sys, attrs, click, afp_dsl.cli; "
            "print(sys.prefix != sys.base_prefix, 'certifi' in sys.modules, "
            "'_distutils_hack' in sys.modules)")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False", "False"]
    assert Path(subprocess.run([python, "-c", "import afp_dsl; print(afp_dsl.__file__)"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
                ).resolve().is_relative_to(ROOT)
