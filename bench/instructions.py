"""Benchmark: instructions executed per unit of work, counted by valgrind's callgrind.

Wall time on a shared machine swings by 1.6× between minutes; an instruction count does not: the
same code, inputs and hash seed give the same count whatever else runs. This is the tool for
before/after comparisons of a change (`--src DIR` measures another copy of afp_dsl, as `python -m
bench --src` does). Each workload runs in a child under callgrind twice, with K1 and K2
repetitions; the difference over K2 - K1 is the count of one repetition, without start-up,
imports and set-up. Workloads: `loop:CONFIG` (one tool-calling iteration of `bench.loop`'s run at
N = 50; CONFIG is bare, redact, policies or both, the parts of `bench.trace_overhead`) and
`compile:SIZE` (one check + Mermaid draw of `bench.compile`'s SIZE-skill spec, warm).
Not part of `python -m bench` (about a minute per workload).
Run: `python -m bench.instructions [WORKLOAD ...] [--src DIR] [--quick] [--json OUT]`.
"""
from __future__ import annotations

import argparse
import compileall
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("loop:bare", "loop:both", "compile:1000")
QUICK = ("loop:both",)
LOOP_N, QUICK_N = 50, 3
# The collector while counting. `freeze` (default): after the warm-up, everything alive (the
# loaded program, the interpreter's modules) moves to the permanent generation, as a long-running
# host does with `gc.freeze()`: a full collection then scans only what the workload keeps, and
# its cost is counted, but one scan of the whole program landing in the window of one count and
# not the other no longer decides a comparison (one such scan costs about as much as a 50-iteration
# run). `off`: no collection at all, the work alone. `on`: as the interpreter starts.
GC_MODES = ("freeze", "off", "on")
_COLLECTED = re.compile(r"Collected : (\d+)")


def loop_spec(config: str, n: int) -> str:
    """The spec of `bench.loop` with the parts of `bench.trace_overhead` that `config` names."""
    from bench.loop import SPEC
    from bench.trace_overhead import GUARDED
    redact, _, policies = GUARDED.partition("policy screen_args")
    parts = {"bare": ([], ""), "redact": (["redact = [secrets]"], redact),
             "policies": (["policies = [screen_args, screen_any, screen_results]"],
                          "policy screen_args" + policies),
             "both": (["redact = [secrets]", "policies = [screen_args, screen_any, screen_results]"],
                      GUARDED)}
    if config not in parts:
        raise SystemExit(f"unknown loop configuration `{config}`: use one of {', '.join(parts)}")
    lines, decls = parts[config]
    extra = "".join(f"\n  {line}" for line in lines)
    return SPEC.format(limit=n + 1, extra=extra) + decls


LOOP_CONFIGS = ("bare", "redact", "policies", "both")


def check_workload(name: str) -> None:
    """Stop with a message naming the fix when `name` is no workload (before valgrind starts a
    child, whose last words would be valgrind's summary)."""
    kind, _, arg = name.partition(":")
    if kind == "loop" and arg in ("", *LOOP_CONFIGS):
        return
    if kind == "compile" and (arg == "" or (arg.isascii() and arg.isdigit() and int(arg) > 0)):
        return
    raise SystemExit(f"unknown workload `{name}`: use loop:CONFIG (CONFIG one of "
                     f"{', '.join(LOOP_CONFIGS)}) or compile:SIZE (SIZE a whole number of skills, "
                     "e.g. compile:1000)")


def workload(name: str, quick: bool) -> tuple[Callable[[], Any], float]:
    """(one repetition, units per repetition) of a workload named `kind:arg`."""
    check_workload(name)
    kind, _, arg = name.partition(":")
    if kind == "loop":
        from bench.loop import afp_runner
        n = QUICK_N if quick else LOOP_N
        return afp_runner(n, loop_spec(arg or "both", n)), n
    if kind == "compile":
        from bench.compile import check_and_draw, generate
        size = int(arg or "1000")
        path = Path(tempfile.mkdtemp()) / f"bench_{size}.afp"
        path.write_text(generate(size), encoding="utf-8")
        return (lambda: check_and_draw(path)), 1
    raise AssertionError(name)  # (check_workload lets no other through)


