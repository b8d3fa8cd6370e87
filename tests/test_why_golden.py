"""Golden tests for `why` (text and JSON) and the graph overlay, on three example runs.

The runs come from the examples' own `test` blocks under the scripted mock with counter run ids,
so the output is stable. `pytest tests/test_why_golden.py --update-goldens` rewrites the files
(review the diff). `example_runs` is shared with the other trace tests.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

import afp_dsl
from afp_dsl import ir
from afp_dsl.testing import run_test
from afp_dsl.why import explain

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"

# (example, test block, queries: (name, kwargs for `explain`))
CASES = [
    ("support", "larger_refund_needs_approval",
     [("skill-escalation", {"skill": "escalation"}), ("edge-refunds-escalation",
                                                       {"edge": "refunds->escalation"})]),
    ("incident_triage", "declined_page_files_a_ticket",
     [("edge-paging-ticketing", {"edge": "paging -> ticketing"}),
      ("skill-paging-2", {"skill": "paging", "iteration": 2})]),
    ("due_diligence", "revenue_through_the_inner_agent", []),
]


@functools.lru_cache(maxsize=None)
def _program(example: str):
    old = os.getcwd()
    os.chdir(EXAMPLES / example)  # module keys become `<example>.afp`: stable goldens
    try:
        return afp_dsl.load(f"{example}.afp")
    finally:
        os.chdir(old)


def example_runs(example: str, test: str | None = None) -> list:
    """(program, RunResult) of every run the example's test blocks make (or of one block)."""
    program = _program(example)
    out = []
    old = os.getcwd()
    os.chdir(EXAMPLES / example)
    try:
        for t in program.ir.root_module.decls:
            if isinstance(t, ir.Test) and (test is None or t.name == test):
                got: list = []
                result = run_test(program, t, f"{example}.afp", observe=got.append)
                assert result.passed, result.failures
                out += [(program, r) for r in got]
    finally:
        os.chdir(old)
    return out


def all_example_runs() -> list:
    names = sorted(p.name for p in EXAMPLES.iterdir() if (p / f"{p.name}.afp").is_file())
    return [x for n in names for x in example_runs(n)]


def compare(path: Path, actual: str, update: bool) -> None:
    if update or not path.exists():
        existed = path.exists()
        path.write_text(actual, encoding="utf-8")
        if not existed:
            raise AssertionError(f"new golden written: {path}; review it and run again")
        return
    assert actual == path.read_text(encoding="utf-8"), \
        f"output differs from {path} (run with --update-goldens and review)"


def _final(example: str, test: str):
    program, result = example_runs(example, test)[-1]
    return program, result


@pytest.mark.parametrize("example,test,queries", CASES, ids=[c[0] for c in CASES])
def test_why_answer_text_and_json(example, test, queries, update_goldens):
    program, r = _final(example, test)
    text = explain(r.trace, inner=r.inner, program=program)
    compare(GOLDEN / "why" / f"{example}.{test}.txt", text + "\n", update_goldens)
    doc = explain(r.trace, inner=r.inner, program=program, format="json")
    compare(GOLDEN / "why" / f"{example}.{test}.json", doc, update_goldens)
    parsed = json.loads(doc)
    assert parsed["version"] == 1 and parsed["run"] == r.run_id
    assert parsed["tree"]["kind"] == "answer"
    assert set(parsed["tree"]) == {"kind", "text", "event", "at", "data", "children"}


@pytest.mark.parametrize("example,test,queries", [c for c in CASES if c[2]],
                         ids=[c[0] for c in CASES if c[2]])
def test_why_skill_and_edge_queries(example, test, queries, update_goldens):
    program, r = _final(example, test)
    for name, kw in queries:
        text = explain(r.trace, inner=r.inner, program=program, **kw)
        compare(GOLDEN / "why" / f"{example}.{test}.{name}.txt", text + "\n", update_goldens)


@pytest.mark.parametrize("example,test", [("support", "larger_refund_needs_approval"),
                                          ("incident_triage", "declined_page_files_a_ticket")])
def test_graph_overlay_golden(example, test, update_goldens, tmp_path):
    from click.testing import CliRunner

    from afp_dsl.cli import main
    from afp_dsl.store import sqlite
    db = tmp_path / "runs.db"
    store = sqlite(db)
    _, r = _final(example, test)
    store.save_run(r.run_id, "agent", None, "finished", r.outcome, None, {}, r.trace.events)
    store.close()
    old = os.getcwd()
    os.chdir(EXAMPLES / example)
    try:
        out = CliRunner().invoke(main, ["graph", f"{example}.afp", "--run", r.run_id,
                                        "--store", str(db)])
    finally:
        os.chdir(old)
    assert out.exit_code == 0, out.output
    compare(GOLDEN / "overlay" / f"{example}.{test}.mmd", out.output, update_goldens)
    assert "classDef visited" in out.output and "linkStyle" in out.output
