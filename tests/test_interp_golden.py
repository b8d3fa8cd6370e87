"""Golden run traces: each `tests/golden/run/*.afp` test block's trace, as JSONL, byte for byte."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from golden_util import compare

from afp_dsl import ir
from afp_dsl.api import load
from afp_dsl.testing import _Case, _step

GOLDEN = Path(__file__).parent / "golden" / "run"
SPECS = sorted(GOLDEN.glob("*.afp"))


def traces_of(spec: Path) -> str:
    old = os.getcwd()
    os.chdir(spec.parent)
    try:
        program = load(spec.name)
        out = []
        for test in (d for d in program.ir.root_module.decls if isinstance(d, ir.Test)):
            case = _Case(program, test, test.agent.name if test.agent else None)
            for st in test.statements:
                _step(case, st)
            assert not case.failures, case.failures
            out.append(f"# test {test.name}\n" + case.result.trace.to_jsonl())
        return "".join(out)
    finally:
        os.chdir(old)


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_run_trace_golden(spec: Path, update_goldens: bool) -> None:
    compare(spec.with_suffix(".trace.jsonl"), traces_of(spec), update_goldens)


def test_golden_traces_hold_no_redacted_value() -> None:
    for golden in GOLDEN.glob("*.trace.jsonl"):
        assert "4111111111111111" not in golden.read_text(encoding="utf-8")
