"""An agent's declarations resolved once into lookup tables the interpreter reads.

Role:       turns `ir.Agent` + `Analysis` into `Plan` (tools, skills, graph, context, policies,
            redaction) so the loop never resolves a `Ref` on the hot path.
Invariants: built once per agent declaration (`plan_of`) and never changed after; unresolvable
            references are skipped (the checker reports them); validators are built lazily and
            cached per tool.
"""
from __future__ import annotations

import json
from typing import Any

import attrs
from jsonschema import Draft202012Validator
from referencing import Registry

from . import ir
from .analysis import Analysis
from .frozen import thaw
from .policy import steps
from .providers.base import ToolSpec
from .source import Span

EMPTY_SCHEMA = {"type": "object", "properties": {}}


@attrs.frozen
class ToolInfo:
    name: str
    decl: ir.Tool
    module: str
    schema: Any
    _cache: dict = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def validator(self) -> Draft202012Validator:
        v = self._cache.get("v")
        if v is None:
            # an empty registry: a `$ref` to another document is never fetched (the checker
            # reports it, AFP301); one that does not resolve is a problem of the call's check
            v = self._cache["v"] = Draft202012Validator(self.schema, registry=Registry())
        return v

    def spec(self, description: str | None = None) -> ToolSpec:
        if description is not None:
            return ToolSpec(self.name, description, self.schema)
        s = self._cache.get("spec")
        if s is None:
            s = self._cache["spec"] = ToolSpec(self.name, self.decl.description, self.schema)
        return s


@attrs.frozen
class StepInfo:
    tool: str
    note: str
    span: Span


@attrs.frozen
class SkillInfo:
    name: str
    decl: ir.Skill
    module: str
    tools: tuple[str, ...]
    steps: tuple[StepInfo, ...]
    scoped: bool
    body: str


@attrs.frozen
class EntryInfo:
    skill: str
    when: ir.Expr | None
    span: Span


@attrs.frozen
class RouteInfo:
    src: str
    dst: str
    on: str | None
    statuses: tuple[str, ...]
    when: ir.Expr | None
    label: str | None
    span: Span
    deterministic: bool
    src_tools: frozenset[str] = frozenset()  # the tools of `src`: a route without `on` hears these

    @property
    def text(self) -> str:
        return f"{self.src} -> {self.dst}"


@attrs.frozen
class GraphInfo:
    name: str
    span: Span
    entries: tuple[EntryInfo, ...]
    routes: tuple[RouteInfo, ...]
    skills: tuple[str, ...]

    @property
    def bases(self) -> tuple[str, ...]:
        return tuple(e.skill for e in self.entries if e.when is None)

    def out(self, skill: str) -> tuple[RouteInfo, ...]:
        return tuple(r for r in self.routes if r.src == skill)


@attrs.frozen
class ContextInfo:
    kind: str  # steering | fact | instruction
    decl: Any
    module: str
    text: str
    when: ir.Expr | None


@attrs.define
class Plan:
    agent: ir.Agent
    module: str
    program: ir.Program
    analysis: Analysis
    tools: dict[str, ToolInfo]
    baseline: tuple[str, ...]
    skills: dict[str, SkillInfo]
    skill_order: tuple[str, ...]
    open_skills: tuple[str, ...]
    graph: GraphInfo | None
    context: tuple[ContextInfo, ...]
    policies: tuple[ir.Policy, ...]
    redact: tuple[ir.Redact, ...]
    # Speed: the policy steps of each tool at `before` and `after`, settled at a tool's first
    # call (`policy_steps`); read by every tool call of every run of this plan.
    _steps: dict[str, dict[str, tuple]] = attrs.field(
        factory=lambda: {"before": {}, "after": {}}, init=False, eq=False, repr=False)
    # Speed: per moment and tool, the walk's program (`toolcall_policy.program`: the steps and
    # what settles a walk of rule links), made at a tool's first call; plain data of this plan.
    policy_programs: dict[str, dict[str, tuple]] = attrs.field(
        factory=lambda: {"before": {}, "after": {}}, init=False, eq=False, repr=False)

    @property
    def name(self) -> str:
        return self.agent.name

    def policy_steps(self, moment: str, tool: str) -> tuple:
        """`policy.steps` of this plan's chain for `moment` (`before` or `after`, the onion
        order) and `tool`; empty when no block applies."""
        by_tool = self._steps[moment]
        found = by_tool.get(tool)
        if found is None:
            found = by_tool[tool] = steps(self.policies, moment, tool, moment == "after")
        return found


