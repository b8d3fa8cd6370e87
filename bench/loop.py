"""Benchmark: N tool-calling iterations through the interpreter (full trace), vs LangGraph.

The workload: an agent with one `echo` tool; a scripted model asks for `echo` N times, then
answers. afp runs it with the mock provider and full trace capture; LangGraph runs the same
script through its prebuilt ReAct agent with a fake chat model, in the same process. Reports µs
per iteration (median over interleaved rounds, wall and CPU) for N = 10, 50, 200 and the ratio.
Run: `python -m bench.loop [--quick] [--reps N] [--json OUT]`. LangGraph comes with
`pip install '.[bench]'`; without it the comparison is skipped with a message.
"""
from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import parser, write_result  # noqa: E402

SPEC = """
agent bench {{
  max_iterations = {limit}
  tools = [echo]{extra}
}}
tool echo {{
  description = "Echo a word."
  input {{ word: string }}
}}
"""
SIZES = (10, 50, 200)
QUICK_SIZES = (3, 5)


def afp_runner(n: int, spec: str | None = None) -> Callable[[], Any]:
    """A zero-argument function doing one N-iteration run (agent set-up excluded from nothing:
    the program is loaded once, each call builds its agent and runs it)."""
    import afp_dsl as afp
    from afp_dsl.effects import Effects, counter_ids
    from afp_dsl.providers import mock
    program = afp.load(spec or SPEC.format(limit=n + 1, extra=""))
    script = [[("echo", {"word": f"w{i}"})] for i in range(n)] + ["done"]

    def once() -> Any:
        agent = program.agent(provider=mock(script), tools={"echo": lambda word: word},
                              effects=Effects(run_ids=counter_ids("b")))
        result = agent.run("go")
        if result.outcome != "answered":
            raise SystemExit(f"bench run ended {result.outcome}: {result.error}")
        return result
    return once


def langgraph_runner(n: int) -> Callable[[], Any] | None:
    try:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.tools import tool
        from langgraph.prebuilt import create_react_agent
    except ImportError:
        return None

    @tool
    def echo(word: str) -> str:
        """Echo a word."""
        return word

    class Fake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> "Fake":
            return self

    def once() -> Any:
        msgs = [AIMessage(content="", tool_calls=[{"name": "echo", "args": {"word": f"w{i}"}, "id": f"c{i}"}])
                for i in range(n)]
        msgs.append(AIMessage(content="done"))
        agent = create_react_agent(Fake(messages=iter(msgs)), [echo])
        return agent.invoke({"messages": [("user", "go")]}, {"recursion_limit": 2 * n + 10})
    return once


def _time(once: Callable[[], Any], n: int) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    once()
    return (time.perf_counter() - w0) / n * 1e6, (time.process_time() - c0) / n * 1e6


def _summary(samples: list[tuple[float, float]]) -> dict:
    return {"us_per_iter": statistics.median(w for w, _ in samples),
            "cpu_us_per_iter": statistics.median(c for _, c in samples),
            "min_us_per_iter": min(w for w, _ in samples), "reps": len(samples)}


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = args.reps or (1 if args.quick else 9)
    afp = {n: afp_runner(n) for n in sizes}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lg = {n: langgraph_runner(n) for n in sizes}
        skipped = None if all(lg.values()) else \
            "langgraph is not importable: comparison skipped (pip install '.[bench]')"
        events = {n: len(afp[n]().trace) for n in sizes}  # also the warm-up
        for n in sizes:
            if lg[n] is not None:
                lg[n]()
        # Rounds interleave the sizes and both frameworks, so drifting load on a shared machine
        # hits every figure alike; within a round each size runs about the same number of
        # iterations (small N repeated).
        samples: dict[tuple[str, int], list] = {}
        for _ in range(rounds):
            for n in sizes:
                for _ in range(max(1, max(sizes) // n)):
                    samples.setdefault(("afp", n), []).append(_time(afp[n], n))
                if lg[n] is not None:
                    samples.setdefault(("langgraph", n), []).append(_time(lg[n], n))
    rows = []
    for n in sizes:
        row: dict[str, Any] = {"n": n, "events": events[n], "afp": _summary(samples[("afp", n)])}
        if ("langgraph", n) in samples:
            row["langgraph"] = _summary(samples[("langgraph", n)])
            row["speedup"] = row["langgraph"]["us_per_iter"] / row["afp"]["us_per_iter"]
            row["speedup_cpu"] = row["langgraph"]["cpu_us_per_iter"] / row["afp"]["cpu_us_per_iter"]
        rows.append(row)
        print(f"loop: N={n}: {row['afp']['us_per_iter']:.1f} µs/iter", file=sys.stderr)
    first, last = rows[0]["afp"], rows[-1]["afp"]
    result = {"benchmark": "loop", "sizes": list(sizes), "rounds": rounds, "rows": rows,
              "growth_last_vs_first": last["us_per_iter"] / first["us_per_iter"],
              "growth_last_vs_first_cpu": last["cpu_us_per_iter"] / first["cpu_us_per_iter"],
              "langgraph_skipped": skipped}
    if skipped:
        print(skipped, file=sys.stderr)
    write_result(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
