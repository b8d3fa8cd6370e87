"""Test-script checks: tools the agent has, arguments valid for their schema, real edges.

Role:       checks layer; resolves each test's agent (its `agent`, or the module's only one)
            and the tools it can reach, including those of agents it runs as tools (their
            LLM calls consume the same script).
Emits:      AFP101/AFP102 (`expect cursor` naming no skill), AFP404 test-unknown-tool,
            AFP405 test-args-invalid (warning), AFP406 test-unknown-edge (also `expect cursor`
            naming a skill outside the agent's graph).
Invariants: argument validation is local (a `referencing.Registry` with nothing to fetch);
            a test whose agent cannot be decided is left to AFP111 (names.py); what depends on
            an agent's misspelt tool, skill or graph (AFP101, or one of an import that failed,
            AFP107) is not reported again here.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..frozen import thaw
from ..schema_quick import surely_valid
from ..suggest import closest
from . import graphview as G
from .names import also_named, duplicated_as, imported_hint, unresolved_names
from .schemas import is_broken

BUILTINS = ("read_skill", "skip_step")
_TOOL_STMTS = (ir.ToolReturns, ir.ToolFails, ir.ExpectCalled)


def check_tests(analysis: Analysis) -> Iterable[Diagnostic]:
    nowhere: dict[tuple, list] = {}  # names declared nowhere: one diagnostic each (`_Nowhere`)
    for module, t in analysis.decls(ir.Test):
        found = test_agent(analysis, module, t)
        ds = _test(analysis, module, t, found[0], found[1]) if found is not None else _agentless(
            analysis, module, t)
        for d in ds:
            if isinstance(d, _Nowhere):
                nowhere.setdefault(d.key, []).append(d)
            else:
                yield d
    if nowhere:
        reported = unresolved_names(analysis)
        for key, found in nowhere.items():
            if key not in reported:  # (else the declarations' AFP101 stands for it)
                yield also_named(found[0].diag, [n.ref for n in found[1:]])


class _Nowhere:
    """A test's diagnostic for a name declared nowhere (AFP404 for a tool, AFP101 for `expect
    cursor`), held back by `check_tests`: one root cause, one diagnostic, so each such name is
    reported once, at its first use in the tests, and not at all when a declaration's own
    reference to it is AFP101 already (`names.unresolved_names`)."""

    __slots__ = ("key", "diag", "ref")

    def __init__(self, module: str, ref: ir.Ref, d: Diagnostic):
        self.key, self.diag, self.ref = (module, ref.alias, ref.name), d, ref


class _Lacking(_Nowhere):
    """AFP404 for a declared tool an agent is not given: one diagnostic per agent and tool, at
    the first use in the tests, with the others as labels (no declaration reports it)."""

    def __init__(self, agent: tuple[str, str], tool: tuple[str, str], ref: ir.Ref, d: Diagnostic):
        self.key, self.diag, self.ref = ("lacking", agent, tool), d, ref


def _agentless(analysis: Analysis, module: str, t: ir.Test) -> Iterator[Diagnostic]:
    """A test whose agent is unknown (AFP101) or cannot be decided (AFP111): which tools and
    skills it has is unknown, but a name declared nowhere, or declared as another kind (a skill
    where a tool is called, a tool as the expected cursor), is a mistake of its own."""
    decls = analysis.modules[module].decls
    tools = sorted(d.name for d in decls if isinstance(d, ir.Tool))
    skills = sorted(d.name for d in decls if isinstance(d, ir.Skill))
    for stmt in t.statements:
        refs = [c.tool for c in stmt.calls] if isinstance(stmt, ir.ModelCalls) else (
            [stmt.tool] if isinstance(stmt, _TOOL_STMTS) else [])
        for ref in refs:
            r = analysis.resolve(module, ref)
            if r is None and ref.name not in BUILTINS:
                yield _Nowhere(module, ref, diag("AFP404", f"unknown tool `{ref}`", ref.span,
                               "declared nowhere", help=_did_you_mean(ref.name, tools + list(BUILTINS))))
            elif r is not None and not isinstance(r.decl, ir.Tool) and not duplicated_as(
                    analysis, r.module, ref.name, ir.Tool):
                yield diag("AFP404", f"`{ref}` is {ir.a_kind(r.decl)}, not a tool", ref.span,
                           "not a tool", help=_did_you_mean(ref.name, tools + list(BUILTINS)))
        if isinstance(stmt, ir.ExpectCursor):
            r = analysis.resolve(module, stmt.skill)
            if r is None:
                yield _Nowhere(module, stmt.skill, diag(
                    "AFP101", f"unknown skill `{stmt.skill}`", stmt.skill.span, "not declared",
                    help=_did_you_mean(stmt.skill.name, skills)))
            elif not isinstance(r.decl, ir.Skill) and not duplicated_as(
                    analysis, r.module, stmt.skill.name, ir.Skill):
                yield diag("AFP102", f"`{stmt.skill}` is {ir.a_kind(r.decl)}, but `expect cursor` "
                           "needs a skill", stmt.skill.span, "expected a skill",
                           help=_did_you_mean(stmt.skill.name, skills))


def test_agent(analysis: Analysis, module: str, t: ir.Test) -> tuple[str, ir.Agent] | None:
    if t.agent is not None:
        r = analysis.resolve(module, t.agent)
        return (r.module, r.decl) if r is not None and isinstance(r.decl, ir.Agent) else None
    agents = [d for d in analysis.modules[module].decls if isinstance(d, ir.Agent)]
    return (module, agents[0]) if len(agents) == 1 else None


class _Scope:
    """What a test's agent (and the agents it runs as tools) can do."""

    def __init__(self, analysis: Analysis, module: str, agent: ir.Agent):
        self.analysis, self.module = analysis, module
        self.tools: set[tuple[str, str]] = set()
        self.skills: list[str] = []
        self.skill_keys: list[tuple[str, str]] = []  # (module, name), to name them as a test would
        self.has_steps = False
        self.incomplete = False  # some tool, skill or graph of the agents is misspelt (AFP101)
        self.unresolved: set[str] = set()  # bare names of the agents' tool references that
        # resolve to nothing (AFP101, or an import that failed, AFP107): the model would see them
        seen: set[tuple[str, str]] = set()
        todo = [(module, agent)]
        while todo:
            m, a = todo.pop()
            if (m, a.name) in seen:
                continue
            seen.add((m, a.name))
            self._add_agent(m, a, todo)
        g = G.agent_graph(analysis, module, agent)
        self.view = G.view(analysis, g[0], g[1]) if g is not None else None
        self.hidden = analysis.misspelt(module, agent) or (  # (`grahp = g`: its graph is unknown;
            g is not None and _declared_twice(analysis, g[0], g[1].name))  # two `g`: which one is)

    def _add_agent(self, m: str, a: ir.Agent, todo: list) -> None:
        tools = G.agent_tools(self.analysis, m, a)
        self.tools |= tools
        for tm, name in tools:
            tool = self.analysis.symbols[tm][name]
            if isinstance(tool, ir.Tool) and isinstance(tool.impl, ir.AgentImpl):
                r = self.analysis.resolve(tm, tool.impl.agent)
                if r is not None and isinstance(r.decl, ir.Agent):
                    todo.append((r.module, r.decl))
        found = [(r.module, r.decl) for r in (self.analysis.resolve(m, s) for s in a.skills)
                 if r is not None and isinstance(r.decl, ir.Skill)]
        g = G.agent_graph(self.analysis, m, a)
        if g is not None:
            found += [(n.key[0], n.skill) for n in G.view(self.analysis, g[0], g[1]).nodes.values()]
        skills = [s for _, s in found]
        self.skills += [s.name for s in skills if s.name not in self.skills]
        self.skill_keys += [(sm, s.name) for sm, s in found if (sm, s.name) not in self.skill_keys]
        self.incomplete |= G.has_unresolved(self.analysis, m, a.tools) or G.has_unresolved(
            self.analysis, m, a.skills, ir.Skill) or any(
            G.has_unresolved(self.analysis, m, s.tools) for s in skills) or (
            a.graph is not None and g is None) or (  # a misspelt graph hides its skills and tools
            self.analysis.misspelt(m, a) or any(self.analysis.misspelt(sm, s) for sm, s in found))
        self.has_steps |= any(s.steps for s in skills)
        for rm, refs in [(m, a.tools)] + [(sm, s.tools) for sm, s in found]:
            self.unresolved.update(r.name for r in refs if self.analysis.resolve(rm, r) is None)


def _test(analysis: Analysis, module: str, t: ir.Test, am: str, agent: ir.Agent) -> Iterator[Diagnostic]:
    scope = _Scope(analysis, am, agent)
    for stmt in t.statements:
        if isinstance(stmt, ir.ModelCalls):
            for call in stmt.calls:
                tool, d = _tool(analysis, module, call.tool, scope, agent, stubbing=False)
                if d is not None:
                    yield d
                elif (tool is not None or call.tool.name in BUILTINS) and not _twice(analysis, module, call.tool):
                    yield from _args(call, _input_schema(tool, call.tool.name, scope))
        elif isinstance(stmt, _TOOL_STMTS):  # (a built-in can be counted, not stubbed)
            stubbing = not isinstance(stmt, ir.ExpectCalled)
            _, d = _tool(analysis, module, stmt.tool, scope, agent, stubbing=stubbing)
            if d is not None:
                yield d
        elif isinstance(stmt, ir.ExpectRoute):
            yield from _edge(analysis, module, stmt, scope, agent)
        elif isinstance(stmt, ir.ExpectCursor):
            d = _cursor(analysis, module, stmt.skill, scope) if analysis.lookup(
                module, stmt.skill, ir.Skill) is None else _off_graph(analysis, module, stmt, scope, agent)
            if d is not None:
                yield d


def _cursor(analysis: Analysis, module: str, ref: ir.Ref, scope: _Scope) -> Diagnostic | None:
    """`expect cursor X` where X is not a skill: unknown (AFP101) or of another kind (AFP102)."""
    r = analysis.resolve(module, ref)
    if r is None:
        return _Nowhere(module, ref, diag("AFP101", f"unknown skill `{ref}`", ref.span, "not declared",
                                          help=_skill_hint(analysis, module, ref, scope)))
    if duplicated_as(analysis, r.module, ref.name, ir.Skill):
        return None  # the name is declared twice (AFP103)
    return diag("AFP102", f"`{ref}` is {ir.a_kind(r.decl)}, but `expect cursor` needs a skill",
                ref.span, "expected a skill", help=_skill_hint(analysis, module, ref, scope))


def _skill_hint(analysis: Analysis, module: str, ref: ir.Ref, scope: _Scope) -> str | None:
    """"did you mean" among the agent's skills as the test's module must write them: a skill
    of an imported module by its alias (`lib.s2`, also when `s2` was written without one)."""
    written = _as_written(analysis, module, scope.skill_keys)
    same = [w for w in written if w.rpartition(".")[2] == ref.name and w != str(ref)]
    if same:
        return f"did you mean `{same[0]}`?"
    bare = {w.rpartition(".")[2]: w for w in reversed(written)}  # (`sx` is close to `lib.s1`)
    close = closest(str(ref), written) or bare.get(closest(ref.name, list(bare)) or "")
    if close:
        return f"did you mean `{close}`?"
    # the agent's skills are unknown or far off (a misspelt graph entry hides its skills):
    # any skill the module declares, or reaches through an import
    mine = [d.name for d in analysis.modules[module].decls if isinstance(d, ir.Skill)] \
        if module in analysis.modules else []
    close = closest(ref.name, mine) if ref.alias is None else None
    if close:
        return f"did you mean `{close}`?"
    return None if ref.alias else imported_hint(analysis, module, ref.name, (ir.Skill,))


def _off_graph(analysis: Analysis, module: str, stmt: ir.ExpectCursor, scope: _Scope,
               agent: ir.Agent) -> Diagnostic | None:
    """`expect cursor X` for a skill the cursor is never on: it moves only to the skills of the
    agent's graph (entries and route targets), never to an open skill or any other."""
    v = scope.view
    if scope.hidden or (v is None and agent.graph is not None) or (v is not None and not v.complete):
        return None  # the graph or one of its skills is misspelt (AFP101): its skills are unknown
    names = [] if v is None else [n.skill.name for n in v.nodes.values()]
    if stmt.skill.name in names:
        return None
    note = (f"agent `{agent.name}` has no graph, so no skill is ever current" if v is None else
            f"the skills of graph `{v.graph.name}`: " + ", ".join(f"`{n}`" for n in names))
    return diag("AFP406", f"the cursor of agent `{agent.name}` is never on `{stmt.skill}`",
                stmt.skill.span, "not a skill of the agent's graph", notes=(note,),
                help="expect a skill of the agent's graph (an open skill never becomes the "
                     "cursor), or add this one to the graph")


def _tool(analysis: Analysis, module: str, ref: ir.Ref, scope: _Scope, agent: ir.Agent,
          stubbing: bool) -> tuple[ir.Tool | None, Diagnostic | None]:
    names = sorted({n for _, n in scope.tools})
    if ref.alias is None:  # the name the model sees: a tool of the agent by its own name
        mine = [k for k in sorted(scope.tools) if k[1] == ref.name]
        if mine:
            return analysis.symbols[mine[0][0]][mine[0][1]], None
    r = analysis.resolve(module, ref)
    if r is None and ref.alias is None and ref.name in BUILTINS:
        offered = scope.skills if ref.name == "read_skill" else scope.has_steps
        if stubbing or not (offered or scope.incomplete):
            why = "is built in and cannot be stubbed" if stubbing else (
                "is only offered to agents with skills" if ref.name == "read_skill"
                else "is only offered while a skill with `steps` is active")
            return None, diag("AFP404", f"`{ref.name}` {why}", ref.span, "not available here")
        return None, None
    if r is None and ref.alias is None and ref.name in scope.unresolved:
        return None, None  # (the agent's `lib.lookup` is unknown: its AFP101/AFP107 is the cause)
    if r is not None and isinstance(r.decl, ir.Tool) and ((r.module, r.decl.name) in scope.tools
                                                          or scope.incomplete):
        return r.decl, None
    if r is not None and not isinstance(r.decl, ir.Tool) and duplicated_as(analysis, r.module,
                                                                           ref.name, ir.Tool):
        return None, None  # the name is declared twice (AFP103)
    if r is not None and isinstance(r.decl, ir.Tool):
        msg = f"agent `{agent.name}` has no tool `{ref}`"
        label = "declared, but not given to this agent"
    else:
        msg = f"unknown tool `{ref}`" if r is None else f"`{ref}` is {ir.a_kind(r.decl)}, not a tool"
        label = "not a tool of the agent"
    d = diag("AFP404", msg, ref.span, label,
             notes=(f"the agent's tools: {', '.join(f'`{n}`' for n in names) or 'none'}",),
             help=_did_you_mean(ref.name, names + [b for b in BUILTINS]))
    if r is None:
        return None, _Nowhere(module, ref, d)
    if isinstance(r.decl, ir.Tool):
        return None, _Lacking((scope.module, agent.name), (r.module, r.decl.name), ref, d)
    return None, d


def _as_written(analysis: Analysis, module: str, keys: list[tuple[str, str]]) -> list[str]:
    """The skills as the test's module must write them: a skill of another module by an alias
    of it (`lib.s2`), a skill of its own module by its name."""
    aliases = {key: alias for alias, key in analysis.aliases.get(module, {}).items()}
    return [name if m == module else f"{aliases[m]}.{name}" for m, name in keys
            if m == module or m in aliases]


def _did_you_mean(name: str, names: list[str]) -> str | None:
    close = closest(name, names)
    return f"did you mean `{close}`?" if close else None


def _twice(analysis: Analysis, module: str, ref: ir.Ref) -> bool:
    """Is the tool `ref` names declared twice (AFP103)? Which of its input schemas the script
    meant is unknown then: its arguments are not checked (one root cause, one diagnostic)."""
    r = analysis.resolve(module, ref)
    return r is not None and _declared_twice(analysis, r.module, ref.name)


def _declared_twice(analysis: Analysis, module: str, name: str) -> bool:
    m = analysis.modules.get(module)
    return m is not None and sum(d.name == name for d in m.decls) > 1


def _input_schema(tool: ir.Tool | None, name: str, scope: _Scope) -> Any:
    if tool is not None:  # (a schema with an error is that error's to report: no AFP405)
        if tool.input is None or is_broken(tool.input):
            return None
        return thaw(tool.input.json)
    if name == "read_skill":  # (with a misspelt skill or graph, the ids known are not all)
        ids = {"type": "string"} if scope.incomplete else {"enum": list(scope.skills)}
        return {"type": "object", "properties": {"id": ids}, "required": ["id"]}
    # (an extra field is tolerated, as at run time: `skills.SKIP_SCHEMA`)
    return {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}


def _args(call: ir.ScriptedCall, schema: Any) -> Iterator[Diagnostic]:
    if schema is None or call.args is None:  # (None: arguments the front end rejected, AFP106)
        return
    problems, misspelt, values = validate(schema, thaw(call.args))
    if problems:
        from ..argcheck import did_you_mean_fields
        yield diag("AFP405", f"the arguments of `{call.tool}` do not match its input schema",
                   call.span, "invalid arguments", notes=tuple(problems[:5]) + (
                       (f"… and {len(problems) - 5} more",) if len(problems) > 5 else ()),
                   help=did_you_mean_fields(misspelt) or (
                       "did you mean " + ", ".join(f"`{v}` for `{p}`" for p, v in values) + "?" if values
                       else "fix the arguments, unless the test means to send invalid ones"))


def validate(schema: Any, instance: Any) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """`path: what was expected` lines, validating locally, never echoing a value (a test's
    arguments may hold a secret; semantics §9), the fields given that are close to a
    declared one missing (`argcheck.misspelt_fields`), and the `enum` values meant by string
    values close to one (`_misspelt_values`); nothing when valid or the schema is unusable."""
    if surely_valid(schema, instance):
        return [], [], []  # the usual case, decided without importing jsonschema (see schema_quick)
    import jsonschema  # slow to import: only for arguments that may be invalid
    import referencing
    import referencing.exceptions
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema, registry=referencing.Registry())
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        from ..argcheck import describe_error, misspelt_fields
        lines = (line for e in errors for line in describe_error(e, schema, instance))
        return list(dict.fromkeys(lines)), misspelt_fields(errors), _misspelt_values(errors)
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable, RecursionError):
        return [], [], []


def _misspelt_values(errors) -> list[tuple[str, str]]:
    """(path, meant) for a string argument that is a near miss of one of its field's `enum`
    values (`"refundz"` for `"refunds"`): the value given is never echoed (it may be a
    secret), only the declared one named."""
    from ..argcheck import _path
    out = []
    for e in errors:
        values = e.schema.get("enum") if e.validator == "enum" and isinstance(e.schema, dict) else None
        if isinstance(e.instance, str) and isinstance(values, list):
            close = closest(e.instance, [v for v in values if isinstance(v, str)])
            if close is not None:
                out.append((_path(list(e.absolute_path)), json.dumps(close, ensure_ascii=False)))
    return out


def _edge(analysis: Analysis, module: str, stmt: ir.ExpectRoute, scope: _Scope,
          agent: ir.Agent) -> Iterator[Diagnostic]:
    ends = []
    for ref in (stmt.src, stmt.dst):
        r = analysis.resolve(module, ref)
        if r is None or not isinstance(r.decl, ir.Skill):
            what = f"which is {ir.a_kind(r.decl)}, not a skill" if r is not None else (
                "which this module does not declare")  # (an imported skill needs its alias)
            yield diag("AFP406", f"`expect route` names `{ref}`, {what}", ref.span,
                       "not a skill" if r is not None else "not declared here",
                       help=_skill_hint(analysis, module, ref, scope))
            return
        ends.append((r.module, r.decl.name))
    v = scope.view
    if v is not None and any((e.src, e.dst) == tuple(ends) for e in v.routes):
        return
    if (v is None and agent.graph is not None) or scope.hidden:
        return  # the agent's graph is misspelt (AFP101, or `grahp` AFP104): its routes are unknown
    if v is None:
        note = f"agent `{agent.name}` has no graph"
    else:
        outs = [f"`{e.route.src} -> {e.route.dst}`" for e in v.routes if e.src == ends[0]]
        note = (f"routes out of `{stmt.src}`: " + ", ".join(outs)) if outs else \
            f"graph `{v.graph.name}` has no route out of `{stmt.src}`"
    yield diag("AFP406", f"no route `{stmt.src} -> {stmt.dst}` in the graph of agent `{agent.name}`",
               stmt.span, "no such edge", notes=(note,))