def fact_text(data: ir.Text | ir.Data) -> str:
    if isinstance(data, ir.Text):
        return data.value
    value = thaw(data.value)
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def plan_of(analysis: Analysis, agent: ir.Agent, module: str) -> Plan:
    """`build_plan`, once per agent declaration of a checked program: a plan depends on the
    frozen IR alone, so every `Agent` of that declaration (one per run, in some hosts) and every
    run of it as a tool read the same plan (read-only)."""
    return analysis.memo(("plan", module, agent.name, id(agent)),
                         lambda: build_plan(analysis, agent, module))


def build_plan(analysis: Analysis, agent: ir.Agent, module: str) -> Plan:
    """Resolve every reference of `agent` (declared in `module`)."""
    look = lambda ref, kind, mod=module: analysis.lookup(mod, ref, kind)  # noqa: E731
    tools: dict[str, ToolInfo] = {}

    def add_tool(ref: ir.Ref, mod: str) -> str | None:
        r = analysis.resolve(mod, ref)
        if r is None or not isinstance(r.decl, ir.Tool):
            return None
        if r.decl.name not in tools:
            schema = thaw(r.decl.input.json) if r.decl.input is not None else dict(EMPTY_SCHEMA)
            tools[r.decl.name] = ToolInfo(r.decl.name, r.decl, r.module, schema)
        return r.decl.name

    baseline = tuple(n for n in (add_tool(t, module) for t in agent.tools) if n)
    graph = _graph(analysis, agent, module)
    scoped_all = agent.tool_scope == "active"
    skills: dict[str, SkillInfo] = {}
    graph_skills = graph.skills if graph else ()
    open_names = []
    for ref in agent.skills:
        r = analysis.resolve(module, ref)
        if r is not None and isinstance(r.decl, ir.Skill):
            open_names.append(r.decl.name)
    for name, mod, decl in _declaration_order(analysis, _skill_decls(analysis, agent, module, graph)):
        if name in skills:
            continue
        own = tuple(n for n in (add_tool(t, mod) for t in decl.tools) if n)
        steps = tuple(StepInfo(s.tool.name, s.note, s.span) for s in decl.steps)
        scoped = scoped_all or (graph is not None and name in graph_skills and _scope(analysis, agent, module))
        body = decl.body.value if decl.body is not None else ""
        skills[name] = SkillInfo(name, decl, mod, own, steps, scoped, body)
    _check_step_tools(skills, tools)
    if graph is not None:  # (the skills' tools are known only now)
        graph = _with_source_tools(graph, skills)
    context = []
    for ref in agent.context:
        r = analysis.resolve(module, ref)
        if r is None:
            continue
        d = r.decl
        if isinstance(d, ir.Steering):
            context.append(ContextInfo("steering", d, r.module, d.prompt.value, None))
        elif isinstance(d, ir.Fact):
            context.append(ContextInfo("fact", d, r.module, fact_text(d.data), d.when))
        elif isinstance(d, ir.Instruction):
            context.append(ContextInfo("instruction", d, r.module, d.prompt.value, d.when))
    policies = tuple(p for p in (look(r, ir.Policy) for r in agent.policies) if p is not None)
    redact = tuple(p for p in (look(r, ir.Redact) for r in agent.redact) if p is not None)
    order = tuple(skills)
    return Plan(agent, module, analysis.program, analysis, tools, baseline, skills, order,
                tuple(n for n in open_names if n in skills), graph, tuple(context), policies,
                redact)


def _check_step_tools(skills: dict[str, SkillInfo], tools: dict[str, ToolInfo]) -> None:
    """A step calls a tool of the plan (the checks make sure; an edited IR document may not)."""
    for skill in skills.values():
        for step in skill.steps:
            if step.tool not in tools:
                raise ValueError(f"skill `{skill.name}` has a step calling `{step.tool}`, which is "
                                 f"no tool the agent can call: the program was not checked; load "
                                 f"the spec with `afp.load`, or recompile its IR with `afpc compile`")


def _with_source_tools(graph: GraphInfo, skills: dict[str, SkillInfo]) -> GraphInfo:
    """`graph` with each route knowing its source skill's tools: a route without `on` fires on
    "any tool of FROM" (language §5), not on a baseline tool or a built-in."""
    routes = tuple(attrs.evolve(r, src_tools=frozenset(skills[r.src].tools) if r.src in skills
                                else frozenset()) for r in graph.routes)
    return attrs.evolve(graph, routes=routes)


