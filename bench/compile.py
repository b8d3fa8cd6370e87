"""Benchmark: `afp_dsl.check()` + Mermaid export on generated specs of 100 to 10,000 skills.

Each skill has a tool, a description, a body and routes in a chain, plus a cross edge every 7th
skill. Reports per size the median time of check + draw (and each part), lines per second and
the growth exponent between sizes; at one size, the time of each front-end stage (including
the Lark parser alone, the normative path the fast path must match).
Run: `python -m bench.compile [SIZES...] [--reps N] [--quick] [--json OUT]`.
"""
from __future__ import annotations

import gc
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, repeat, write_result  # noqa: E402

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
    text = generate(n)
    path = folder / f"bench_{n}.afp"
    path.write_text(text, encoding="utf-8")
    warnings = check_and_draw(path)[-1]  # warm-up, and a sanity check
    runs = [check_and_draw(path) for _ in range(max(1, reps))]
    med = [statistics.median(r[k] for r in runs) for k in range(4)]
    total = statistics.median(r[0] + r[1] for r in runs)
    total_cpu = statistics.median(r[2] + r[3] for r in runs)
    lines = text.count("\n")
    return {"skills": n, "lines": lines, "warnings": warnings, "reps": len(runs),
            "total_s": total, "total_cpu_s": total_cpu, "check_s": med[0], "draw_s": med[1],
            "lines_per_s": lines / total, "lines_per_cpu_s": lines / total_cpu}


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
            "parse_fast_path": (lambda: parse_tree(text)) if parse_tree else None,
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
    ap.add_argument("sizes", nargs="*", type=int)
    args = ap.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    reps = args.reps or (1 if args.quick else 5)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            rows.append(measure(n, reps if n < 10000 else max(1, min(reps, 3)), Path(d)))
            print(f"compile: {n} skills: {rows[-1]['total_s']:.3f} s", file=sys.stderr)
    stage_size = 3000 if 3000 in sizes else sizes[-1]
    result = {"benchmark": "compile", "sizes": list(sizes), "reps": reps, "rows": rows,
              "growth": growth(rows), "growth_cpu": growth(rows, "total_cpu_s"),
              "exponent_1000_10000": exponent(rows, 1000, 10000),
              "exponent_1000_10000_cpu": exponent(rows, 1000, 10000, "total_cpu_s"),
              "stages": stages(stage_size, reps)}
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
