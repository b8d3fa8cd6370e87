"""`python -m bench`: run every benchmark, each in its own process, and write the report.

Writes a JSON report (machine, Python, date, every benchmark's result, the goals) and the
Markdown page docs/performance.md. `--quick` runs tiny sizes once (CI proves the suite works;
no figures to quote). `--src DIR` benchmarks the afp_dsl package found in DIR instead (for
before/after figures); `--baseline FILE` adds a before → after table from an earlier report.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.report import goals, render  # noqa: E402

BENCHMARKS = ("compile", "cli_start", "loop", "trace_overhead", "memory")


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu or platform.machine(), "cores": os.cpu_count(), "platform": platform.platform(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def run_one(name: str, quick: bool, src: Path | None, reps: int | None = None) -> dict:
    env = dict(os.environ)
    paths = ([str(src.resolve())] if src else []) + [str(ROOT)] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / f"{name}.json"
        cmd = [sys.executable, "-m", f"bench.{name}", "--json", str(out)] + (["--quick"] if quick else []) + (
            ["--reps", str(reps)] if reps else [])
        print(f"bench: running {name} ...", file=sys.stderr, flush=True)
        # run from an empty folder: `python -m` puts the working folder first on sys.path, which
        # must not shadow the afp_dsl being measured
        proc = subprocess.run(cmd, env=env, cwd=d, stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            return {"error": tail[0]}
        return json.loads(out.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI smoke run)")
    ap.add_argument("--out", help="folder for report.json and performance.md "
                    "(default: bench/report.json and docs/performance.md)")
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    ap.add_argument("--src", type=Path, help="benchmark the afp_dsl package in this folder")
    ap.add_argument("--label", default="", help="a name for this run in the report")
    ap.add_argument("--baseline", type=Path, help="an earlier report.json for a before → after table")
    ap.add_argument("--also", type=Path, nargs="+", default=[], metavar="REPORT",
                    help="more report.json files shown as extra columns of the before → after table")
    ap.add_argument("--reps", type=int, help="repetitions for every benchmark (default: each its own)")
    ap.add_argument("--render", type=Path, metavar="REPORT", help="run nothing: rewrite the page from "
                    "this report.json (with --baseline and bench/notes.md)")
    args = ap.parse_args(argv)
    if args.render:
        return write_page(json.loads(args.render.read_text(encoding="utf-8")), args, args.render)
    report = {"label": args.label, "source": str(args.src or ROOT), "machine": machine(),
              "python": platform.python_version(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "quick": args.quick, "benchmarks": {}}
    for name in args.only or BENCHMARKS:
        report["benchmarks"][name] = run_one(name, args.quick, args.src, args.reps)
    report["goals"] = goals(report)
    json_path = (Path(args.out) / "report.json") if args.out else ROOT / "bench" / "report.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    write_page(report, args, json_path)
    failed = [k for k, v in report["benchmarks"].items() if "error" in v]
    return 1 if failed else 0


def write_page(report: dict, args: argparse.Namespace, json_path: Path) -> int:
    md_path = (Path(args.out) / "performance.md") if args.out else ROOT / "docs" / "performance.md"
    md_path.parent.mkdir(parents=True, exist_ok=True)
    baseline = json.loads(args.baseline.read_text(encoding="utf-8")) if args.baseline else None
    notes_file = ROOT / "bench" / "notes.md"
    notes = notes_file.read_text(encoding="utf-8") if notes_file.is_file() else ""
    also = [json.loads(p.read_text(encoding="utf-8")) for p in args.also]
    md_path.write_text(render(report, baseline, notes, also), encoding="utf-8")
    for g in report["goals"]:
        mark = {True: "met", False: "MISSED", None: "n/a"}[g["met"]]
        value = "–" if g["value"] is None else g.get("shown") or f"{g['value']:.2f}"
        print(f"{mark:>7}  {g['goal']}: {value} (goal {g['target']})", file=sys.stderr)
    print(f"bench: wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
