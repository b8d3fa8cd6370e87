"""The benchmark report: goals checked against the results, and the Markdown page.

Role:       turns the JSON report written by `python -m bench` into docs/performance.md (tables
            per benchmark, the goals with pass/miss, and before → after when a baseline report
            is given).
Invariants: pure: a report dict in, text out; a benchmark that failed shows its error instead.
"""
from __future__ import annotations

from typing import Any, Callable

GOALS: tuple[tuple[str, str, Callable[[dict], float | None], str, float], ...] = (
    ("loop", "loop vs LangGraph at N = 50 (full trace)", lambda b: _row(b, 50, "speedup"), ">=", 10.0),
    ("loop", "per-iteration cost N = 200 / N = 10", lambda b: b.get("growth_last_vs_first"), "<=", 1.3),
    ("compile", "3,000 skills parsed, checked and drawn (s)", lambda b: _size(b, 3000, "total_s"), "<", 0.56),
    # The growth goal reads the exponent between each size's fastest runs: a ratio of two times
    # measured minutes apart, which other tenants of the machine can only slow down, swings by
    # ±0.15 between runs when taken from medians and by about ±0.01 from the fastest runs (the
    # work itself grows with exponent 1.00 in instructions: bench/notes.md).
    ("compile", "growth exponent 1,000 → 10,000 skills (fastest runs)",
     lambda b: b.get("exponent_1000_10000_fastest", b.get("exponent_1000_10000")), "<=", 1.1),
    ("cli_start", "cold `afpc check` / `python -c pass` (the larger of: as started, without start-up hooks)", lambda b: b.get("ratio"), "<=", 4.0),
    ("trace_overhead", "redaction + 3-link policy chain overhead (%)", lambda b: b.get("overhead_pct"), "<", 25.0),
)


def _row(b: dict, n: int, key: str) -> Any:
    for r in b.get("rows", ()):
        if r.get("n") == n:
            return r.get(key)
    return None


def _size(b: dict, n: int, key: str) -> Any:
    for r in b.get("rows", ()):
        if r.get("skills") == n:
            return r.get(key)
    return None


def goals(report: dict) -> list[dict]:
    """Each goal with its measured value; `met` is None when unmeasured or in quick mode."""
    out = []
    for bench, text, get, op, target in GOALS:
        data = report.get("benchmarks", {}).get(bench) or {}
        value = None if "error" in data else get(data)
        ok = None if value is None or report.get("quick") else {
            ">=": value >= target, "<=": value <= target, "<": value < target}[op]
        out.append({"benchmark": bench, "goal": text, "target": f"{op} {target:g}", "value": value, "met": ok,
                    "shown": shown(value, target)})
    return out


def shown(value: Any, target: float) -> str:
    """`value` with two decimals, or as many more (up to five) as tell it apart from `target`:
    0.5575 against `< 0.56` reads 0.558, not 0.56."""
    if not isinstance(value, (int, float)):
        return _f(value)
    digits = 2
    while digits < 5 and f"{value:.{digits}f}" == f"{target:.{digits}f}" and value != target:
        digits += 1
    return f"{value:,.{digits}f}"


