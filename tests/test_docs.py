"""The documentation's code blocks: every ```afp block checks clean, every ```afp-error block fails.

Blocks are taken from docs/*.md and README.md. Each ```afp block is checked on its own, as spec
text, and must produce no diagnostic at all; ```afp-error blocks must produce at least one error;
```afp-fragment blocks are partial and skipped. Blocks that hold `test` declarations also run.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import afp_dsl
from afp_dsl import ir
from afp_dsl.diagnostics import Severity

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(afp|afp-error|afp-fragment)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(kind: str) -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        if not doc.is_file():
            continue
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == kind:
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{doc.relative_to(ROOT).as_posix()}:{line}", m.group(2)))
    return out


GOOD = blocks("afp")
BAD = blocks("afp-error")


def _ids(items: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in items]


def _render(diags: list) -> str:
    return "\n".join(f"{d.code} {d.severity}: {d.message}" for d in diags)


def test_the_reference_has_examples():
    assert len([w for w, _ in GOOD if w.startswith("docs/language.md")]) >= 15
    assert any(w.startswith("docs/language.md") for w, _ in BAD)


@pytest.mark.parametrize("where,text", GOOD, ids=_ids(GOOD))
def test_afp_block_checks_clean(where: str, text: str):
    diags = afp_dsl.check(text)
    assert diags == [], f"{where}\n{_render(diags)}"


@pytest.mark.parametrize("where,text", BAD, ids=_ids(BAD))
def test_afp_error_block_fails(where: str, text: str):
    diags = afp_dsl.check(text)
    assert any(d.severity == Severity.ERROR for d in diags), f"{where}: expected an error"


@pytest.mark.parametrize("where,text", [(w, t) for w, t in GOOD if re.search(r"^test \w+", t, re.M)],
                         ids=_ids([(w, t) for w, t in GOOD if re.search(r"^test \w+", t, re.M)]))
def test_afp_block_tests_pass(where: str, text: str):
    from afp_dsl.testing import run_test
    program = afp_dsl.load(text)
    failed = []
    for decl in program.ir.root_module.decls:
        if isinstance(decl, ir.Test):
            r = run_test(program, decl, where)
            if not r.passed:
                failed.append(f"{decl.name}: {r.error or ''}\n" + "\n".join(r.failures))
    assert not failed, f"{where}\n" + "\n\n".join(failed)


@pytest.mark.parametrize("where,text", GOOD, ids=_ids(GOOD))
def test_afp_block_round_trips(where: str, text: str):
    from afp_dsl.serde import ir_from_json, ir_to_json
    program = afp_dsl.load(text).ir
    assert ir_from_json(ir_to_json(program)) == program
