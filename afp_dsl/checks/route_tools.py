"""AFP209 route-tool-not-in-skill: routes waiting for a tool their source skill cannot hear.

Role:       checks layer, split from `graph` (its caller, per graph view): an `on TOOL` route
            whose tool is neither the source skill's, nor one the agents using the graph can
            call from anywhere (a baseline tool, an open skill's tool: `read_skill` loads it
            from any skill), nor a persistent base's (an unconditional entry's, offered every
            iteration); a route without `on` out of a skill with no tools.
Emits:      AFP209 route-tool-not-in-skill (an error when no agent using the graph has the
            tool; a warning when some do, when no agent uses the graph, and for a route without
            `on` out of a skill with no tools, which is dead whatever the agents).
Invariants: one diagnostic per source skill for the routes without `on` (one root cause); a
            misspelt tool or attribute (AFP101, AFP104) decides nothing; under `tool_scope =
            "always"` a tool of another graph skill is offered while the source is current, and
            the diagnostic says so instead of "never returns".
"""
from __future__ import annotations

from typing import Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label, Severity
from . import graphview as G
from .graphview import GraphView, NodeKey, RouteEdge


def route_tools(analysis: Analysis, v: GraphView) -> Iterator[Diagnostic]:
    agents = G.agents_of_graph(analysis, v.module, v.graph)
    # what each agent can call from anywhere: baseline tools and its open skills' tools
    baselines = [(a, G.anytime_tools(analysis, m, a)) for m, a in agents]
    deaf: dict[NodeKey, list[RouteEdge]] = {}  # no `on`, and the source skill has no tools to hear
    owners: dict[NodeKey, NodeKey] | None = None  # (built at the first AFP209 `on` route)
    if any(analysis.misspelt(m, a) for m, a in agents):
        return  # an agent's misspelt attribute (`tols`) hides its baseline tools (AFP104)
    for e in v.routes:
        if analysis.misspelt(e.src[0], v.nodes[e.src].skill):
            continue  # the skill's misspelt attribute (`tols`) hides its tools (AFP104)
        if e.route.on is None and e.index in v.dead:
            deaf.setdefault(e.src, []).append(e)
    for e in v.routes:
        if analysis.misspelt(e.src[0], v.nodes[e.src].skill):
            continue
        if e.route.on is None:
            if deaf.get(e.src, [None])[0] is e:  # one root cause (the skill has no tools): once
                yield _no_tools(deaf[e.src])
            continue
        r = analysis.resolve(v.module, e.route.on)
        if r is None or not isinstance(r.decl, ir.Tool):
            continue
        tool = (r.module, r.decl.name)
        skill = v.nodes[e.src].skill
        if tool in v.own_tools(analysis, e.src):
            continue
        bases = v.base_tools(analysis)  # (a persistent base's tools are offered every iteration)
        if bases is None or tool in bases:
            continue
        if G.has_unresolved(analysis, e.src[0], skill.tools) or any(
                base is None for _, base in baselines):
            continue  # a misspelt tool name is the root cause, reported as AFP101
        lacking = [a.name for a, base in baselines if tool not in base]
        if baselines and not lacking:
            continue
        if owners is None:
            owners = _tool_owners(analysis, v)
        offered = owners.get(tool) if not v.graph.scope_tools and (
            not agents or any(a.tool_scope != "active" for _, a in agents)) else None
        yield _route_tool(v, e, skill, lacking, baselines, offered)


def _tool_owners(analysis: Analysis, v: GraphView) -> dict[NodeKey, NodeKey]:
    """Each tool of the graph's skills → the first skill (in node order) that has it."""
    owners: dict[NodeKey, NodeKey] = {}
    for k in v.nodes:
        for tool in v.own_tools(analysis, k):
            owners.setdefault(tool, k)
    return owners


def _route_tool(v: GraphView, e: RouteEdge, skill: ir.Skill, lacking, baselines,
                offered: NodeKey | None) -> Diagnostic:
    """AFP209 for an `on` tool outside the source skill; `offered`: a skill of the graph that
    has it, when `tool_scope = "always"` offers it while the source is current all the same."""
    on = e.route.on
    msg = f"route `{e.route.src} -> {e.route.dst}` waits for `{on}`, which `{skill.name}` cannot call"
    sev, notes = None, [f"`{on}` is not one of the tools of `{skill.name}`"]
    label = "never returns while the source skill is current"
    if offered is not None:  # (not dead: the route is outside the rule, not proved never to fire)
        msg = f"route `{e.route.src} -> {e.route.dst}` waits for `{on}`, which is not a tool of " \
              f"`{skill.name}`"
        label = f"not a tool of `{skill.name}`"
    if not baselines:
        sev = Severity.WARNING
        notes.append(f"no agent uses graph `{v.graph.name}`, so baseline tools and open skills' "
                     "tools were not considered")
    elif len(lacking) < len(baselines):
        sev = Severity.WARNING
        notes.append("some agents using the graph can call it from anywhere (a baseline tool or "
                     "an open skill's), but not " + ", ".join(f"`{n}`" for n in lacking))
    else:
        notes.append("nor a baseline tool or an open skill's tool of "
                     + ", ".join(f"`{n}`" for n in lacking))
    if offered is not None:
        notes.append(f"`{on}` is a tool of `{v.name(offered)}`: with `tool_scope = \"always\"` (the "
                     f"default) the model is offered it while `{skill.name}` is current too, and "
                     "the route fires if the model calls it there; a route is meant to wait for "
                     "its source skill's own tools")
    return diag("AFP209", msg, on.span, label,
                notes=notes, help=f"add `{on}` to the `tools` of `{skill.name}`", severity=sev)


def _no_tools(edges: list[RouteEdge]) -> Diagnostic:
    """AFP209 as a warning, like a shadowed route (AFP205) or a dead entry (AFP204): the routes
    without `on` out of a skill with no tools are dead, though the model can still move the
    cursor along them, as along bare routes. One diagnostic per source skill, at its first."""
    e = edges[0]
    src, dst = e.route.src, e.route.dst
    what = f"route `{src} -> {dst}` waits" if len(edges) == 1 else \
        f"{len(edges)} routes out of `{src}` without `on` wait"
    targets = list(dict.fromkeys(f"`{x.route.dst}`" for x in edges))
    shown = targets[0] if len(targets) == 1 else ", ".join(targets[:-1]) + " and " + targets[-1]
    return diag("AFP209", f"{what} for a result of a tool of `{src}`, which has no tools",
                e.route.span, "never fires",
                secondary=tuple(Label(x.route.span, "never fires either", False) for x in edges[1:]),
                notes=("a route without `on` hears only the results of its source skill's own "
                       "tools; a baseline tool or a built-in (`read_skill`, `skip_step`) never "
                       "fires it",
                       f"the model can still move the cursor to {shown} with `read_skill`"),
                help=f"add the tools whose results should move the cursor to the `tools` of "
                     f"`{src}`, or name one with `on TOOL`", severity=Severity.WARNING)
