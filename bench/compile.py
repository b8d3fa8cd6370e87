"""Benchmark: `afp_dsl.check()` on generated specs of 100, 1,000 and 3,000 skills (and more on request).

Each skill has a tool, a description, a body and routes in a chain, plus a cross edge every 7th
skill. Prints the median time per size, lines per second and the growth exponent between sizes.
Not a test: run `python bench/compile.py [SIZES...] [--reps N] [--json OUT]`.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path


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


def measure(n: int, reps: int) -> dict:
    import afp_dsl
    text = generate(n)
    lines = text.count("\n")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"bench_{n}.afp"
        path.write_text(text)
        diags = afp_dsl.check(path)  # warm-up, and a sanity check
        errors = [x for x in diags if x.is_error]
        if errors:
            raise SystemExit(f"generated spec has errors: {errors[0].message}")
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            afp_dsl.check(path)
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return {"skills": n, "lines": lines, "median_s": med, "lines_per_s": lines / med, "reps": reps,
            "warnings": len(diags)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[100, 1000, 3000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args(argv)
    rows = [measure(n, args.reps) for n in args.sizes]
    print(f"{'skills':>8} {'lines':>8} {'median s':>10} {'lines/s':>10} {'growth':>7}")
    for prev, row in zip([None] + rows, rows):
        growth = ""
        if prev is not None:
            growth = f"{math.log(row['median_s'] / prev['median_s']) / math.log(row['skills'] / prev['skills']):.2f}"
            row["growth_exponent"] = float(growth)
        print(f"{row['skills']:>8} {row['lines']:>8} {row['median_s']:>10.3f} {row['lines_per_s']:>10.0f} {growth:>7}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"python": sys.version.split()[0], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
