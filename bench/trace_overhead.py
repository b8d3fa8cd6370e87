"""Benchmark: cost of redaction rules plus a three-link policy chain on the tool-calling loop.

The `bench.loop` workload at N = 50, run twice in the same process, interleaved: bare, and with
a `redact` rule (keys and patterns, applied to every recorded event) and three policies (a
`before echo`, a `before *` and an `after echo` rule block) attached to the agent. Reports µs
per iteration of both and the overhead in percent.
The measurement runs in several worker processes (`--workers`), each interleaving its own
repetitions, and the figures are the medians over the workers: a process's memory layout (where
its objects land, its string hash seed) moves both timings and their ratio by a point or two
either way, a spread the repetitions inside one process cannot average out (pyperf spawns worker
processes for the same reason). Each worker's figures are kept in `workers`.
Run: `python -m bench.trace_overhead [--quick] [--reps N] [--workers K] [--json OUT]`.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, positive_int, write_result  # noqa: E402
from bench.loop import SPEC, afp_runner  # noqa: E402

GUARDED = """
redact secrets {
  keys = ["password", "api_key", "token"]
  patterns = [/sk-[A-Za-z0-9]{12,}/, /\\b\\d{3}-\\d{2}-\\d{4}\\b/]
}
policy screen_args {
  before echo {
    deny when args.word == "forbidden" because "That word is not allowed."
    allow when args.word matches /^w[0-9]+$/
  }
}
policy screen_any {
  before * {
    deny when args.word matches /drop\\s+table/i because "No SQL in arguments."
  }
}
policy screen_results {
  after echo {
    deny when result mentions "secret-leak" because "The result leaks a secret."
  }
}
"""
EXTRA = "\n  redact = [secrets]\n  policies = [screen_args, screen_any, screen_results]"


def measure(n: int, reps: int) -> dict:
    """One process's figures: `reps` interleaved rounds of a bare and a guarded run."""
    bare = afp_runner(n, SPEC.format(limit=n + 1, extra=""))
    guarded = afp_runner(n, SPEC.format(limit=n + 1, extra=EXTRA) + GUARDED)
    events = {"bare": len(bare().trace), "guarded": len(guarded().trace)}
    times: dict[str, list[float]] = {"bare": [], "guarded": []}
    cpu: dict[str, list[float]] = {"bare": [], "guarded": []}
    for _ in range(reps):  # interleaved, so drifting load hits both alike
        for name, once in (("bare", bare), ("guarded", guarded)):
            w0, c0 = time.perf_counter(), time.process_time()
            once()
            times[name].append((time.perf_counter() - w0) / n * 1e6)
            cpu[name].append((time.process_time() - c0) / n * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {"events": events, "bare_us_per_iter": med["bare"], "guarded_us_per_iter": med["guarded"],
            "bare_cpu_us_per_iter": med_cpu["bare"], "guarded_cpu_us_per_iter": med_cpu["guarded"],
            "overhead_pct": (med["guarded"] / med["bare"] - 1) * 100,
            "overhead_cpu_pct": (med_cpu["guarded"] / med_cpu["bare"] - 1) * 100}


def _worker(n: int, reps: int) -> dict:
    """`measure` in a fresh process (same interpreter, environment and import path)."""
    import afp_dsl
    package = str(Path(afp_dsl.__file__).resolve().parent)
    code = ("import json, sys, afp_dsl; from bench.trace_overhead import measure; "
            f"json.dump({{**measure({n}, {reps}), 'package': afp_dsl.__path__[0]}}, sys.stdout)")
    env = dict(os.environ)  # (the package measured here, then this benchmark's folder)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(package).parent), str(Path(__file__).resolve().parent.parent)]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"trace overhead worker exited {proc.returncode}: {proc.stderr[-800:]}")
    out = json.loads(proc.stdout)
    if str(Path(out.pop("package")).resolve()) != package:
        raise SystemExit(f"trace overhead worker measured another afp_dsl than {package}")
    return out


MEDIANS = ("bare_us_per_iter", "guarded_us_per_iter", "bare_cpu_us_per_iter",
           "guarded_cpu_us_per_iter", "overhead_pct", "overhead_cpu_pct")


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--workers", type=positive_int, help="worker processes (default 7; 1 with --quick)")
    args = ap.parse_args(argv)
    n = 5 if args.quick else 50
    reps = args.reps or (1 if args.quick else 101)
    workers = [_worker(n, reps) for _ in range(max(1, args.workers or (1 if args.quick else 7)))]
    result = {"benchmark": "trace_overhead", "n": n, "reps": reps, "events": workers[0]["events"],
              **{k: statistics.median(w[k] for w in workers) for k in MEDIANS},
              "workers": [{k: w[k] for k in MEDIANS} for w in workers]}
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
