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
# A whole word as a tool name is one: names are `[A-Za-z_][A-Za-z0-9_]*`
_WORD = re.compile(r"[A-Za-z0-9_]+")


def check_bodies(analysis: Analysis) -> Iterable[Diagnostic]:
    skills = [(m, s) for m, s in analysis.decls(ir.Skill) if s.body is not None and s.body.value]
    if not skills:
        return
    tools = frozenset(t.name for _, t in analysis.decls(ir.Tool))
    every = "\n".join(s.body.value for _, s in skills)
    # Speed: one scan of all the bodies decides whether any names a tool or calls anything
    # (most specs' bodies do neither); only then is each body and skill looked at
    if "(" not in every and tools.isdisjoint(_WORD.findall(every)):
        return
    owned: dict[tuple[str, str], tuple[list[str], bool]] = {}  # its tools' names, all resolved?
    owners: dict[str, list[str]] = {}
    for m, s in analysis.decls(ir.Skill):
        found = [analysis.lookup(m, r, ir.Tool) for r in s.tools]
        names = [t.name for t in found if t is not None]
        owned[(m, s.name)] = (names, len(names) == len(found))
        for t in names:
            owners.setdefault(t, []).append(s.name)
    baseline = frozenset(t.name for m, a in analysis.decls(ir.Agent) for t in
                         (analysis.lookup(m, r, ir.Tool) for r in a.tools) if t is not None)
    for m, s in skills:
        names, complete = owned[(m, s.name)]
        text = s.body.value
        # Speed: most bodies name no tool and call nothing: two scans of the text, no more
        named = [w for w in _WORD.findall(text) if w in owners]
        if not (named or "(" in text):
            continue
        if not complete or analysis.misspelt(m, s):
            continue  # (its tools are unknown: AFP104 or AFP101 is the root cause)
        yield from _body(s, named, set(names), baseline, owners, tools)


def _body(s: ir.Skill, named: list[str], own: set[str], baseline: frozenset[str],
          owners: dict[str, list[str]], tools: frozenset[str]) -> Iterator[Diagnostic]:
    text, span = s.body.value, s.body.span
    for name in sorted(set(named)):
        if name in own or name in baseline or s.name in owners[name]:
            continue
        others = ", ".join(f"`{o}`" for o in owners[name])
        yield diag("AFP214", f"the body of skill `{s.name}` names `{name}`, a tool of {others}",
                   span, "names a tool this skill does not have",
                   notes=(f"while `{s.name}` is active the model is not offered `{name}` "
                          f"(it is a tool of {others}, and no agent's baseline tool)",),
                   help=f"add `{name}` to the `tools` of `{s.name}`, or reword the body")
    for name in dict.fromkeys(_CALL.findall(text) if "(" in text else ()):
        if name not in tools and name not in BUILTINS:
            close = closest(name, sorted(tools))
            yield diag("AFP215", f"the body of skill `{s.name}` calls `{name}(...)`, and no tool "
                       f"has that name", span, "no such tool",
                       help=f"did you mean `{close}`?" if close else
                       "name a declared tool, or write the step without call syntax")
