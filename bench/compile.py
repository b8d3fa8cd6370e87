"""Benchmark: `afp_dsl.check()` + Mermaid export on generated specs of 100 to 10,000 skills.

Each skill has a tool, a description, a body and routes in a chain, plus a cross edge every 7th
skill. Reports per size the median time of check + draw (and each part), lines per second and
the growth exponent between sizes; at one size, the time of each front-end stage (including
the Lark parser alone, the normative path the fast path must match).

Every size is measured in fresh processes (`--one N`: a warm-up and a few repetitions), in
rounds that alternate the sizes: a size measured in a process that has just checked a larger
spec runs up to 1.5× slower (the heap it inherits), and a noisy minute on a shared machine
should hit every size alike, not the one that happened to run then.
Run: `python -m bench.compile [SIZES...] [--reps N] [--rounds R] [--quick] [--json OUT]`.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, positive_int, repeat, write_result  # noqa: E402

SIZES = (100, 1000, 3000, 10000)
QUICK_SIZES = (20, 60)


def generate(n: int) -> str:
    """A spec of `n` skills, each with its own tool, chained, with a cross edge every 7th skill."""
    out = ['agent bench {', '  system = "You route work."', '  graph = flow', '}', '']
    for i in range(n):
        out += [f'tool t{i} {{', f'  description = "Tool number {i}."',
                '  input { id: string(min_length: 1) "An id", count?: integer(min: 0) }',
                '  output { status: "ok" | "fail", score?: number }', '}',
                f'skill s{i} {{', f'  description = "Skill number {i}."',
                f'  body = "Handle step {i} of the work, then move on."', f'  tools = [t{i}]', '}']
    out.append('graph flow {')
    out.append('  entry s0')
    for i in range(n - 1):
        out.append(f'  route s{i} -> s{i + 1} on t{i} when result.status == "ok"')
        if i % 7 == 0 and i + 7 < n:
            out.append(f'  route s{i} -> s{i + 7} on t{i} when result.score > 0.5 and result.status == "fail"')
    out.append('}')
    return "\n".join(out) + "\n"


def check_and_draw(path: Path) -> tuple[float, float, float, float, int]:
    """What the benchmark times: load and check the spec from its file, then draw it.
    Returns (check wall, draw wall, check CPU, draw CPU, warnings)."""
    from afp_dsl import api, graph_export
    w0, c0 = time.perf_counter(), time.process_time()
    program, diags = api.analyse(path)
    w1, c1 = time.perf_counter(), time.process_time()
    errors = [d for d in diags if d.is_error]
    if errors or program is None:
        raise SystemExit(f"generated spec has errors: {errors[0].message if errors else 'unreadable'}")
    graph_export.to_mermaid(program)
    w2, c2 = time.perf_counter(), time.process_time()
    return w1 - w0, w2 - w1, c1 - c0, c2 - c1, len(diags)


def measure(n: int, reps: int, folder: Path) -> dict:
    """This process: a warm-up, then `reps` timed checks of the `n`-skill spec (raw samples)."""
    text = generate(n)
    path = folder / f"bench_{n}.afp"
    path.write_text(text, encoding="utf-8")
    warnings = check_and_draw(path)[-1]  # warm-up, and a sanity check
    runs = [check_and_draw(path) for _ in range(max(1, reps))]
    return {"skills": n, "lines": text.count("\n"), "warnings": warnings, "samples": runs}


def measure_fresh(n: int, reps: int) -> dict:
    """`measure` in a fresh process (this file with `--one`)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "one.json"
        cmd = [sys.executable, "-m", "bench.compile", "--one", str(n), "--reps", str(reps),
               "--json", str(out)]
        root = str(Path(__file__).resolve().parent.parent)  # `bench` itself; the afp_dsl measured
        env = dict(os.environ)  # comes first on the caller's PYTHONPATH (`python -m bench --src`)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), root) if p)
        proc = subprocess.run(cmd, cwd=d, env=env, stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            raise SystemExit(f"compile benchmark of {n} skills failed: {tail[0]}")
        return json.loads(out.read_text(encoding="utf-8"))


def summarize(n: int, parts: list[dict]) -> dict:
    """One row from the samples of every process that measured size `n`."""
    runs = [r for p in parts for r in p["samples"]]
    med = [statistics.median(r[k] for r in runs) for k in range(4)]
    total = statistics.median(r[0] + r[1] for r in runs)
    total_cpu = statistics.median(r[2] + r[3] for r in runs)
    lines = parts[0]["lines"]
    return {"skills": n, "lines": lines, "warnings": parts[0]["warnings"], "reps": len(runs),
            "processes": len(parts), "total_s": total, "total_cpu_s": total_cpu,
            "min_total_s": min(r[0] + r[1] for r in runs), "check_s": med[0], "draw_s": med[1],
            "lines_per_s": lines / total, "lines_per_cpu_s": lines / total_cpu}


def fast_parse(parse_tree, text: str):
    """The fast path as `parser.parse` runs it: given the file's name, it may lower a tool's schema
    blocks as it reads them (a tree from before that takes the text alone)."""
    try:
        return parse_tree(text, "bench.afp")
    except TypeError:  # an older tree (--src)
        return parse_tree(text)


def stages(n: int, reps: int) -> dict:
    """Median seconds of each front-end stage on the `n`-skill spec (garbage collector paused as
    `afp_dsl.check` does)."""
    from afp_dsl import analysis, checks, graph_export, ir, lower, parser as afp_parser
    from afp_dsl.source import SourceFile
    try:
        from afp_dsl.fastparse import parse_tree
    except ImportError:  # an older tree (--src): Lark only
        parse_tree = None
    text = generate(n)
    src = SourceFile.of("bench.afp", text)
    out: dict = {"skills": n}
    gc.disable()
    try:
        tree = afp_parser.parse(src).tree
        module, _ = lower.lower_module(tree, "bench.afp", text, lambda rel: None)
        if parse_tree is not None:  # lower what the Lark parser builds too, as `lower` may see either
            assert parse_tree(text) is not None, "the generated spec should take the fast path"
        program = ir.Program(root="bench.afp", modules=(module,))
        runs = {
            "source_table": lambda: SourceFile.of("bench.afp", text),
            "parse_fast_path": (lambda: fast_parse(parse_tree, text)) if parse_tree else None,
            "parse_lark_only": lambda: afp_parser._parser().parse(text),
            "lower": lambda: lower.lower_module(tree, "bench.afp", text, lambda rel: None),
            "checks": lambda: checks.run_checks(analysis.Analysis(program)),
            "mermaid": lambda: graph_export.to_mermaid(program),
        }
        for name, fn in runs.items():
            if fn is None:
                continue
            r = repeat(fn, reps if name != "parse_lark_only" else max(1, min(reps, 3)))
            out[name + "_s"] = r["wall_s"]
            out[name + "_cpu_s"] = r["cpu_s"]
    finally:
        gc.enable()
    return out


def growth(rows: list[dict], key: str = "total_s") -> list[dict]:
    """Growth exponent k in time ∝ size^k between consecutive sizes (and first-to-last)."""
    pairs = list(zip(rows, rows[1:]))
    out = [{"from": a["skills"], "to": b["skills"],
            "exponent": math.log(b[key] / a[key]) / math.log(b["skills"] / a["skills"])} for a, b in pairs]
    return out


def exponent(rows: list[dict], lo: int, hi: int, key: str = "total_s") -> float | None:
    by = {r["skills"]: r for r in rows}
    if lo not in by or hi not in by:
        return None
    return math.log(by[hi][key] / by[lo][key]) / math.log(hi / lo)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("sizes", nargs="*", type=positive_int)
    ap.add_argument("--rounds", type=positive_int, help="fresh processes per size (default 3; 1 with --quick)")
    ap.add_argument("--one", type=int, metavar="N", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:  # a child of `measure_fresh`
        with tempfile.TemporaryDirectory() as d:
            write_result(args.json_out, measure(args.one, args.reps or 1, Path(d)))
        return 0
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    reps = args.reps or (1 if args.quick else 2)
    rounds = args.rounds or (1 if args.quick else 3)
    parts: dict[int, list[dict]] = {n: [] for n in sizes}
    for r in range(rounds):  # the sizes alternate, each in its own process
        for n in sizes:
            parts[n].append(measure_fresh(n, reps))
            last = parts[n][-1]["samples"][-1]
            print(f"compile: {n} skills, round {r + 1}: {last[0] + last[1]:.3f} s", file=sys.stderr)
    rows = [summarize(n, parts[n]) for n in sizes]
    stage_size = 3000 if 3000 in sizes else sizes[-1]
    result = {"benchmark": "compile", "sizes": list(sizes), "reps": reps, "rounds": rounds,
              "rows": rows, "growth": growth(rows), "growth_cpu": growth(rows, "total_cpu_s"),
              "exponent_1000_10000": exponent(rows, 1000, 10000),
              # the goal's figure: from each size's fastest run (see `bench/report.py`)
              "exponent_1000_10000_fastest": exponent(rows, 1000, 10000, "min_total_s"),
              "exponent_1000_10000_cpu": exponent(rows, 1000, 10000, "total_cpu_s"),
              "stages": stages(stage_size, reps if args.quick else max(reps, 3))}
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
