"""A graph with its references resolved: nodes in first-mention order, entries, routes, agents.

Role:       shared by the graph checks, test checks, `explain_reach` and graph export.
Invariants: a statement whose skill reference does not resolve is left out (names.py reports it);
            node order is the order of first mention: entries in order, then routes (source,
            then target) in order; reachability is breadth-first, linear in the graph's size.
            `dead` holds the deterministic routes proved never to fire (`dead_routes`): they
            still widen what `read_skill` accepts (any edge does), like a bare route, so only
            a reachability given the routes that never fire (`silent`: `dead` and, from
            `routes`, the shadowed or duplicated ones) leaves them out. The resolved nodes and
            edges of a graph are found once per program object and shared by the views of every
            analysis of it (`_resolved`); nothing mutates them.
"""
from __future__ import annotations

import weakref
from collections import deque
from functools import partial
from typing import Callable, Iterable, NamedTuple

import attrs

from .. import ir
from ..analysis import Analysis

NodeKey = tuple[str, str]  # (module key, skill name)


# Speed: the nodes and edges are named tuples (one C call to build), not frozen attrs classes
# (a `object.__setattr__` per field): a view builds one per skill and per route, for the checks
# and again for every diagram. They are read-only all the same.
class Node(NamedTuple):
    key: NodeKey
    name: str  # as the graph writes it (`alias.name` for an imported skill)
    skill: ir.Skill
    ref: ir.Ref  # the first mention


class EntryEdge(NamedTuple):
    entry: ir.Entry
    dst: NodeKey
    index: int


class RouteEdge(NamedTuple):
    route: ir.Route
    src: NodeKey
    dst: NodeKey
    index: int

    @property
    def deterministic(self) -> bool:
        return self.route.deterministic


