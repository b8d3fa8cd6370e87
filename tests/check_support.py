"""Helpers for the graph/expression/policy/test check suites: run every rule on a spec."""
from __future__ import annotations

import os
from pathlib import Path

from afp_dsl import checks
from afp_dsl.api import analysis_for
from afp_dsl.checks import exprs, graph, guards, policies, routes, tests
from afp_dsl.diagnostics import sorted_diagnostics
from afp_dsl.loader import load as load_files
from afp_dsl.render import render

MINE = (exprs.check_exprs, guards.check_guards, graph.check_graph, routes.check_routes,
        policies.check_policies, tests.check_tests)
RULES = tuple(checks.CHECKS) + tuple(r for r in MINE if r not in checks.CHECKS)


def analyse(path_or_text, name: str = "<text>"):
    """Like `api.analyse`, but sure to run these rules even before they are registered."""
    if isinstance(path_or_text, Path):
        result = load_files(path_or_text)
    else:
        result = load_files(text=path_or_text, name=name)
    program, diags = result.program, list(result.diagnostics)
    if program is not None and not result.unparsed:
        diags += checks.run_checks(analysis_for(program, diags), RULES)
    return program, sorted_diagnostics(diags)


def diagnostics_text(spec: Path) -> tuple[str, list]:
    old = os.getcwd()
    os.chdir(spec.parent)
    try:
        program, diags = analyse(Path(spec.name))
    finally:
        os.chdir(old)
    sources = {m.key: m.source for m in program.modules} if program else {}
    return render(diags, sources, "text", color=False), diags


def codes(text: str, name: str = "t.afp") -> list[str]:
    return [d.code for d in analyse(text, name)[1]]
