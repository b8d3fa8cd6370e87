"""`python -m bench` refuses bad arguments with a message naming the fix, before any benchmark
runs (a full run takes minutes), and leaves the report and page as they were."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402


def _refused(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        bench_main.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("usage: python -m bench"), err
    return err.strip().splitlines()[-1]


@pytest.fixture
def never_runs(monkeypatch):
    def run_one(*_a, **_k):
        raise AssertionError("a benchmark ran before the arguments were settled")
    monkeypatch.setattr(bench_main, "run_one", run_one)


@pytest.mark.parametrize("reps", ["0", "-3", "x", "1.5"])
def test_repetitions_are_a_whole_number_of_one_or_more(capsys, tmp_path, never_runs, reps) -> None:
    last = _refused(capsys, ["--reps", reps, "--out", str(tmp_path)])
    assert f"argument --reps: expected a whole number of 1 or more, got '{reps}'" in last


def test_a_source_folder_without_the_package_is_refused(capsys, tmp_path, never_runs) -> None:
    last = _refused(capsys, ["--src", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    assert "holds no afp_dsl package" in last and "give the folder that contains afp_dsl/" in last


@pytest.mark.parametrize("flag", ["--baseline", "--also", "--render"])
@pytest.mark.parametrize("content, says", [
    (None, "cannot read"),
    ("not json", "is not a report.json written by `python -m bench`"),
    ("[1, 2]", 'it has no "benchmarks" object'),
    ('{"benchmarks": 3}', 'it has no "benchmarks" object'),
])
def test_a_report_to_read_is_read_first(capsys, tmp_path, never_runs, flag, content, says) -> None:
    path = tmp_path / "report.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    last = _refused(capsys, [flag, str(path), "--out", str(tmp_path / "out")])
    assert says in last and str(path) in last
    assert not (tmp_path / "out" / "performance.md").exists()


def test_an_output_folder_that_cannot_be_made_is_refused(capsys, tmp_path, never_runs) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    last = _refused(capsys, ["--out", str(blocker / "sub")])
    assert last.startswith("python -m bench: error: --out: cannot create ")


def test_a_malformed_report_is_named_and_kept(capsys, tmp_path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"benchmarks": {"compile": {}}}), encoding="utf-8")
    assert bench_main.main(["--render", str(path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cannot write the page: a report's content is not as `python -m bench` writes it" in err
    assert "KeyError: 'rows'" in err and "Traceback" not in err
    assert json.loads(path.read_text(encoding="utf-8")) == {"benchmarks": {"compile": {}}}
    assert not (tmp_path / "performance.md").exists()


def test_a_good_report_renders(capsys, tmp_path) -> None:
    report = json.loads((ROOT / "bench" / "report.json").read_text(encoding="utf-8"))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert bench_main.main(["--render", str(path), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "performance.md").read_text(encoding="utf-8").startswith("# Performance")