@attrs.define
class GraphView:
    module: str
    graph: ir.Graph
    nodes: dict[NodeKey, Node]
    entries: list[EntryEdge]
    routes: list[RouteEdge]
    # every entry and route endpoint names a skill (a misspelt one is AFP101/AFP102 already:
    # what reaches what is then unknown, so no reachability claim is made)
    complete: bool = True
    # Speed: `dead` is settled when first read (a diagram never reads it): `find_dead()` gives it
    find_dead: Callable[[GraphView], frozenset[int]] | None = attrs.field(
        default=None, repr=False, eq=False)
    _dead: frozenset[int] | None = attrs.field(default=None, init=False, repr=False, eq=False)
    _own: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)
    # Speed: the graph checks ask for the out-edges and each reachability several times per
    # view; a view is read-only once built, so both are computed once (callers never mutate them).
    _out: dict | None = attrs.field(default=None, init=False, repr=False, eq=False)
    _reached: dict = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def dead(self) -> frozenset[int]:
        """Indices of deterministic routes that can never fire (`dead_routes`)."""
        if self._dead is None:
            self._dead = self.find_dead(self) if self.find_dead is not None else frozenset()
        return self._dead

    def own_tools(self, analysis: Analysis, key: NodeKey) -> set[NodeKey]:
        """The tools of the skill at node `key`, resolved (read-only; once per view: the dead
        routes and the route tool checks both ask, per source skill)."""
        found = self._own.get(key)
        if found is None:
            found = self._own[key] = tool_keys(analysis, key[0], self.nodes[key].skill.tools)
        return found

    def base_tools(self, analysis: Analysis) -> set[NodeKey] | None:
        """The tools of the graph's persistent bases (its unconditional entries): active every
        iteration, so offered whatever the cursor, like baseline tools (read-only; once per
        view). None when a base's `tools` name something unresolved (then unknown)."""
        if ("bases",) not in self._own:
            found: set[NodeKey] | None = set()
            for e in self.entries:
                if e.entry.when is None and found is not None:
                    skill = self.nodes[e.dst].skill
                    found = None if has_unresolved(analysis, e.dst[0], skill.tools) \
                        else found | self.own_tools(analysis, e.dst)
            self._own[("bases",)] = found
        return self._own[("bases",)]

    def name(self, key: NodeKey) -> str:
        return self.nodes[key].name

    def out_edges(self) -> dict[NodeKey, list[RouteEdge]]:
        """The routes out of each node, in declaration order (read-only)."""
        if self._out is None:
            out: dict[NodeKey, list[RouteEdge]] = {k: [] for k in self.nodes}
            for e in self.routes:
                out[e.src].append(e)
            self._out = out
        return self._out

    def reach(self, deterministic_only: bool,
              silent: frozenset[int] | None = None) -> dict[NodeKey, EntryEdge | RouteEdge]:
        """Every reachable node with the edge that first reached it (breadth-first; read-only).

        Over every route (`deterministic_only` False: what the model may pick), over the
        deterministic ones (True), or over the routes that can fire by themselves (`silent`
        given: the deterministic ones minus these, the routes proved never to fire)."""
        mode = deterministic_only if silent is None else ("firing", silent)
        if mode not in self._reached:
            self._reached[mode] = self._reach(deterministic_only, silent)
        return self._reached[mode]

    def _reach(self, deterministic_only: bool,
               silent: frozenset[int] | None = None) -> dict[NodeKey, EntryEdge | RouteEdge]:
        out = self.out_edges()
        parent: dict[NodeKey, EntryEdge | RouteEdge] = {}
        queue: deque[NodeKey] = deque()
        for e in self.entries:
            if e.dst not in parent:
                parent[e.dst] = e
                queue.append(e.dst)
        skip = silent or frozenset()
        only_det = deterministic_only or silent is not None
        while queue:
            for e in out[queue.popleft()]:
                if e.dst not in parent and (e.deterministic or not only_det) and e.index not in skip:
                    parent[e.dst] = e
                    queue.append(e.dst)
        return parent

    def path_to(self, key: NodeKey, deterministic_only: bool,
                silent: frozenset[int] | None = None) -> list[EntryEdge | RouteEdge] | None:
        parent = self.reach(deterministic_only, silent)
        if key not in parent:
            return None
        path: list[EntryEdge | RouteEdge] = []
        while True:
            e = parent[key]
            path.append(e)
            if isinstance(e, EntryEdge):
                return path[::-1]
            key = e.src


def view(analysis: Analysis, module: str, graph: ir.Graph) -> GraphView:
    """The resolved skill graph of `graph` (built once per analysis; read-only)."""
    return analysis.memo(("graphview", module, id(graph)), lambda: _view(analysis, module, graph))


def _view(analysis: Analysis, module: str, graph: ir.Graph) -> GraphView:
    nodes, entries, routes, complete = _resolved(analysis, module, graph)
    return GraphView(module, graph, nodes, entries, routes, complete, _dead_later(analysis))


# Speed: a diagram drawn after a check (the check + draw of `bench.compile`, `afpc graph` after
# `afpc check` in one process) builds a new `Analysis` of the same program, and resolving every
# statement again was about a quarter of the draw. What `_resolve_graph` finds is a pure function
# of the (frozen) program, so it is kept per program object: keyed by its identity and held
# weakly (the entry goes when the program is freed, so an id is never reused while cached), and
# holding only parts of that program (its graph, skills, routes), never the program itself.
_SHARED: dict[int, tuple[weakref.ref, dict]] = {}
_SHARED_MAX = 64  # programs alive at once with a graph resolved (bounded all the same)


def _resolved(analysis: Analysis, module: str, graph: ir.Graph) -> tuple:
    """(nodes, entries, routes, complete) of `graph`, resolved once per program object."""
    program = analysis.program
    if type(program) is not ir.Program:  # (only the frozen IR's own class is known immutable)
        return _resolve_graph(analysis, module, graph)
    entry = _SHARED.get(id(program))
    if entry is None or entry[0]() is not program:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        entry = _SHARED[id(program)] = (weakref.ref(program, partial(_forget, id(program))), {})
    found = entry[1].get((module, id(graph)))
    if found is None or found[0] is not graph:
        found = entry[1][(module, id(graph))] = (graph, _resolve_graph(analysis, module, graph))
    return found[1]


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _SHARED.get(key)  # (one read: another thread may clear the table in between)
    if entry is not None and entry[0] is ref:
        _SHARED.pop(key, None)


