"""Skill-graph checks: entries, reachability, dead ends, self-loops, route tools, agent cycles.

Role:       checks layer; one `GraphView` per graph (`reach.explain_reach` gives the witness path
            for `--explain-reach`; `way_in` the short ones in AFP203 and AFP207 notes).
Emits:      AFP201 no-entry, AFP202 unreachable-skill, AFP203 model-edge-only, AFP204 dead-entry,
            AFP206 self-loop, AFP207 no-way-out, AFP209 route-tool-not-in-skill (through
            `route_tools`), AFP211 step-tool-not-in-skill, AFP212 skill-in-two-places,
            AFP213 agent-tool-cycle (AFP205/AFP210 live in `routes`).
Invariants: linear in the size of the program (BFS, Tarjan); one diagnostic per unreachable
            region (its first skill, naming the skills behind it). AFP207 claims only: a cycle of
            ≥2 skills that no route leaves, each of whose skills has tools and a deterministic
            route onward inside the cycle that can fire (none is a tool-free answering step).
            A route proved never to fire (`GraphView.dead`, or shadowed or duplicated: AFP205)
            still lets the model pick its target (AFP202 counts it, as the run's `read_skill`
            does) but is no witness of a deterministic way in: `explain_reach` prefers routes
            that can fire and marks it.
            AFP204 is for conditional entries after the first unconditional one, and for a
            conditional entry whose `when` the solver proves covered by the earlier ones.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label
from . import graphview as G
from .graphview import GraphView, NodeKey
from . import sites as S
from .exprs import has_unknown_operand
from .route_tools import route_tools
from .routes import silent_routes
from .solver import refute
from .way_in import WayIn, into_cycle, text as way_in_text


def check_graph(analysis: Analysis) -> Iterable[Diagnostic]:
    for v in G.views(analysis):
        yield from check_view(analysis, v)
    yield from _step_tools(analysis)
    yield from _two_places(analysis)
    yield from _agent_cycles(analysis)


def check_view(analysis: Analysis, v: GraphView) -> Iterator[Diagnostic]:
    g = v.graph
    if not g.entries:
        yield diag("AFP201", f"graph `{g.name}` has no entry", g.span, "no `entry` statement",
                   help="add `entry SKILL` (always active) or `entry SKILL when EXPR`")
    elif v.entries:
        if v.complete:  # (an endpoint that names no skill is reported already; no cascade)
            yield from _reachability(v)
        yield from _dead_entries(v)
        yield from _covered_entries(analysis, v)
        if v.complete:
            yield from _no_way_out(analysis, v)
    yield from _self_loops(v)
    yield from route_tools(analysis, v)


# ---------------------------------------------------------------- reachability
def _reachability(v: GraphView) -> Iterator[Diagnostic]:
    det = v.reach(deterministic_only=True)
    anyway = v.reach(deterministic_only=False)
    entries = skill_names(v, [e.dst for e in v.entries])
    unreached = [k for k in v.nodes if k not in anyway]
    for root, behind in _region_roots(v, unreached, deterministic_only=False):
        notes = [f"the entries of graph `{v.graph.name}` are {entries}"]
        if behind:
            notes.append(f"{skill_names(v, behind)} {'is' if len(behind) == 1 else 'are'} "
                         "unreachable only through it")
        yield diag("AFP202", f"skill `{v.name(root)}` is unreachable from the entries of graph "
                   f"`{v.graph.name}`", v.nodes[root].ref.span, "no entry or route reaches it",
                   notes=notes, help=f"add an entry or a route into `{v.name(root)}`, or remove it")
    model_only = [k for k in v.nodes if k in anyway and k not in det]
    ways = (WayIn(v, det), WayIn(v, anyway))
    for root, behind in _region_roots(v, model_only, deterministic_only=True, reached=anyway):
        yield _model_only(v, root, behind, anyway, ways)


def _model_only(v: GraphView, root: NodeKey, behind: list[NodeKey], anyway,
                ways: tuple[WayIn, WayIn]) -> Diagnostic:
    bare = [e for e in v.routes if e.dst == root and not e.deterministic and e.src in anyway]
    first = bare[0] if bare else None
    sources = skill_names(v, list(dict.fromkeys(e.src for e in bare)))
    notes = [f"its only ways in are bare routes (from {sources}); a bare route never fires by "
             "itself, it only lets `read_skill` move the cursor"]
    if behind:
        notes.append(f"{skill_names(v, behind)} {'is' if len(behind) == 1 else 'are'} reached only "
                     "through it")
    way_in = (ways[0].hops(first.src, first) or ways[1].hops(first.src, first)) if first \
        else ways[1].hops(root)
    if way_in:
        notes.append(f"a path in: {way_in_text(v, way_in)}")
    span = first.route.span if first else v.nodes[root].ref.span
    return diag("AFP203", f"skill `{v.name(root)}` can only be entered when the model picks it",
                span, "a bare route", notes=notes,
                help=f"give a route into `{v.name(root)}` an `on`, `status` or `when` if it must "
                     "be reached by itself")


def _region_roots(v: GraphView, region: list[NodeKey], deterministic_only: bool, reached=()):
    """(first skill, skills behind it) for each source component of `region`'s subgraph. A
    component's first skill is one that a route from a `reached` skill enters from outside the
    component's subgraph, if any (else the first declared), so the diagnostic names a real way in."""
    if not region:  # Speed: the usual case; spares the passes over every route below
        return
    inside = set(region)
    out = v.out_edges()
    entered = {e.dst for e in v.routes if e.dst in inside and e.src in reached
               and (e.src not in inside or (deterministic_only and not e.deterministic))}

    def succ(k):
        return [e.dst for e in out[k] if e.dst in inside and (e.deterministic or not deterministic_only)]
    comps = G.sccs(region, succ)
    comp_of = {k: i for i, c in enumerate(comps) for k in c}
    has_in = set()
    for k in region:
        for d in succ(k):
            if comp_of[d] != comp_of[k]:
                has_in.add(comp_of[d])
    order = {k: i for i, k in enumerate(v.nodes)}
    roots = sorted((min(c, key=lambda k: (k not in entered, order[k]))
                    for i, c in enumerate(comps) if i not in has_in), key=order.get)
    owner: dict[NodeKey, NodeKey] = {}
    for r in roots:  # multi-source search: a skill is listed under the first root reaching it
        todo = [r]
        owner.setdefault(r, r)
        while todo:
            for d in succ(todo.pop()):
                if d not in owner:
                    owner[d] = r
                    todo.append(d)
    for r in roots:
        yield r, [k for k in region if owner.get(k) == r and k != r]


