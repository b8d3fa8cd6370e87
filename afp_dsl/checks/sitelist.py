"""Where expressions stand: every expression site of a program, and the site of one route's guard.

Role:       checks layer; `sites(analysis)` lists every entry, route, `when`, policy rule and
            `check_in` expression as a `sites.Site` (read by exprs, guards and regexes),
            `route_site` gives a route's (routes), `policy_sites` a policy's rules' (policies).
            Split from `sites`, which says what is known at each site.
Invariants: pure; computed once per analysis (its memo), so each route's site is the same object
            for every check that asks.
"""
from __future__ import annotations

from typing import Iterator

import attrs

from .. import ir
from ..analysis import Analysis
from .schemas import mark_broken
from .sites import STATUSES, Site


def sites(analysis: Analysis) -> tuple[Site, ...]:
    """Every expression site of the program (computed once per analysis)."""
    return analysis.memo("sites", lambda: tuple(_sites(analysis)))


def tool_names(analysis: Analysis) -> tuple[str, ...]:
    """Every tool name a run of the program can see: its tools' (the host binds only
    declared ones) and the built-ins'; what `tool` and `last.tool` can be. () when an import
    failed (AFP107, AFP108): the names are not all known then."""
    def make() -> tuple[str, ...]:
        if any(not imp.module for m in analysis.modules.values() for imp in m.imports):
            return ()
        return tuple(sorted({d.name for _, d in analysis.decls() if type(d) is ir.Tool}
                            | {"read_skill", "skip_step"}))
    return analysis.memo("tool-names", make)


def skill_names(analysis: Analysis) -> tuple[str, ...]:
    """Every skill name of the program: what `skill` can be (or null). () when an import
    failed, as for `tool_names`."""
    def make() -> tuple[str, ...]:
        if not tool_names(analysis):
            return ()
        return tuple(sorted({d.name for _, d in analysis.decls() if type(d) is ir.Skill}))
    return analysis.memo("skill-names", make)


def _sites(analysis: Analysis) -> Iterator[Site]:
    # Speed: declarations told apart by exact type (the IR classes have no subclasses); most are
    # tools and skills, which the first two tests settle
    for module, decl in analysis.decls():
        t = type(decl)
        if t is ir.Tool:
            if decl.check_in is not None:
                yield Site(module, "check_in", decl.check_in,
                           f"the `check_in` of tool `{decl.name}`", tool=decl, on=decl.name,
                           skills=skill_names(analysis))
        elif t is ir.Skill:
            continue
        elif t is ir.Graph:
            yield from _graph_sites(analysis, module, decl)
        elif (t is ir.Fact or t is ir.Instruction) and decl.when is not None:
            yield Site(module, "context", decl.when, f"{ir.kind_of(decl)} `{decl.name}`",
                       names=tool_names(analysis), skills=skill_names(analysis))
        elif t is ir.Policy:
            yield from policy_sites(analysis, module, decl)


def _graph_sites(analysis: Analysis, module: str, g: ir.Graph) -> Iterator[Site]:
    for e in g.entries:
        if e.when is not None:
            yield Site(module, "entry", e.when, f"the entry `{e.skill}` of graph `{g.name}`")
    made = _route_sites(analysis)
    for r in g.routes:
        if r.when is not None:
            site = made.get((module, id(r)))
            if site is None:
                site = made[(module, id(r))] = _route_site(analysis, module, r)
            yield site


def route_site(analysis: Analysis, module: str, g: ir.Graph, r: ir.Route) -> Site:
    """The site of a route's guard (the same object each time it is asked, per analysis: the
    expression checks, the guard checks and the route pairs all read it)."""
    made = _route_sites(analysis)
    site = made.get((module, id(r)))
    if site is None:
        site = made[(module, id(r))] = _route_site(analysis, module, r)
    return site


def _route_sites(analysis: Analysis) -> dict[tuple[str, int], Site]:
    """The route sites made so far for `analysis`, by (module, id of the route): the analysis
    holds its program, so a route's id is not reused while the entry lives."""
    return analysis.memo("route-sites", dict)


