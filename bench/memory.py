"""Benchmark: peak memory of one 200-iteration run, and memory held by 1,000 retained runs.

Both with the `bench.loop` workload and full trace capture, measured with `tracemalloc` (Python
allocations only): the peak while one N = 200 run executes, and the memory still held after
1,000 runs of 10 iterations whose results (answer, trace, report) are all kept in a list.
Run: `python -m bench.memory [--quick] [--json OUT]`.
"""
from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, write_result  # noqa: E402
from bench.loop import afp_runner  # noqa: E402


def peak_of_one_run(n: int) -> dict:
    once = afp_runner(n)
    once()  # warm caches (compiled regexes, schema validators) outside the measurement
    gc.collect()
    tracemalloc.start()
    result = once()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"n": n, "events": len(result.trace), "peak_kib": peak / 1024, "retained_kib": current / 1024}


def retained_runs(runs: int, n: int) -> dict:
    once = afp_runner(n)
    once()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [once() for _ in range(runs)]
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    held = current - base
    events = sum(len(r.trace) for r in kept)
    return {"runs": runs, "iterations_per_run": n, "events": events, "held_mib": held / 2**20,
            "peak_mib": (peak - base) / 2**20, "kib_per_run": held / 1024 / runs,
            "bytes_per_event": held / events}


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    n, runs = (20, 20) if args.quick else (200, 1000)
    result = {"benchmark": "memory", "one_run": peak_of_one_run(n),
              "retained": retained_runs(runs, 10 if not args.quick else 3)}
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