def skill_names(v: GraphView, keys: list[NodeKey], limit: int = 6) -> str:
    shown = [f"`{v.name(k)}`" for k in keys[:limit]]
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    if len(shown) == 1:
        return shown[0]
    return (", ".join(shown[:-1]) + " and " + shown[-1]) if not more else ", ".join(shown) + more


def _dead_entries(v: GraphView) -> Iterator[Diagnostic]:
    """Conditional entries after the first unconditional one: the cold start never gets to them.
    A later unconditional entry is not dead: it is a persistent base, active every iteration;
    but the cursor never starts on it, so without a route into it its own routes never fire."""
    first = next((e for e in v.entries if e.entry.when is None), None)
    if first is None:
        return
    yield from _stranded_bases(v, first)
    bases: dict[NodeKey, G.EntryEdge] = {}
    for e in v.entries:
        if e.entry.when is None:
            if e.dst in bases:  # (the same persistent base again: it adds nothing)
                yield diag("AFP204", f"entry `{v.name(e.dst)}` repeats an earlier entry",
                           e.entry.span, "already an entry",
                           secondary=(Label(bases[e.dst].entry.span, "the same entry", False),),
                           notes=(f"`{v.name(e.dst)}` is already an unconditional entry, active "
                                  "every iteration; a second one changes nothing",),
                           help="remove it")
            bases.setdefault(e.dst, e)
        elif e.index > first.index:
            yield diag("AFP204", f"entry `{v.name(e.dst)}` can never start a run", e.entry.span,
                       "after an unconditional entry",
                       secondary=(Label(first.entry.span, "this entry always fires first", False),),
                       notes=(f"entries are tried in order and `entry {v.name(first.dst)}` has no "
                              "condition; the model can still pick it with `read_skill`",),
                       help="move it before the unconditional entry, or route into it")