def _scope(analysis: Analysis, agent: ir.Agent, module: str) -> bool:
    g = analysis.lookup(module, agent.graph, ir.Graph) if agent.graph else None
    return bool(g and g.scope_tools)


def _declaration_order(analysis: Analysis, found) -> list:
    """The agent's skills in declaration order (semantics §2: tools "by skill"), whether the
    graph or the `skills` list names them first: by module (the program's order), then by
    place in the module. Each skill once."""
    place = {(m.key, d.name): (i, j) for i, m in enumerate(analysis.program.modules)
             for j, d in enumerate(m.decls) if isinstance(d, ir.Skill)}
    unique = {(mod, name): (name, mod, decl) for name, mod, decl in found}
    return sorted(unique.values(), key=lambda x: place.get((x[1], x[0]), (len(place), 0)))


def _skill_decls(analysis, agent, module, graph):
    if graph is not None:
        gmod = graph_module(analysis, agent, module)
        g = analysis.lookup(module, agent.graph, ir.Graph)
        refs = [e.skill for e in g.entries] + [x for r in g.routes for x in (r.src, r.dst)]
        for ref in refs:
            r = analysis.resolve(gmod, ref)
            if r is not None and isinstance(r.decl, ir.Skill):
                yield r.decl.name, r.module, r.decl
    for ref in agent.skills:
        r = analysis.resolve(module, ref)
        if r is not None and isinstance(r.decl, ir.Skill):
            yield r.decl.name, r.module, r.decl


def graph_module(analysis: Analysis, agent: ir.Agent, module: str) -> str:
    r = analysis.resolve(module, agent.graph)
    return r.module if r is not None else module


def _graph(analysis: Analysis, agent: ir.Agent, module: str) -> GraphInfo | None:
    if agent.graph is None:
        return None
    r = analysis.resolve(module, agent.graph)
    if r is None or not isinstance(r.decl, ir.Graph):
        return None
    g, gmod = r.decl, r.module

    def name(ref: ir.Ref) -> str | None:
        x = analysis.resolve(gmod, ref)
        return x.decl.name if x is not None and isinstance(x.decl, ir.Skill) else None

    entries = tuple(EntryInfo(n, e.when, e.span) for e in g.entries if (n := name(e.skill)))
    routes = []
    for rt in g.routes:
        src, dst = name(rt.src), name(rt.dst)
        if src and dst:
            on = rt.on.name if rt.on is not None else None
            routes.append(RouteInfo(src, dst, on, tuple(s.name for s in rt.status), rt.when,
                                    rt.label, rt.span, rt.deterministic))
    seen: dict[str, None] = {}
    for n in [e.skill for e in entries] + [x for rt in routes for x in (rt.src, rt.dst)]:
        seen.setdefault(n, None)
    return GraphInfo(g.name, g.span, entries, tuple(routes), tuple(seen))


def find_agent(analysis: Analysis, name: str | None) -> tuple[ir.Agent, str] | None:
    """The agent called `name` in the root module (or the only agent when `name` is None); else
    an imported module's, by its name or as the root module writes a reference to it
    (`alias.name`)."""
    root = analysis.program.root
    agents = [d for d in analysis.program.root_module.decls if isinstance(d, ir.Agent)]
    if name is None:
        return (agents[0], root) if len(agents) == 1 else None
    alias, dot, bare = name.partition(".")
    module = analysis.aliases.get(root, {}).get(alias) if dot else None
    if module is not None:
        hit = analysis.symbols.get(module, {}).get(bare)
        return (hit, module) if isinstance(hit, ir.Agent) else None
    for a in agents:
        if a.name == name:
            return a, root
    for mod, d in analysis.decls(ir.Agent):
        if d.name == name:
            return d, mod
    return None


def record_names(plan: Plan) -> frozenset[str]:
    """The names a record keeps as written whatever the redact rules say (`redaction_events`):
    every declaration of the program (agents, tools, skills, graphs, context, policies,
    redact rules, tests) and the built-in tools. Once per program."""
    from .skills import BUILTINS
    analysis = plan.analysis
    return analysis.memo(("record_names",), lambda: frozenset(
        [d.name for _, d in analysis.decls() if isinstance(getattr(d, "name", None), str)]
        + list(BUILTINS)))