def child(name: str, reps: int, quick: bool, gc_mode: str = "freeze") -> None:
    """The process callgrind watches: set up, warm up once, then `reps` repetitions."""
    once, _ = workload(name, quick)
    once()
    if gc_mode == "freeze":  # see GC_MODES
        gc.collect()
        gc.freeze()
    elif gc_mode == "off":
        gc.disable()
    for _ in range(reps):
        once()


def count(name: str, reps: int, quick: bool, env: dict, gc_mode: str = "freeze") -> int:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
           "bench.instructions", "--child", name, str(reps), "--gc", gc_mode] + (
               ["--quick"] if quick else [])
    with tempfile.TemporaryDirectory() as d:  # an empty folder first on sys.path (see __main__)
        proc = subprocess.run(cmd, env=env, cwd=d, capture_output=True, text=True, check=False)
    found = _COLLECTED.findall(proc.stderr)
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise SystemExit(f"instruction count of {name} failed: {tail[0]}")
    return int(found[-1])


def measure(name: str, quick: bool, env: dict, gc_mode: str = "freeze") -> dict:
    if quick:
        low, high = 1, 2
    else:  # a loop repetition is cheap beside start-up: many of them average out what varies
        low, high = (2, 22) if name.startswith("loop:") else (1, 2)
    units = (QUICK_N if quick else LOOP_N) if name.startswith("loop:") else 1
    a, b = count(name, low, quick, env, gc_mode), count(name, high, quick, env, gc_mode)
    if b <= a:  # the tree changed between the two children (bytecode written, a file edited)
        a, b = count(name, low, quick, env, gc_mode), count(name, high, quick, env, gc_mode)
        if b <= a:
            raise SystemExit(f"instruction count of {name}: {high} repetitions counted no more "
                             f"than {low} ({b:,} against {a:,}); is the tree being edited?")
    per_rep = (b - a) / (high - low)
    return {"workload": name, "units_per_rep": units, "instructions": round(per_rep / units),
            "reps": [low, high], "gc": gc_mode}


def child_env(src: str | None) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")
    paths = ([str(Path(src).resolve())] if src else []) + [str(ROOT)] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("workloads", nargs="*", help="loop:CONFIG or compile:SIZE (default: %s)" % " ".join(DEFAULT))
    ap.add_argument("--src", help="measure the afp_dsl package in this folder instead")
    ap.add_argument("--gc", choices=GC_MODES, default="freeze",
                    help="the collector while counting (default: freeze; see the module docstring)")
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "REPS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), args.quick, args.gc)
        return 0
    names = args.workloads or (QUICK if args.quick else DEFAULT)
    for name in names:
        check_workload(name)
    if shutil.which("valgrind") is None:
        write_result(args.json_out, {"benchmark": "instructions",
                                     "skipped": "valgrind is not installed (Debian: apt-get install valgrind)"})
        return 0
    env = child_env(args.src)
    # Both children load the package's bytecode, as an installed package does: without it (a
    # checkout run with PYTHONDONTWRITEBYTECODE=1) each compiles every module, and a .pyc written
    # between the two counts (by anyone) made the difference negative.
    for folder in env["PYTHONPATH"].split(os.pathsep)[:2]:
        if (Path(folder) / "afp_dsl").is_dir():
            compileall.compile_dir(str(Path(folder) / "afp_dsl"), quiet=1)
    rows = [measure(name, args.quick, env, args.gc) for name in names]
    for row in rows:
        print(f"{args.src or 'this tree'} {row['workload']}: {row['instructions']:,} instructions per "
              f"{'iteration' if row['workload'].startswith('loop') else 'run'}", file=sys.stderr)
    write_result(args.json_out, {"benchmark": "instructions", "src": args.src, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