def _route_site(analysis: Analysis, module: str, r: ir.Route) -> Site:
    tool = _lookup_tool(analysis, module, r.on) if r.on is not None else None
    on = tool.name if tool is not None else None
    src = analysis.lookup(module, r.src, ir.Skill)
    if r.on is None and src is not None and r.when is not None:  # `when tool == "t"` pins `t`
        tool = _pinned_tool(analysis, analysis.resolve(module, r.src).module, src, r.when)
    statuses = tuple(s.name for s in r.status if s.name in STATUSES) if r.status else ()
    hears = _heard(analysis, analysis.resolve(module, r.src).module, src) \
        if r.on is None and src is not None else ()
    if tool is None and len(hears) == 1 and len(src.tools) == 1:  # (the one tool it hears)
        tool = analysis.lookup(analysis.resolve(module, r.src).module, src.tools[0], ir.Tool)
    return Site(module, "route", r.when, f"route `{r.src} -> {r.dst}`", tool=tool, on=on,
                statuses=statuses, skill=src.name if src else None, hears=hears,
                names=tool_names(analysis))


def _heard(analysis: Analysis, module: str, src: ir.Skill) -> tuple[str, ...]:
    """The tools a route without `on` hears: its source skill's (semantics §4, `cursor`), by
    the names the run gives them; () when not known (no tools: AFP209; a misspelt one: AFP101)."""
    found = [analysis.lookup(module, ref, ir.Tool) for ref in src.tools]
    if not found or any(t is None for t in found):
        return ()
    return tuple(sorted({t.name for t in found}))


def _pinned_tool(analysis: Analysis, module: str, src: ir.Skill, when: ir.Expr) -> ir.Tool | None:
    """The tool of `src` (declared in `module`) that a top-level `tool == "name"` conjunct names."""
    items = when.items if isinstance(when, ir.And) else (when,)
    for c in items:
        if not (isinstance(c, ir.Compare) and c.op == "=="):
            continue
        sides = (c.left, c.right)
        names = [s.value for s in sides if isinstance(s, ir.Lit) and isinstance(s.value, str)]
        if names and any(isinstance(s, ir.Path) and s.root == "tool" and not s.segments for s in sides):
            for ref in src.tools:
                t = analysis.lookup(module, ref, ir.Tool)
                if t is not None and t.name == names[0]:
                    return t
    return None


def policy_sites(analysis: Analysis, module: str, p: ir.Policy) -> Iterator[Site]:
    for block in p.blocks:
        tool = None
        if block.tool is not None:
            tool = _lookup_tool(analysis, module, block.tool)
        for rule in block.rules:
            what = f"`{block.moment} {block.tool}`" if block.tool else (
                f"`{block.moment} *`" if block.any_tool else f"`{block.moment}`")
            yield Site(module, block.moment, rule.when,
                       f"the `{rule.action}` rule of policy `{p.name}` ({what})",
                       tool=tool, on=tool.name if tool else None, names=tool_names(analysis),
                       skills=skill_names(analysis))


def _lookup_tool(analysis: Analysis, module: str, ref: ir.Ref) -> ir.Tool | None:
    """The tool `ref` names; when its name is declared twice (AFP103), with copies of its
    schemas taken as broken (as an AFP301 one is): which declaration the expression was written
    against is unknown, so its paths are not typed (one root cause, one diagnostic)."""
    tool = analysis.lookup(module, ref, ir.Tool)
    r = analysis.resolve(module, ref) if tool is not None else None
    m = analysis.modules.get(r.module) if r is not None else None
    if m is None or tool.name not in analysis.memo(("declared twice", r.module),
                                                   lambda: _twice(m)):
        return tool
    untyped = {k: attrs.evolve(v) for k, v in (("input", tool.input), ("output", tool.output)) if v is not None}
    for schema in untyped.values():
        mark_broken(schema)
    return attrs.evolve(tool, **untyped)


def _twice(module: ir.Module) -> frozenset[str]:
    """The names `module` declares more than once (counted once per module, not per site)."""
    seen: set[str] = set()
    return frozenset(d.name for d in module.decls if d.name in seen or seen.add(d.name))
