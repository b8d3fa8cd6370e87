"""`python -m bench.instructions` counts instructions under callgrind, and says so when it cannot.

No figure is asserted beyond "a positive count": the tool exists to compare two trees.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench.instructions", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed (.ci/valgrind.sh installs it)")
def test_quick_count_of_one_loop_iteration(tmp_path: Path) -> None:
    out = tmp_path / "i.json"
    proc = _run("--quick", "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    [row] = result["rows"]
    assert row["workload"] == "loop:both" and row["units_per_rep"] == 3
    assert row["instructions"] > 10_000  # one iteration runs the whole pipeline
    assert "instructions per iteration" in proc.stderr


def test_without_valgrind_the_result_says_why(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # no valgrind on this PATH
    proc = _run("--quick", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valgrind is not installed" in json.loads(proc.stdout)["skipped"]


@pytest.mark.parametrize("workload, message", [("loop:nope", "unknown workload `loop:nope`"),
                                               ("walk:1", "unknown workload `walk:1`")])
def test_unknown_workload_is_named(workload: str, message: str) -> None:
    proc = _run("--child", workload, "1", "--quick")
    assert proc.returncode != 0 and message in proc.stderr


@pytest.mark.parametrize("workload", ["loop:redaction", "compile:abc", "compile:0", "compile:-5", "walk"])
def test_a_bad_workload_is_refused_before_any_count(workload: str, tmp_path: Path) -> None:
    """Checked in the parent, valgrind or not: a child's last words would be valgrind's summary."""
    for env in (None, dict(os.environ, PATH=str(tmp_path))):  # with valgrind (if any), without
        proc = _run(workload, env=env)
        assert proc.returncode == 1 and f"unknown workload `{workload}`" in proc.stderr
        assert "loop:CONFIG (CONFIG one of bare, redact, policies, both)" in proc.stderr
