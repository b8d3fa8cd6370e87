"""`bench/fuzz.py` runs each of its Hypothesis targets (a few examples, a fixed seed), and a
failing input is saved for tests/test_bad_input.py to replay."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("target", ["roundtrip", "mutate", "text", "fmt"])
def test_each_target_runs(target: str) -> None:
    out = subprocess.run([sys.executable, "bench/fuzz.py", target, "--examples", "15", "--seed", "3"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith(f"{target:9} 15 examples in ") and out.stdout.rstrip().endswith(": ok")


def test_a_failing_fmt_input_is_saved(tmp_path: Path, monkeypatch) -> None:
    sys.path[:0] = [str(ROOT / "bench")]
    try:
        import fuzz
        import test_fmt_properties
    finally:
        sys.path.remove(str(ROOT / "bench"))
    monkeypatch.setattr(fuzz, "CORPUS", tmp_path)

    def broken(text: str) -> None:
        raise AssertionError("not idempotent")
    monkeypatch.setattr(test_fmt_properties, "assert_formatted_well", broken)
    with pytest.raises(AssertionError):
        fuzz.fmt_property("agent a {}")
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1 and saved[0].name.startswith("fmt-") and saved[0].read_text() == "agent a {}"
