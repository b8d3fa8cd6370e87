"""Skill bodies that name tools the skill does not have (the original's body-* checks).

Role:       checks layer; `check_bodies(analysis)` reads each skill's `body` text for tool names.
Emits:      AFP214 body-foreign-tool (warning): the body names, as a whole word, a tool of
            another skill that is neither one of its own nor a baseline tool of an agent;
            AFP215 body-unknown-tool (warning): the body calls `snake_case(...)`, and no tool
            (nor built-in) has that name.
Invariants: pure; a body is prose, so both are warnings, one per name and skill, at the body.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..suggest import closest
from .tests import BUILTINS

# The original's pattern of a call written in prose: a snake_case name (one `_` at least), then `(`
_CALL = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*\(")


def check_bodies(analysis: Analysis) -> Iterable[Diagnostic]:
    skills = [(m, s) for m, s in analysis.decls(ir.Skill) if s.body is not None and s.body.value]
    if not skills:
        return
    tools = sorted({t.name for _, t in analysis.decls(ir.Tool)})
    baseline = {t for m, a in analysis.decls(ir.Agent) for t in _names(analysis, m, a.tools)}
    owners: dict[str, list[str]] = {}
    for m, s in analysis.decls(ir.Skill):
        for t in _names(analysis, m, s.tools):
            owners.setdefault(t, []).append(s.name)
    for m, s in skills:
        if analysis.misspelt(m, s) or any(analysis.lookup(m, r, ir.Tool) is None for r in s.tools):
            continue  # (its tools are unknown: AFP104 or AFP101 is the root cause)
        yield from _body(s, set(_names(analysis, m, s.tools)), baseline, owners, tools)


def _names(analysis: Analysis, module: str, refs: tuple[ir.Ref, ...]) -> list[str]:
    return [t.name for t in (analysis.lookup(module, r, ir.Tool) for r in refs) if t is not None]


def _body(s: ir.Skill, own: set[str], baseline: set[str], owners: dict[str, list[str]],
          tools: list[str]) -> Iterator[Diagnostic]:
    text, span = s.body.value, s.body.span
    for name in sorted(owners):
        if name in own or name in baseline or s.name in owners[name]:
            continue
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
            others = ", ".join(f"`{o}`" for o in owners[name])
            yield diag("AFP214", f"the body of skill `{s.name}` names `{name}`, a tool of {others}",
                       span, "names a tool this skill does not have",
                       notes=(f"while `{s.name}` is active the model is not offered `{name}` "
                              f"(it is a tool of {others}, and no agent's baseline tool)",),
                       help=f"add `{name}` to the `tools` of `{s.name}`, or reword the body")
    known = set(tools) | set(BUILTINS)
    for name in dict.fromkeys(_CALL.findall(text)):
        if name not in known:
            close = closest(name, tools)
            yield diag("AFP215", f"the body of skill `{s.name}` calls `{name}(...)`, and no tool "
                       f"has that name", span, "no such tool",
                       help=f"did you mean `{close}`?" if close else
                       "name a declared tool, or write the step without call syntax")
