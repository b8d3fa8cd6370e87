"""The checker: a tuple of rule functions run over one `Analysis`.

Role:       `run_checks(analysis)` is the only entry point; each rule is a plain function
            `rule(analysis) -> Iterable[Diagnostic]` in a module of this package.
Invariants: rules never raise on bad input and never mutate the IR; a rule skips what an
            earlier root cause already reported (one root cause, one diagnostic).
"""
from __future__ import annotations

from typing import Callable, Iterable

from ..analysis import Analysis
from ..diagnostics import Diagnostic
from . import (atoms, bodies, exprs, graph, guards, names, normal_form, policies, regexes, routes, schemapaths, schemas, sites,
               solver, tests, untyped)

Rule = Callable[[Analysis], Iterable[Diagnostic]]

CHECKS: tuple[Rule, ...] = (
    names.check_names,
    schemas.check_schemas,
    exprs.check_exprs,
    regexes.check_regexes,
    untyped.check_untyped,
    guards.check_guards,
    graph.check_graph,
    routes.check_routes,
    policies.check_policies,
    tests.check_tests,
    bodies.check_bodies,
)


def run_checks(analysis: Analysis, rules: tuple[Rule, ...] = CHECKS) -> list[Diagnostic]:
    """Every rule's diagnostics, in rule order. The per-node caches the rules share live for one
    call only, so nothing computed for one program is reused for the next. They are memos
    (keyed by identity, each entry holding its key): another thread's check clearing them only
    costs a recomputation. What the rules tell each other (the AFP301 schemas) is this call's
    own (`schemas.broken_scope`, per thread), so checks at once in several threads never mix it."""
    out: list[Diagnostic] = []
    try:
        with schemas.broken_scope():
            for rule in rules:
                out.extend(rule(analysis))
    finally:
        atoms.clear_cache()
        normal_form.clear_cache()
        exprs.clear_cache()
        routes.clear_cache()
        schemapaths.clear_cache()
        sites.clear_cache()
        solver.clear_cache()
    return out