def _resolve_graph(analysis: Analysis, module: str, graph: ir.Graph) -> tuple:
    nodes: dict[NodeKey, Node] = {}

    def node(ref: ir.Ref) -> NodeKey | None:
        r = analysis.resolve(module, ref)
        if r is None or not isinstance(r.decl, ir.Skill):
            return None
        key = (r.module, r.decl.name)
        if key not in nodes:
            nodes[key] = Node(key, str(ref), r.decl, ref)
        return key

    entries, routes = [], []
    complete = True
    for i, e in enumerate(graph.entries):
        k = node(e.skill)
        if k is not None:
            entries.append(EntryEdge(e, k, i))
        complete = complete and k is not None
    for i, r in enumerate(graph.routes):
        s, d = node(r.src), node(r.dst)
        if s is not None and d is not None:
            routes.append(RouteEdge(r, s, d, i))
        complete = complete and s is not None and d is not None
    return nodes, entries, routes, complete


def _dead_later(analysis: Analysis) -> Callable[[GraphView], frozenset[int]]:
    """`dead_routes`, to be settled when first asked. The view lives in the analysis's memo, so
    it holds the analysis weakly (no cycle); once that is gone, an analysis of the same program
    (a pure function of it) answers alike."""
    ref, program = weakref.ref(analysis), analysis.program

    def find(v: GraphView) -> frozenset[int]:
        a = ref()
        return dead_routes(a if a is not None else Analysis(program), v)
    return find


def dead_routes(analysis: Analysis, v: GraphView) -> frozenset[int]:
    """The deterministic routes (by index) proved never to fire. Either a route has no `on` and
    its source skill has no tools (such a route hears only the results of the source's own tools,
    never a baseline tool's or a built-in's), or its `on` tool is neither a tool of the source
    skill nor a tool any agent using the graph can call from anywhere (a baseline tool, or a
    tool of one of its open skills) nor a tool of a persistent base (an unconditional entry:
    active every iteration) of the graph (AFP209 as an error), nor, with `tool_scope =
    "always"` (every skill's tools offered every iteration), a tool of a skill of the graph (that
    route is still AFP209, but it can fire). A misspelt tool name, and for `on` a graph no agent
    uses, decide nothing."""
    module, graph = v.module, v.graph
    baseline: list[set[NodeKey] | None] = []  # Speed: the agents' baseline, resolved once

    def base() -> set[NodeKey] | None:
        if not baseline:
            agents = agents_of_graph(analysis, module, graph)
            each = [anytime_tools(analysis, m, a) for m, a in agents]
            baseline.append(set().union(*each) if agents and None not in each else None)
        return baseline[0]
    everyone: list[set[NodeKey]] = []  # Speed: the tools offered anyway, gathered once

    def offered_anyway(tool: NodeKey) -> bool:
        """Is `tool` a tool of a skill of the graph, offered while any skill is current
        (`tool_scope = "always"` for some agent using the graph, and no `scope_tools`)?"""
        if not everyone:
            always = not graph.scope_tools and any(
                a.tool_scope != "active" for _, a in agents_of_graph(analysis, module, graph))
            everyone.append(set().union(*(v.own_tools(analysis, k) for k in v.nodes))
                            if always else set())
        return tool in everyone[0]
    dead = set()
    for e in v.routes:
        if not e.deterministic:
            continue
        skill = v.nodes[e.src].skill
        if e.route.on is None:
            if not skill.tools:
                dead.add(e.index)
            continue
        r = analysis.resolve(module, e.route.on)
        if r is None or not isinstance(r.decl, ir.Tool):
            continue
        tool = (r.module, r.decl.name)
        if tool in v.own_tools(analysis, e.src) or has_unresolved(analysis, e.src[0], skill.tools):
            continue
        bases = v.base_tools(analysis)  # (a persistent base's tool is offered whatever the cursor)
        if bases is None or tool in bases:
            continue
        known = base()
        if known is not None and tool not in known and not offered_anyway(tool):
            dead.add(e.index)
    return frozenset(dead)


