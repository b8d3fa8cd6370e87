"""Benchmark: the run stores. Events written per second, and what a store costs per iteration.

Run: `python bench/store.py` (PostgreSQL too when `AFP_TEST_POSTGRES_URL` is set or
`bash .ci/postgres.sh start` left `.afp/pg.url`). Prints, for a 200-iteration run:
  * events/s that `save_run` writes to SQLite (a WAL file) and PostgreSQL (one transaction each);
  * the interpreter's µs per iteration in memory only, with SQLite attached, with PostgreSQL
    attached, and the overhead (goal: SQLite under 30%).
Not a test: numbers vary by machine.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import afp_dsl as afp  # noqa: E402
from afp_dsl import stores  # noqa: E402
from afp_dsl.effects import Effects, counter_ids  # noqa: E402
from afp_dsl.providers import mock  # noqa: E402

N = 200
REPEAT = 15
SPEC = """
agent bench {{
  max_iterations = {limit}
  tools = [echo]
}}
tool echo {{
  description = "Echo a word."
  input {{ word: string }}
}}
"""


def pg_url() -> str | None:
    url = os.environ.get("AFP_TEST_POSTGRES_URL")
    f = ROOT / ".afp" / "pg.url"
    return url or (f.read_text().strip() if f.is_file() else None)


def fresh_pg(url: str) -> str:
    """A URL on a new empty schema (the bench never touches existing tables)."""
    import psycopg
    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{url}{'&' if '?' in url else '?'}options=-c%20search_path%3D{schema}"


def drop_pg(url: str) -> None:
    import psycopg
    schema = url.rsplit("%3D", 1)[1]
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def run_once(program, store, prefix: str) -> tuple[float, object]:
    script = [[("echo", {"word": f"w{i}"})] for i in range(N)] + ["done"]
    agent = program.agent(provider=mock(script), tools={"echo": lambda word: word}, store=store,
                          effects=Effects(run_ids=counter_ids(prefix)))
    start = time.perf_counter()
    result = agent.run("go")
    elapsed = time.perf_counter() - start
    assert result.outcome == "answered", result.error
    return elapsed, result


def per_iteration(program, makers: dict) -> dict[str, float]:
    """Best µs per iteration for each store kind, runs interleaved (a busy machine slows all
    kinds alike), each run on a fresh store handle."""
    best = {name: float("inf") for name in makers}
    for i in range(REPEAT):
        for name, make_store in makers.items():
            store = make_store()
            best[name] = min(best[name], run_once(program, store, f"{name}{i}-")[0])
            store.close()
    return {name: t / N * 1e6 for name, t in best.items()}


def events_per_second(store, trace) -> float:
    events = trace.events
    best = float("inf")
    for i in range(REPEAT):
        start = time.perf_counter()
        store.save_run(f"w{i}-{uuid.uuid4().hex[:6]}", "bench", None, "finished", "answered",
                       "done", {}, events)
        best = min(best, time.perf_counter() - start)
    return len(events) / best


def main() -> None:
    program = afp.load(SPEC.format(limit=N + 1))
    _, result = run_once(program, stores.memory(), "warm")
    trace = result.trace
    print(f"a {N}-iteration run: {len(trace)} events")
    tmp = Path(tempfile.mkdtemp(prefix="afp-bench-"))
    url = pg_url()
    pg = fresh_pg(url) if url else None

    rows = [("sqlite", stores.sqlite(tmp / "w.db"))]
    if pg:
        rows.append(("postgres", stores.postgres(pg)))
    for name, store in rows:
        print(f"save_run  {name:<9} {events_per_second(store, trace):>10,.0f} events/s")
        store.close()

    makers = {"memory": stores.memory, "sqlite": lambda: stores.sqlite(tmp / "i.db")}
    if pg:
        makers["postgres"] = lambda: stores.postgres(pg)
    us = per_iteration(program, makers)
    for name, t in us.items():
        extra = "" if name == "memory" else f"  (+{(t / us['memory'] - 1) * 100:.0f}%)"
        print(f"iteration {name:<9} {t:8.1f} µs{extra}")
    print("goal: sqlite under +30%")
    if pg:
        drop_pg(pg)
    else:
        print("postgres: skipped (set AFP_TEST_POSTGRES_URL or run `bash .ci/postgres.sh start`)")

if __name__ == "__main__":
    main()
