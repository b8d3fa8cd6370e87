"""The benchmark suite runs end to end in quick mode (tiny sizes, one repetition).

Proves `python -m bench` works and its report holds every benchmark; no timing assertions
(figures from a quick run on a CI machine mean nothing).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.__main__ import BENCHMARKS  # noqa: E402
from bench.report import GOALS, render  # noqa: E402


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return report, (out / "performance.md").read_text(encoding="utf-8")


def test_every_benchmark_ran_without_error(quick_report: tuple[dict, str]) -> None:
    report, _ = quick_report
    assert set(report["benchmarks"]) == set(BENCHMARKS)
    for name, result in report["benchmarks"].items():
        assert "error" not in result, (name, result.get("error"))
        assert result["benchmark"] == name


def test_report_has_the_figures_the_goals_read(quick_report: tuple[dict, str]) -> None:
    report, _ = quick_report
    b = report["benchmarks"]
    assert report["quick"] is True and report["python"] and report["date"] and report["machine"]["cores"]
    assert [r["skills"] for r in b["compile"]["rows"]] == b["compile"]["sizes"]
    assert all(r["total_s"] > 0 and r["lines"] > 0 for r in b["compile"]["rows"])
    assert {"parse_fast_path_s", "parse_lark_only_s", "lower_s", "checks_s", "mermaid_s"} <= set(b["compile"]["stages"])
    assert b["cli_start"]["ratio"] > 0 and b["cli_start"]["spec_lines"] == 50
    assert b["cli_start"]["ratio"] == max(b["cli_start"]["ratio_as_started"], b["cli_start"]["no_hooks"]["ratio"])
    for row in b["loop"]["rows"]:
        assert row["afp"]["us_per_iter"] > 0 and row["events"] > row["n"]
    assert b["trace_overhead"]["events"]["guarded"] > b["trace_overhead"]["events"]["bare"]
    workers = b["trace_overhead"]["workers"]  # (the figure is the median of its workers')
    assert workers and b["trace_overhead"]["overhead_pct"] in [w["overhead_pct"] for w in workers]
    assert b["memory"]["retained"]["runs"] > 0 and b["memory"]["one_run"]["peak_kib"] > 0
    assert len(report["goals"]) == len(GOALS)
    assert all(g["met"] is None for g in report["goals"])  # quick figures are not judged


def test_markdown_page_lists_every_section(quick_report: tuple[dict, str]) -> None:
    report, page = quick_report
    notes = ROOT / "bench" / "notes.md"
    assert page == render(report, None, notes.read_text(encoding="utf-8") if notes.is_file() else "")
    for title in ("## Goals", "## Compile", "## Cold CLI", "## Tool-calling loop", "## Trace overhead", "## Memory"):
        assert title in page
    assert "quick mode" in page


def test_a_failed_benchmark_is_shown_not_hidden() -> None:
    page = render({"benchmarks": {"loop": {"error": "boom"}}, "quick": False})
    assert "failed: `boom`" in page
    assert "not run" in page  # the benchmarks absent from the report


def test_the_growth_goal_reads_the_fastest_runs_and_falls_back_to_the_medians() -> None:
    """The exponent between each size's fastest runs is the goal's figure; a report written
    before it existed is still judged, on the medians' exponent."""
    growth = next(g for g in GOALS if g[1].startswith("growth exponent"))
    read = growth[2]
    assert read({"exponent_1000_10000": 1.2, "exponent_1000_10000_fastest": 1.05}) == 1.05
    assert read({"exponent_1000_10000": 1.2}) == 1.2
    from bench.compile import exponent
    rows = [{"skills": 1000, "total_s": 0.5, "min_total_s": 0.3},
            {"skills": 10000, "total_s": 4.0, "min_total_s": 3.3}]
    assert round(exponent(rows, 1000, 10000, "min_total_s"), 3) == 1.041
    assert round(exponent(rows, 1000, 10000), 3) == 0.903


def test_each_cli_row_shows_its_own_ratio() -> None:
    """The as-started `afpc check` row shows the as-started ratio; the goal's (the larger of the
    two) is stated once, below the table."""
    run = {"median_s": 0.1, "min_s": 0.1, "reps": 3}
    cli = {"spec_lines": 50, "python_c_pass": {**run, "median_s": 0.04}, "afpc_check": run,
           "ratio_as_started": 2.5, "ratio": 8.0,
           "no_hooks": {"hooks": ["x.pth"], "python_c_pass": {**run, "median_s": 0.0125},
                        "afpc_check": run, "ratio": 8.0}}
    page = render({"benchmarks": {"cli_start": cli}, "quick": False})
    rows = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in page.splitlines()
            if line.startswith("| `afpc check`")}
    assert rows == {"`afpc check` (50-line spec)": "2.50", "`afpc check`, no start-up hooks": "8.00"}
    assert "Ratio: **8.00×**" in page