def views(analysis: Analysis) -> Iterable[GraphView]:
    for module, g in analysis.decls(ir.Graph):
        yield view(analysis, module, g)


def agents_of_graph(analysis: Analysis, module: str, graph: ir.Graph) -> list[tuple[str, ir.Agent]]:
    """The agents (with their modules) whose `graph` is this graph."""
    out = []
    for m, a in analysis.decls(ir.Agent):
        if a.graph is not None:
            r = analysis.resolve(m, a.graph)
            if r is not None and r.module == module and r.decl is graph:
                out.append((m, a))
    return out


def tool_keys(analysis: Analysis, module: str, refs: Iterable[ir.Ref]) -> set[NodeKey]:
    out = set()
    for ref in refs:
        r = analysis.resolve(module, ref)
        if r is not None and isinstance(r.decl, ir.Tool):
            out.add((r.module, r.decl.name))
    return out


def has_unresolved(analysis: Analysis, module: str, refs: Iterable[ir.Ref], kind: type = ir.Tool) -> bool:
    """True when some reference does not name a declaration of `kind` (already reported by the
    name checks); rules that would reason about the missing piece stay silent instead."""
    return any(analysis.lookup(module, ref, kind) is None for ref in refs)


def agent_graph(analysis: Analysis, module: str, agent: ir.Agent) -> tuple[str, ir.Graph] | None:
    if agent.graph is None:
        return None
    r = analysis.resolve(module, agent.graph)
    if r is None or not isinstance(r.decl, ir.Graph):
        return None
    return r.module, r.decl


def anytime_tools(analysis: Analysis, module: str, agent: ir.Agent) -> set[NodeKey] | None:
    """The tools the agent can call whatever skill is current: its baseline tools and the tools
    of its open skills (`skills`: `read_skill` loads one from anywhere, and it stays active).
    None when one of those names something unresolved (AFP101: then unknown)."""
    if has_unresolved(analysis, module, agent.tools):
        return None
    tools = tool_keys(analysis, module, agent.tools)
    for ref in agent.skills:
        r = analysis.resolve(module, ref)
        if r is None or not isinstance(r.decl, ir.Skill):
            continue
        if has_unresolved(analysis, r.module, r.decl.tools):
            return None
        tools |= tool_keys(analysis, r.module, r.decl.tools)
    return tools


def agent_tools(analysis: Analysis, module: str, agent: ir.Agent) -> set[NodeKey]:
    """Every tool the agent can offer: baseline, open skills' and graph skills' tools."""
    tools = tool_keys(analysis, module, agent.tools)
    skills: list[tuple[str, ir.Skill]] = []
    for ref in agent.skills:
        r = analysis.resolve(module, ref)
        if r is not None and isinstance(r.decl, ir.Skill):
            skills.append((r.module, r.decl))
    g = agent_graph(analysis, module, agent)
    if g is not None:
        v = view(analysis, g[0], g[1])
        skills += [(n.key[0], n.skill) for n in v.nodes.values()]
    for m, s in skills:
        tools |= tool_keys(analysis, m, s.tools)
    return tools


def sccs(nodes: Iterable, succ) -> list[list]:
    """Strongly connected components (Tarjan, iterative), each in discovery order."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    out: list[list] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ(w))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                # Speed: the stack holds nodes in discovery order, so the popped component is in
                # reverse discovery order; reversing it equals sorting by index, without a sort.
                comp.reverse()
                out.append(comp)
    return out