def _stranded_bases(v: GraphView, first: G.EntryEdge) -> Iterator[Diagnostic]:
    """A later unconditional entry with routes of its own (the original's dead-entry-step):
    the cursor starts on the first unconditional entry, and with no route into this one it
    becomes the cursor only when the model picks it (`read_skill`; an entry is always
    reachable), so its routes fire only after such a pick. A bare route into it is no way in:
    it only allows a pick too."""
    into = {e.dst for e in v.routes if e.src != e.dst and e.deterministic}
    told = set()  # (the same entry again is AFP204 "repeats", once)
    for e in v.entries:
        if e.index <= first.index or e.entry.when is not None or e.dst in into or e.dst == first.dst \
                or e.dst in told:
            continue
        told.add(e.dst)
        out = [r for r in v.routes if r.src == e.dst and r.deterministic]
        if out:
            yield diag("AFP204", f"the routes out of entry `{v.name(e.dst)}` fire only after the "
                       f"model picks it", e.entry.span, "the cursor starts elsewhere",
                       secondary=(Label(first.entry.span, "the cursor starts here", False),)
                       + tuple(Label(r.route.span, "fires only from a model pick", False)
                               for r in out),
                       notes=(f"`entry {v.name(first.dst)}` comes first and has no condition, so "
                              f"the cursor starts there; `{v.name(e.dst)}` is active every "
                              "iteration as a base, but only `read_skill` moves the cursor to it",),
                       help=f"route into `{v.name(e.dst)}`, or make it the first entry")


def _covered_entries(analysis: Analysis, v: GraphView) -> Iterator[Diagnostic]:
    """Conditional entries (before any unconditional one) whose `when` can hold only where an
    earlier entry's holds: its condition and the negation of every earlier one are refuted
    together. A condition that never holds (AFP208) or names something unknown decides nothing."""
    earlier: list[tuple[G.EntryEdge, ir.Expr]] = []
    for e in v.entries:
        when = e.entry.when
        if when is None:
            return  # the later ones are `_dead_entries`'
        site = S.Site(v.module, "entry", when, f"the entry `{e.entry.skill}` of graph `{v.graph.name}`")
        facts = S.facts(site)
        if has_unknown_operand(analysis, site) or refute([when], facts, reasons=False) is not None:
            continue
        negated = [ir.Not(item=w, span=w.span) for _, w in earlier]
        if earlier and refute([when] + negated, facts, reasons=False) is not None:
            yield diag("AFP204", f"entry `{v.name(e.dst)}` can never start a run", e.entry.span,
                       "covered by earlier entries",
                       secondary=tuple(Label(x.entry.span, "tried first", False) for x, _ in earlier),
                       notes=("entries are tried in order and wherever this condition holds an "
                              "earlier entry's holds too; the model can still pick it with "
                              "`read_skill`",),
                       help="move it before the entries that cover it, or narrow their conditions")
            continue
        earlier.append((e, when))


# ---------------------------------------------------------------- loops
def _self_loops(v: GraphView) -> Iterator[Diagnostic]:
    for e in v.routes:
        if e.src == e.dst:
            yield diag("AFP206", f"route `{e.route.src} -> {e.route.dst}` goes from a skill to itself",
                       e.route.span, "self-loop",
                       notes=("a self-loop never moves the cursor; it only restarts the skill's steps",),
                       help="remove the route")


def _no_way_out(analysis: Analysis, v: GraphView) -> Iterator[Diagnostic]:
    if not _may_be_closed(v):
        return  # Speed: the usual graph; spares the strongly connected components below
    out = v.out_edges()
    anyway = v.reach(deterministic_only=False)
    comps = G.sccs(list(v.nodes), lambda k: [e.dst for e in out[k]])
    silent: frozenset[int] | None = None  # (these three settled at the first closed cycle)
    ways: tuple[WayIn, WayIn] = ()  # type: ignore[assignment]
    order: dict[NodeKey, int] = {}
    for comp in comps:
        if len(comp) < 2 or not all(k in anyway for k in comp):
            continue
        inside = set(comp)
        if any(e.dst not in inside for k in comp for e in out[k]):
            continue
        if not all(v.nodes[k].skill.tools for k in comp):
            continue
        if silent is None:
            silent = silent_routes(analysis, v)  # (asked only here: it needs the pairs of routes)
            ways = (WayIn(v, v.reach(True, silent)), WayIn(v, anyway))
            order = {k: i for i, k in enumerate(v.nodes)}
        if all(any(e.deterministic and e.index not in silent and e.dst != k for e in out[k])
               for k in comp):
            comp = sorted(comp, key=order.get)
            first = v.nodes[comp[0]]
            way_in = into_cycle(comp, ways)
            yield diag("AFP207", f"skills {skill_names(v, comp, 10)} form a cycle with no way out",
                       first.ref.span, "the cycle starts here",
                       notes=("no route leaves the cycle, every skill in it has tools and a "
                              "route onward inside it, so none is a tool-free answering step",
                              *((f"the cursor gets in by: {way_in_text(v, way_in)}",)
                                if way_in else ()),
                              "the model can still answer at any time; check that it should "
                              "not hand over to a closing skill"),
                       help="add a route from the cycle to a skill that answers")


