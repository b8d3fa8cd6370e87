"""Skill bodies that name tools the skill does not have (the original's body-* checks).

Role:       checks layer; `check_bodies(analysis)` reads each skill's `body` text for tool names.
Emits:      AFP214 body-foreign-tool (warning): the body names, as a whole word, a tool of
            another skill that is not offered while it is active (every agent using the skill
            has `tool_scope = "active"`; not one of its own, a baseline tool or a persistent
            base's);
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
from . import graphview as G
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
    scoped = _scoped_users(analysis)
    for m, s in skills:
        names, complete = owned[(m, s.name)]
        users = scoped.get((m, s.name))  # (None: some agent offers it every tool, no AFP214)
        text = s.body.value
        # Speed: most bodies name no tool and call nothing: two scans of the text, no more
        named = [w for w in _WORD.findall(text) if w in owners]
        if not (named or "(" in text):
            continue
        if not complete or analysis.misspelt(m, s):
            continue  # (its tools are unknown: AFP104 or AFP101 is the root cause)
        yield from _body(s, named if users is not None else [], set(names), baseline | (users or set()),
                         owners, tools)


def _scoped_users(analysis: Analysis) -> dict[tuple[str, str], frozenset[str]]:
    """For each skill that every agent using it runs scoped (only the active skills' tools are
    offered: the agent's `tool_scope = "active"`, or, for the graph's skills, the graph's
    `scope_tools = true`; the default offers every skill's tools), the tools offered beside its
    own whatever is active: those of the graph's persistent bases (its unconditional entries).
    A skill some agent uses with every tool offered is left out."""
    out: dict[tuple[str, str], set[str]] = {}
    open_to_all: set[tuple[str, str]] = set()
    for m, a in analysis.decls(ir.Agent):
        keys = [(r.module, r.decl.name, a.tool_scope == "active")
                for r in (analysis.resolve(m, ref) for ref in a.skills)
                if r is not None and isinstance(r.decl, ir.Skill)]
        bases: set[str] = set()
        g = G.agent_graph(analysis, m, a)
        if g is not None:
            v = G.view(analysis, g[0], g[1])
            keys += [(*k, a.tool_scope == "active" or g[1].scope_tools) for k in v.nodes]
            for e in v.entries:
                if e.entry.when is None:
                    node = v.nodes[e.dst]
                    bases.update(t.name for t in (analysis.lookup(e.dst[0], r, ir.Tool)
                                                  for r in node.skill.tools) if t is not None)
        for module, name, scoped in keys:
            if not scoped:
                open_to_all.add((module, name))
            else:
                out.setdefault((module, name), set()).update(bases)
    return {k: frozenset(v) for k, v in out.items() if k not in open_to_all}


def _body(s: ir.Skill, named: list[str], own: set[str], baseline: frozenset[str] | set[str],
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
