"""The names the model sees: what one agent offers must not share a bare name.

Role:       checks layer, run by `names.check_names`; per agent, over what the run's plan offers
            (`plan.build_plan`: baseline tools, then the tools of its open and graph skills; the
            skill ids `read_skill` takes), keyed there by bare name.
Emits:      AFP103 duplicate-name: two declarations offered under one tool name or one skill id,
            or a tool named like a built-in (`read_skill`, `skip_step`) the agent also offers.
Invariants: one declaration reached twice is no clash; a tool and a skill never clash (a tool
            name and a skill id are separate lists for the model); unresolved references are
            skipped (AFP101/AFP102); a clash several agents share is reported once.
"""
from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label
from .graphview import agent_graph, view

READ_SKILL, SKIP_STEP = "read_skill", "skip_step"  # the built-ins (`afp_dsl.skills`)


class Offer(NamedTuple):
    ref: ir.Ref  # where the agent (or one of its skills, or its graph) names it
    module: str  # of the declaration
    decl: ir.Decl


# Speed: offers are built as plain tuples (`Offer`'s fields, in order; `tuple.__new__` keeps
# the type) and compared by declaration identity: the pass visits every skill's tools.
_new = tuple.__new__


def check_offered(a: Analysis) -> Iterator[Diagnostic]:
    if not _may_clash(a):
        return
    done: set[tuple] = set()
    for module, agent in a.decls(ir.Agent):
        skills = _skills(a, module, agent)
        tools = _tools(a, module, agent, skills)
        found = [*_clashes(agent, tools, "tool"), *_clashes(agent, skills, "skill"),
                 *_builtins(agent, tools, skills)]
        for key, d in found:
            if key not in done:
                done.add(key)
                yield d


def _may_clash(a: Analysis) -> bool:
    """Whether any clash is possible. Speed: two different tools (or skills) under one bare name
    come from two modules (in one module, a name resolves to its first declaration only), so a
    program whose tool and skill names are each declared in one module, none named like a
    built-in, has nothing to offer twice, and the walk over every skill's tools is skipped."""
    home: dict[tuple, str] = {}
    for m in a.program.modules:
        for d in m.decls:
            t = type(d)
            if t is ir.Tool or t is ir.Skill:
                if t is ir.Tool and d.name in (READ_SKILL, SKIP_STEP):
                    return True
                if home.setdefault((t, d.name), m.key) != m.key:
                    return True
    return False


def _resolved(a: Analysis, module: str, refs: Iterable[ir.Ref], kind: type) -> list[Offer]:
    out = []
    for ref in refs:
        r = a.resolve(module, ref)
        if r is not None and type(r.decl) is kind:
            out.append(_new(Offer, (ref, r.module, r.decl)))
    return out


def _skills(a: Analysis, module: str, agent: ir.Agent) -> list[Offer]:
    """The agent's open skills, then its graph's (each graph skill at its first mention)."""
    out = _resolved(a, module, agent.skills, ir.Skill)
    g = agent_graph(a, module, agent)
    if g is not None:
        out += [_new(Offer, (n.ref, n.key[0], n.skill)) for n in view(a, g[0], g[1]).nodes.values()]
    return out


def _tools(a: Analysis, module: str, agent: ir.Agent, skills: list[Offer]) -> list[Offer]:
    out = _resolved(a, module, agent.tools, ir.Tool)
    for s in skills:
        if s[2].tools:
            out += _resolved(a, s[1], s[2].tools, ir.Tool)
    return out


def _clashes(agent: ir.Agent, offers: list[Offer], kind: str) -> Iterator[tuple[tuple, Diagnostic]]:
    """The second (third, …) declaration offered under a bare name already taken."""
    first: dict[str, Offer] = {}
    told: set[int] = set()  # the declarations reported already: one diagnostic per clash
    for o in offers:
        prev = first.setdefault(o[2].name, o)
        if prev[2] is not o[2] and id(o[2]) not in told:  # (one declaration twice: one object)
            told.add(id(o[2]))
            yield (kind, prev.module, o.module, o.decl.name, o.ref.span), _clash(agent, prev, o, kind)


def _clash(agent: ir.Agent, prev: Offer, o: Offer, kind: str) -> Diagnostic:
    name = o.decl.name
    what = "named" if kind == "tool" else "with the id"
    labels = [Label(prev.ref.span, f"the first {kind} the model sees as `{name}`", False)]
    if str(prev.ref) == str(o.ref):  # written alike: show which declarations they are
        labels += [Label(prev.decl.span, f"the first `{name}` is declared here", False),
                   Label(o.decl.span, f"the second `{name}` is declared here", False)]
    seen = ("only one of them can ever be called" if kind == "tool"
            else "`read_skill` can load only one of them")
    return diag("AFP103", f"agent `{agent.name}` offers two different {kind}s {what} `{name}`",
                o.ref.span, f"a second {kind} the model sees as `{name}`", secondary=tuple(labels),
                help=f"the model sees both as `{name}` and {seen}; rename one of the {kind}s")


def _builtins(agent: ir.Agent, tools: list[Offer],
              skills: list[Offer]) -> Iterator[tuple[tuple, Diagnostic]]:
    """A user tool named like a built-in the agent offers (`read_skill` with any skill,
    `skip_step` with a skill that has `steps`): the run would offer the user's tool instead."""
    offered = {READ_SKILL: bool(skills), SKIP_STEP: any(s.decl.steps for s in skills)}
    seen: set[tuple] = set()
    for o in tools:
        key = (o.module, o.decl.name)
        if offered.get(o.decl.name) and key not in seen:
            seen.add(key)
            yield ("builtin", *key, o.ref.span), _builtin(agent, o)


def _builtin(agent: ir.Agent, o: Offer) -> Diagnostic:
    name = o.decl.name
    why = "has skills" if name == READ_SKILL else "has a skill with `steps`"
    return diag("AFP103", f"tool `{o.ref}` of agent `{agent.name}` has the name of a built-in tool",
                o.ref.span, f"named like the built-in `{name}`",
                secondary=(Label(o.decl.span, "declared here", False),),
                notes=(f"agent `{agent.name}` {why}, so it offers the built-in `{name}`; "
                       "a tool of the same name would hide it",),
                help="rename the tool")