def _may_be_closed(v: GraphView) -> bool:
    """Could a cycle of two or more skills have no way out? Not when every skill reaches a
    skill with no routes out: such a cycle reaches only its own skills, which all have one."""
    out = v.out_edges()
    into: dict[NodeKey, list[NodeKey]] = {}
    for e in v.routes:
        into.setdefault(e.dst, []).append(e.src)
    todo = [k for k, edges in out.items() if not edges]
    seen = set(todo)
    while todo:
        for src in into.get(todo.pop(), ()):
            if src not in seen:
                seen.add(src)
                todo.append(src)
    return len(seen) < len(out)


# ---------------------------------------------------------------- tools
def _step_tools(analysis: Analysis) -> Iterator[Diagnostic]:
    for module, s in analysis.decls(ir.Skill):
        if not s.steps or G.has_unresolved(analysis, module, s.tools) or analysis.misspelt(module, s):
            continue  # a misspelt tool name is the root cause, reported as AFP101
        own = G.tool_keys(analysis, module, s.tools)
        for step in s.steps:
            r = analysis.resolve(module, step.tool)
            if r is None or not isinstance(r.decl, ir.Tool) or (r.module, r.decl.name) in own:
                continue
            yield diag("AFP211", f"step `{step.tool}` is not one of the tools of skill `{s.name}`",
                       step.tool.span, "not in `tools`",
                       help=f"add `{step.tool}` to the `tools` of `{s.name}`")


def _two_places(analysis: Analysis) -> Iterator[Diagnostic]:
    for module, a in analysis.decls(ir.Agent):
        g = G.agent_graph(analysis, module, a)
        if g is None or not a.skills:
            continue
        v = G.view(analysis, g[0], g[1])
        for ref in a.skills:
            r = analysis.resolve(module, ref)
            if r is not None and (r.module, r.decl.name) in v.nodes:
                yield diag("AFP212", f"skill `{ref}` is both open and in graph `{g[1].name}`",
                           ref.span, "open skill",
                           notes=("an open skill is accepted from anywhere and never moves the "
                                  "cursor, so its routes in the graph are easy to misread",),
                           help=f"keep `{ref}` in one place")


def _agent_cycles(analysis: Analysis) -> Iterator[Diagnostic]:
    # Speed: only a tool run by an agent makes a call edge; without one there is no cycle, and
    # the walk over every agent's every tool below is spared.
    if not any(isinstance(t.impl, ir.AgentImpl) for _, t in analysis.decls(ir.Tool)):
        return
    agents = {(m, a.name): a for m, a in analysis.decls(ir.Agent)}
    calls: dict[NodeKey, list[tuple[ir.Tool, NodeKey]]] = {}
    for (m, name), a in agents.items():
        calls[(m, name)] = []
        for tm, tname in sorted(G.agent_tools(analysis, m, a)):
            tool = analysis.symbols.get(tm, {}).get(tname)
            if isinstance(tool, ir.Tool) and isinstance(tool.impl, ir.AgentImpl):
                r = analysis.resolve(tm, tool.impl.agent)
                if r is not None and (r.module, r.decl.name) in agents:
                    calls[(m, name)].append((tool, (r.module, r.decl.name)))
    for comp in G.sccs(list(agents), lambda k: [d for _, d in calls[k]]):
        start = comp[0]
        if len(comp) > 1 or any(d == start for _, d in calls[start]):
            yield _cycle(agents, calls, start, set(comp))


def _cycle(agents, calls, start: NodeKey, comp: set) -> Diagnostic:
    parent: dict[NodeKey, tuple[ir.Tool, NodeKey]] = {}
    todo, found = [start], None
    while todo and found is None:
        k = todo.pop(0)
        for tool, d in calls[k]:
            if d not in comp:
                continue
            if d == start:
                found = (tool, k)
                break
            if d not in parent:
                parent[d] = (tool, k)
                todo.append(d)
    tool, k = found
    hops = [f"`{tool.name}`", f"`{agents[start].name}`"]
    first_tool = tool
    while k != start:
        t, prev = parent[k]
        hops = [f"`{t.name}`", f"`{agents[k].name}`"] + hops
        first_tool, k = t, prev
    path = " → ".join([f"`{agents[start].name}`"] + hops)
    span = first_tool.impl.span if first_tool.impl.span.end else first_tool.span
    return diag("AFP213", f"agent `{agents[start].name}` reaches itself through agent tools",
                span, "starts the cycle", notes=(f"the cycle: {path}",),
                help="break the cycle: one of these agents must not run the other as a tool")
