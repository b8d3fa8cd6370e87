"""docs/stdlib.md is generated from stdlib/*.afp (`python -m afp_dsl.docgen stdlib`) and current.

Also: every module and public declaration has its section, the text comes from the declarations
(descriptions, rules with their `because`, redact keys, comments above), the import examples
check clean, and the `diagnostics` page still generates.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import afp_dsl
from afp_dsl import docgen, ir, resources
from afp_dsl.docgen_stdlib import stdlib_page
from afp_dsl.loader import load_program

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "stdlib.md"


def _modules() -> dict[str, ir.Module]:
    out = {}
    for name in resources.stdlib_names():
        program, diags = load_program(resources.stdlib_path(name))
        assert program is not None, diags
        out[name] = next(m for m in program.modules if m.key == program.root)
    return out


def test_the_committed_page_is_current():
    assert PAGE.read_text(encoding="utf-8") == stdlib_page(), (
        "docs/stdlib.md is stale: run `python -m afp_dsl.docgen stdlib > docs/stdlib.md`")


def test_the_module_entry_point_writes_the_page():
    out = subprocess.run([sys.executable, "-m", "afp_dsl.docgen", "stdlib"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert out == stdlib_page()


def test_the_diagnostics_page_still_generates(capsys):
    assert docgen.main(["diagnostics"]) == 0
    assert capsys.readouterr().out == docgen.diagnostics_page()
    assert docgen.main(["nope"]) == 2
    assert "usage" in capsys.readouterr().err


def test_every_module_and_declaration_has_a_section():
    page = stdlib_page()
    for name, module in _modules().items():
        assert f"## `std/{name}`" in page
        cut = module.source.find("self-test")
        for d in module.decls:
            public = isinstance(d, (ir.Tool, ir.Steering, ir.Policy, ir.Redact, ir.Fact,
                                    ir.Instruction)) and d.full_span.start < cut
            assert (f"`{d.name}`\n" in page) == public, d.name


def test_the_page_carries_the_declarations_text():
    page, modules = stdlib_page(), _modules()
    for module in modules.values():
        for d in module.decls:
            if isinstance(d, ir.Tool) and d.full_span.start < module.source.find("self-test"):
                assert d.description in page
            if isinstance(d, ir.Policy):
                for block in d.blocks:
                    for rule in block.rules:
                        assert rule.because in page
            if isinstance(d, ir.Redact) and d.full_span.start < module.source.find("self-test"):
                assert all(f"`{k}`" in page for k in d.keys)
                assert all(p.pattern in page for p in d.patterns)
    # the comment right above a declaration is its introduction
    assert "The language has no tag for \"destructive\" today" in page
    assert "Host tools and the run context" in page


def test_every_example_on_the_page_checks_clean():
    blocks = re.findall(r"^```afp\n(.*?)^```", stdlib_page(), re.M | re.S)
    assert len(blocks) == 1 + len(resources.stdlib_names())
    for text in blocks:
        assert afp_dsl.check(text) == [], text
