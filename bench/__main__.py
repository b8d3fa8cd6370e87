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
from bench.common import positive_int  # noqa: E402
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


def read_report(path: Path) -> dict:
    """An earlier report.json, or ValueError naming what is wrong with it."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a report.json written by `python -m bench` ({e})") from None
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), dict):
        raise ValueError(f"{path} is not a report.json written by `python -m bench` "
                         "(it has no \"benchmarks\" object)")
    return report


def _writable_folder(folder: Path) -> str | None:
    """Why `folder` cannot take the report (created if missing), or None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {folder}: {e.strerror or e}"
    if not os.access(folder, os.W_OK):
        return f"cannot write in {folder}"
    return None


def _settle(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse bad arguments before any benchmark runs (a full run takes minutes): the reports to
    read are read now, the folders to write are tried now."""
    if args.src is not None and not (args.src / "afp_dsl" / "__init__.py").is_file():
        ap.error(f"--src: {args.src} holds no afp_dsl package (no {args.src / 'afp_dsl' / '__init__.py'}); "
                 "give the folder that contains afp_dsl/")
    try:
        args.baseline_report = read_report(args.baseline) if args.baseline else None
        args.also_reports = [read_report(p) for p in args.also]
        args.render_report = read_report(args.render) if args.render else None
    except ValueError as e:
        ap.error(str(e))
    folders = [Path(args.out)] if args.out else [ROOT / "bench", ROOT / "docs"]
    for folder in folders:
        problem = _writable_folder(folder)
        if problem:
            ap.error(f"--out: {problem}" if args.out else problem)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI smoke run)")
    ap.add_argument("--out", help="folder for report.json and performance.md "
                    "(default: bench/report.json and docs/performance.md)")
    ap.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    ap.add_argument("--src", type=Path, help="benchmark the afp_dsl package in this folder")
    ap.add_argument("--label", default="", help="a name for this run in the report")
    ap.add_argument("--baseline", type=Path, help="an earlier report.json for a before → after table")
    ap.add_argument("--also", type=Path, nargs="+", default=[], metavar="REPORT",
                    help="more report.json files shown as extra columns of the before → after table")
    ap.add_argument("--reps", type=positive_int, help="repetitions for every benchmark (default: each its own)")
    ap.add_argument("--render", type=Path, metavar="REPORT", help="run nothing: rewrite the page from "
                    "this report.json (with --baseline and bench/notes.md)")
    args = ap.parse_args(argv)
    _settle(ap, args)
    if args.render_report is not None:
        return write_page(args.render_report, args, args.render)
    report = {"label": args.label, "source": str(args.src or ROOT), "machine": machine(),
              "python": platform.python_version(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "quick": args.quick, "benchmarks": {}}
    try:
        for name in args.only or BENCHMARKS:
            report["benchmarks"][name] = run_one(name, args.quick, args.src, args.reps)
    except KeyboardInterrupt:
        print("bench: interrupted; the report and page were left as they were", file=sys.stderr)
        return 130
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
    notes_file = ROOT / "bench" / "notes.md"
    notes = notes_file.read_text(encoding="utf-8") if notes_file.is_file() else ""
    try:
        page, shown = render(report, args.baseline_report, notes, args.also_reports), (
            report.get("goals") or goals(report))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        # (a report.json edited by hand, or from another version: name it, no traceback)
        print(f"bench: cannot write the page: a report's content is not as `python -m bench` writes "
              f"it ({type(e).__name__}: {e}); {json_path} is kept", file=sys.stderr)
        return 2
    md_path.write_text(page, encoding="utf-8")
    for g in shown:
        mark = {True: "met", False: "MISSED", None: "n/a"}[g["met"]]
        value = "–" if g["value"] is None else g.get("shown") or f"{g['value']:.2f}"
        print(f"{mark:>7}  {g['goal']}: {value} (goal {g['target']})", file=sys.stderr)
    print(f"bench: wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
