"""Witness paths: how a skill is reached from an entry, for `afpc check --explain-reach SKILL`.

Role:       checks layer; `explain_reach` gives the hops of a shortest path, preferring routes that
            can fire by themselves; `reach_report` words it per graph. Split from `graph`.
Invariants: a route proved never to fire (`GraphView.dead`, or shadowed or duplicated: AFP205)
            counts, like a bare route, only as a model pick, and its hop says so; an entry after
            the first unconditional one is marked as never starting a run.
"""
from __future__ import annotations

from typing import Any

from .. import ir
from ..analysis import Analysis
from ..evaluate import render_expr
from ..suggest import closest
from . import graphview as G
from .graph import skill_names
from .graphview import EntryEdge, GraphView, RouteEdge
from .routes import NeverFires, never_fires, silent_routes


def hop_text(v: GraphView, e: EntryEdge | RouteEdge,
             never: dict[int, NeverFires] | None = None) -> str:
    """`entry triage [when …]` or `→ refunds on t status s when …` (source syntax); `never`:
    the routes AFP205 proves never to fire (`routes.never_fires`), marked like dead ones."""
    if isinstance(e, EntryEdge):
        when = f" when {render_expr(e.entry.when)}" if e.entry.when is not None else ""
        first = next((x for x in v.entries if x.entry.when is None), None)
        dead = (f" (never starts a run: `entry {v.name(first.dst)}` has no condition and comes "
                f"first; only when the model picks it)"
                if first is not None and e.index > first.index and e.entry.when is not None else "")
        return f"entry {v.name(e.dst)}{when}{dead}"
    r = e.route
    parts = [f"→ {v.name(e.dst)}"]
    if r.on is not None:
        parts.append(f"on {r.on}")
    if r.status:
        names = [s.name for s in r.status]
        parts.append("status " + (names[0] if len(names) == 1 else "[" + ", ".join(names) + "]"))
    if r.when is not None:
        parts.append(f"when {render_expr(r.when)}")
    if not r.deterministic:
        parts.append("(bare route: when the model picks it)")
    elif e.index in v.dead:
        why = f"`{r.src}` has no tools" if r.on is None else f"`{r.src}` cannot call `{r.on}`"
        parts.append(f"(never fires: {why}; only when the model picks it)")
    elif never and e.index in never:
        parts.append(f"(never fires: {never[e.index].why()}; only when the model picks it)")
    return " ".join(parts)


def explain_reach(analysis: Analysis, graph_module: str, graph: ir.Graph, skill: str) -> list[str] | None:
    """The hops of a shortest path from an entry to `skill` (preferring routes that can fire by
    themselves: a route proved never to fire, dead or shadowed, counts, like a bare route, only
    as a model pick).

    Joined with spaces they read `entry triage → refunds on lookup_order when …`; None when the
    skill is not in the graph or no path reaches it.
    """
    v = G.view(analysis, graph_module, graph)
    key = _node_of(analysis, v, skill)
    if key is None:
        return None
    path = v.path_to(key, True, silent_routes(analysis, v)) or v.path_to(key, False)
    return [hop_text(v, e, never_fires(analysis, v)) for e in path] if path else None


def _node_of(analysis: Analysis, v: Any, skill: str) -> Any:
    """The node of `skill` in graph view `v`: the skill its name (`name`, `alias.name`) resolves
    to in the root module, so two skills of one name in different modules stay apart; a name
    the root module does not resolve matches a node by its bare skill name (a skill of an
    imported module, written without its alias)."""
    alias, _, name = skill.rpartition(".")
    hit = analysis.resolve(analysis.program.root, ir.Ref(name=name, alias=alias or None))
    if hit is not None and isinstance(hit.decl, ir.Skill):
        return (hit.module, name) if (hit.module, name) in v.nodes else None
    return next((k for k, n in v.nodes.items() if skill in (n.name, n.skill.name)), None)


def reach_report(analysis: Analysis, skill_name: str) -> str:
    """Text for `afpc check --explain-reach SKILL`: one paragraph per graph holding the skill."""
    out = []
    for v in G.views(analysis):
        if _node_of(analysis, v, skill_name) is None:
            continue
        hops = explain_reach(analysis, v.module, v.graph, skill_name)
        where = f"graph `{v.graph.name}` ({v.module})"
        if hops is None:
            entries = skill_names(v, [e.dst for e in v.entries]) if v.entries else "none"
            out.append(f"skill `{skill_name}` is unreachable in {where}; entries: {entries}")
        else:
            out.append(f"skill `{skill_name}` in {where} is reached by:\n  " + "\n  ".join(hops))
    if not out:
        names = sorted({n for v in G.views(analysis) for x in v.nodes.values()
                        for n in (x.name, x.skill.name)})
        close = closest(skill_name, names)
        return f"skill `{skill_name}` is in no graph" + (f"; did you mean `{close}`?" if close else "")
    return "\n".join(out)
