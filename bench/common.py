"""Shared helpers of the benchmarks: timing, medians, the JSON result of one benchmark process.

Role:       every `bench/<name>.py` runs as its own process (`python -m bench.<name> --json OUT`)
            and writes one JSON object through `write_result`; `bench/__main__` collects them.
Invariants: times are measured twice, as wall time (`perf_counter`) and as this process's CPU
            time (`process_time`, robust to other load on a shared machine); figures are medians
            of several repetitions after a warm-up.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

def positive_int(text: str) -> int:
    """argparse type: a whole number of 1 or more (a count of repetitions)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return value


def parser(doc: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI smoke run)")
    ap.add_argument("--json", dest="json_out", help="write the result object here")
    ap.add_argument("--reps", type=positive_int, help="repetitions (default depends on the benchmark)")
    return ap


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def repeat(fn: Callable[[], Any], reps: int, warmup: int = 1) -> dict[str, float]:
    """Median wall and CPU seconds of `reps` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(max(1, reps)):
        w, c, _ = timed(fn)
        walls.append(w)
        cpus.append(c)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "reps": len(walls),
            "wall_min_s": min(walls)}


def write_result(path: str | None, result: dict[str, Any]) -> None:
    text = json.dumps(result, indent=1, sort_keys=False)
    if path:
        Path(path).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
