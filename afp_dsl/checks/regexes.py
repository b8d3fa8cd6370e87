"""Regex literals that may backtrack exponentially (a run-time stall and a check-time blind
spot), or that a later Python may read otherwise.

Role:       checks layer; reads the pattern after every `matches` of the expression sites, the
            patterns of every redact rule and every test's `expect answer matches`.
Emits:      AFP307 regex-backtracking (warning); AFP004 invalid-regex as a warning, for a class
            Python warns about (`[[`, `--`, `&&`, `~~`, `||` inside `[...]`).
Invariants: judged by `regex_risk.backtracking_risk` alone (conservative: it may warn about a
            safe pattern, never passes a risky one); one diagnostic per literal; a pattern that
            does not compile is AFP004's, and a misplaced one AFP305's.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import attrs

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Severity
from ..evaluate import regex_flags
from ..regex_quiet import future_caveat
from . import sitelist
from .exprs import walk
from .regex_risk import backtracking_risk


def check_regexes(analysis: Analysis) -> Iterable[Diagnostic]:
    seen: set[int] = set()
    for rx in _literals(analysis):
        if id(rx) not in seen:
            seen.add(id(rx))
            why = backtracking_risk(rx.pattern, rx.flags)
            if why is not None:
                yield _warning(rx, why)
            caveat = future_caveat(rx.pattern, regex_flags(rx.flags))
            if caveat is not None:
                yield _caveat(rx, caveat)


def _literals(analysis: Analysis) -> Iterator[ir.Regex]:
    for site in sitelist.sites(analysis) if _may_match(analysis) else ():
        for node in walk(site.expr):
            if type(node) is ir.Compare and node.op == "matches" and type(node.right) is ir.Regex:
                yield node.right
    for _, r in analysis.decls(ir.Redact):
        yield from r.patterns
    for _, t in analysis.decls(ir.Test):
        yield from (e.matches for e in _nodes(t.statements) if isinstance(e, ir.ExpectAnswer)
                    and e.matches is not None)


def _may_match(analysis: Analysis) -> bool:
    """Whether any expression may hold `matches`. Speed: a program whose modules' source texts
    never spell the word holds no such comparison, and the walk over every expression is skipped
    (a module without its text, as `load_ir` reads one, is walked)."""
    return any(not m.source or "matches" in m.source for m in analysis.program.modules)


def _nodes(value: Any) -> Iterator[Any]:
    """Every IR node in `value` (a node, or a tuple of them), parents first."""
    if isinstance(value, tuple):
        for v in value:
            yield from _nodes(v)
    elif attrs.has(type(value)):
        yield value
        for f in attrs.fields(type(value)):
            yield from _nodes(getattr(value, f.name))


def _warning(rx: ir.Regex, why: str) -> Diagnostic:
    return diag("AFP307", f"the pattern `{rx}` may backtrack exponentially", rx.span,
                why,
                notes=(("on a long text that almost matches, the regex engine can take longer than "
                        "any run allows; the checker does not run it on the spec's values, so "
                        "conditions using it are not analysed"),),
                help="rewrite it so each character can be matched only one way, e.g. "
                     "`/^(a|aa)+$/` as `/^a+$/`, `/(\\w+\\s?)+$/` as `/[\\w\\s]+$/`")


def _caveat(rx: ir.Regex, caveat: str) -> Diagnostic:
    return diag("AFP004", f"the pattern `{rx}` may change meaning in a later Python: {caveat[0].lower()}"
                f"{caveat[1:]}", rx.span, "ambiguous class", severity=Severity.WARNING,
                notes=("Python reads it as it always has, but warns that a later version may read "
                       "`[` inside a class as a nested set, and `--`, `&&`, `~~`, `||` as set "
                       "operations",),
                help="escape the character meant literally: `\\[`, `\\-`, `\\&`, `\\~`, `\\|`")