def _f(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines + [""]


def _compile(b: dict) -> list[str]:
    rows = [[_f(r["skills"]), _f(r["lines"]), _f(r["total_s"], 3), _f(r.get("min_total_s"), 3),
             _f(r["check_s"], 3), _f(r["draw_s"], 3), _f(r["lines_per_s"], 0), _f(r["total_cpu_s"], 3)]
            for r in b["rows"]]
    out = _table(["skills", "lines", "check + draw (s)", "fastest (s)", "check (s)", "draw (s)", "lines/s",
                  "CPU (s)"], rows)
    if b.get("rounds"):
        out += [f"Each size in {b['rounds']} fresh processes, the sizes alternating, {b.get('reps')} timed "
                "runs each after a warm-up; medians over all of them.", ""]
    grow = ", ".join(f"{g['from']:,}→{g['to']:,}: {g['exponent']:.2f}" for g in b.get("growth", ()))
    out += [f"Growth exponents of the medians (time ∝ size^k): {grow}; 1,000→10,000: "
            f"{_f(b.get('exponent_1000_10000'))} (CPU time: {_f(b.get('exponent_1000_10000_cpu'))}); "
            f"between the fastest runs: {_f(b.get('exponent_1000_10000_fastest'))} (the goal's "
            "figure: other tenants of the machine can only slow a run down, so the ratio of two "
            "fastest runs is the steadier one).", ""]
    st = b.get("stages") or {}
    names = [("source_table", "line table (`SourceFile.of`)"), ("parse_fast_path", "parse, fast path"),
             ("parse_lark_only", "parse, Lark alone (fallback and error path)"), ("lower", "lower to IR"),
             ("checks", "checks"), ("mermaid", "Mermaid export")]
    rows = [[label, _f(st.get(k + "_s"), 3), _f(st.get(k + "_cpu_s"), 3)] for k, label in names if k + "_s" in st]
    if rows:
        out += [f"Stages at {st.get('skills', 0):,} skills (garbage collector paused, as in `check`):", ""]
        out += _table(["stage", "wall (s)", "CPU (s)"], rows)
    if "checks_s" in st and "mermaid_s" in st:
        out += [f"In memory (checks + Mermaid on the built IR, no parsing, the shape of the original's "
                f"in-memory figure): {_f(st['checks_s'] + st['mermaid_s'], 3)} s at {st.get('skills', 0):,} "
                "skills.", ""]
    return out


def _loop(b: dict) -> list[str]:
    rows = []
    for r in b["rows"]:
        lg = r.get("langgraph") or {}
        rows.append([r["n"], r["events"], _f(r["afp"]["us_per_iter"], 1), _f(r["afp"]["cpu_us_per_iter"], 1),
                     _f(lg.get("us_per_iter"), 1), _f(r.get("speedup"), 1), _f(r.get("speedup_cpu"), 1)])
    out = _table(["N", "trace events", "afp µs/iter", "afp CPU µs/iter", "LangGraph µs/iter", "speed-up",
                  "speed-up (CPU)"], rows)
    out += [f"Per-iteration cost, largest N over smallest: {_f(b.get('growth_last_vs_first'))} "
            f"(CPU time: {_f(b.get('growth_last_vs_first_cpu'))}).", ""]
    if b.get("langgraph_skipped"):
        out += [f"*{b['langgraph_skipped']}*", ""]
    return out


def _cli(b: dict) -> list[str]:
    base = b["python_c_pass"]["median_s"]
    rows = [["`python -c pass`", _f(base, 3), _f(b["python_c_pass"]["min_s"], 3), "1.0"],
            [f"`afpc check` ({b['spec_lines']}-line spec)", _f(b["afpc_check"]["median_s"], 3),
             _f(b["afpc_check"]["min_s"], 3), _f(b.get("ratio_as_started", b["ratio"]))]]
    rows += [[f"`python -c \"{v['code']}\"` (for scale)", _f(v["median_s"], 3), _f(v["min_s"], 3),
              _f(v["ratio"])] for v in b.get("libraries", {}).values()]
    clean = b.get("no_hooks")
    if clean:
        rows += [["`python -c pass`, no start-up hooks", _f(clean["python_c_pass"]["median_s"], 3),
                  _f(clean["python_c_pass"]["min_s"], 3), "1.0"],
                 ["`afpc check`, no start-up hooks", _f(clean["afpc_check"]["median_s"], 3),
                  _f(clean["afpc_check"]["min_s"], 3), _f(clean["ratio"])]]
        rows += [[f"`python -c \"{v['code']}\"`, no start-up hooks", _f(v["median_s"], 3),
                  _f(v["min_s"], 3), _f(v["ratio"])] for v in clean.get("libraries", {}).values()]
    out = _table(["command", "median (s)", "min (s)", "× `python -c pass`"], rows)
    if b.get("bytecode") == "compiled":
        out += ["The package's bytecode was compiled first, as `pip install` does; the commands take "
                "turns, one run of each per round.", ""]
    if clean:
        hooks = ", ".join(f"`{h}`" for h in clean["hooks"]) or "none"
        out += [f"Start-up hooks of this interpreter's site folders ({hooks}) run in every command "
                f"whose row does not say \"no start-up hooks\" (see `bench/cli_start.py`). As "
                f"started: {_f(b.get('ratio_as_started'))}×; without the hooks: {_f(clean['ratio'])}×; "
                f"the goal reads the larger.", ""]
    out += [f"Ratio: **{_f(b['ratio'])}×**. Slowest imports at start-up (cumulative ms, `-X importtime`): "
            + ", ".join(f"`{r['module']}` {r['cumulative_ms']:.0f}" for r in b.get("slowest_imports", ())[:8]) + ".", ""]
    return out


def _trace(b: dict) -> list[str]:
    out = _table(["run (N = %d)" % b["n"], "trace events", "µs/iter", "CPU µs/iter"], [
        ["bare", b["events"]["bare"], _f(b["bare_us_per_iter"], 1), _f(b["bare_cpu_us_per_iter"], 1)],
        ["redaction + 3 policies", b["events"]["guarded"], _f(b["guarded_us_per_iter"], 1),
         _f(b["guarded_cpu_us_per_iter"], 1)]])
    out += [f"Overhead: **{_f(b['overhead_pct'], 1)} %** (CPU time: {_f(b['overhead_cpu_pct'], 1)} %)."]
    workers = b.get("workers") or []
    if len(workers) > 1:
        each = ", ".join(_f(w["overhead_pct"], 1) for w in workers)
        out += [f"Medians over {len(workers)} worker processes of {b['reps']} interleaved rounds "
                f"each; the workers' overheads: {each} %."]
    return out + [""]


def _memory(b: dict) -> list[str]:
    one, kept = b["one_run"], b["retained"]
    return _table(["measure", "value"], [
        [f"peak during one N = {one['n']} run ({one['events']} events)", f"{_f(one['peak_kib'], 0)} KiB"],
        [f"held by {kept['runs']:,} retained runs of {kept['iterations_per_run']} iterations",
         f"{_f(kept['held_mib'], 1)} MiB ({_f(kept['kib_per_run'], 1)} KiB per run, "
         f"{_f(kept['bytes_per_event'], 0)} B per trace event)"]])


SECTIONS = (("compile", "Compile: check + Mermaid on generated specs", _compile),
            ("cli_start", "Cold CLI start-up", _cli),
            ("loop", "Tool-calling loop vs LangGraph", _loop),
            ("trace_overhead", "Trace overhead: redaction + policy chain", _trace),
            ("memory", "Memory", _memory))


def _before_after(report: dict, baseline: dict, also: list[dict]) -> list[str]:
    rows = []
    now_goals = {g["goal"]: g for g in goals(report)}
    extra = [{g["goal"]: g for g in goals(r)} for r in also]
    for g in goals(baseline):
        now = now_goals.get(g["goal"], {})
        rows.append([g["goal"], _f(g["value"]), _f(now.get("value"))]
                    + [_f(e.get(g["goal"], {}).get("value")) for e in extra] + [g["target"]])
    out = ["## Before → after", "", f"Before: {baseline.get('label', 'baseline')} "
           f"({baseline.get('date', '?')}, same machine); after: this run."]
    out += [f"Column {i + 2}: {r.get('label', '?')} ({r.get('date', '?')})." for i, r in enumerate(also, 1)]
    return out + [""] + _table(["figure", "before", "after"] + [f"column {i + 2}" for i in range(1, len(also) + 1)]
                               + ["goal"], rows)


def render(report: dict, baseline: dict | None = None, notes: str = "", also: list[dict] = ()) -> str:
    m = report.get("machine", {})
    lines = ["# Performance", "",
             "Generated by `python -m bench` (`make bench`); do not edit by hand: notes live in "
             "`bench/notes.md`. Figures are medians of several runs after a warm-up, each benchmark "
             "in its own process; wall time is the headline, CPU time (this process only) is shown "
             "too because the machine may be shared.", "",
             f"* Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('platform', '?')}",
             f"* Python {report.get('python', '?')}; date {report.get('date', '?')}"
             + ("; **quick mode** (tiny sizes, 1 repetition: not figures to quote)" if report.get("quick") else ""),
             "", "## Goals", ""]
    rows = [[g["goal"], g["target"], g.get("shown") or _f(g["value"]), {True: "met", False: "**missed**", None: "–"}[g["met"]]]
            for g in goals(report)]
    lines += _table(["goal", "target", "measured", ""], rows)
    if baseline:
        lines += _before_after(report, baseline, list(also))
    for key, title, fn in SECTIONS:
        lines += [f"## {title}", ""]
        data = report.get("benchmarks", {}).get(key)
        if data is None:
            lines += ["not run", ""]
        elif "error" in data:
            lines += [f"failed: `{data['error']}`", ""]
        else:
            lines += fn(data)
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines).rstrip() + "\n"
