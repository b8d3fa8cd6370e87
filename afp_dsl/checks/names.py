"""Name checks: duplicates, unknown names (with "did you mean"), wrong kinds, ambiguous agents.

Role:       checks layer; the first rule, so later rules can skip unresolved references.
Emits:      AFP101 unknown-name, AFP102 wrong-kind, AFP103 duplicate-name (also for two
            declarations one agent offers under one bare name: `offered.py`), AFP111
            ambiguous-agent, AFP106 (warning) for a name listed twice in one list attribute.
            A policy block may name a built-in tool (`before read_skill`): not an unknown name;
            a route waiting for one (`on read_skill`) is AFP209 route-tool-not-in-skill.
Invariants: test scripts' tool and edge names are left to `checks.tests` (AFP404, AFP406); a
            reference to a name declared twice is not also of the wrong kind when one of its
            declarations has the kind expected (`duplicated_as`); a name declared nowhere is
            one AFP101, its further uses labels on it (`also_named`).
"""
from __future__ import annotations

from typing import Iterable, Iterator

import attrs

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label, Severity
from ..suggest import closest
from .offered import READ_SKILL, SKIP_STEP, check_offered

CONTEXT = (ir.Steering, ir.Fact, ir.Instruction)


def check_names(a: Analysis) -> Iterable[Diagnostic]:
    unknown: dict[tuple, list] = {}  # one AFP101 per name declared nowhere (`_unknown_key`)
    for m in a.program.modules:
        yield from _duplicates(m)
        key, resolve = m.key, a.resolve
        for decl in m.decls:
            if type(decl) is ir.Tool and not isinstance(decl.impl, ir.AgentImpl):
                continue  # Speed: a tool that is not an agent lists and names nothing here
            lists = _lists(decl)
            if lists:
                yield from _repeated(lists)
            for refs, kinds, what in _refs(decl):
                for ref in refs:
                    # Speed: a reference to a declaration of the expected kind (nearly all of
                    # them) is settled here; `_check_ref` asks the same questions again.
                    r = resolve(key, ref)
                    if r is None and type(decl) is ir.Policy and _builtin(ref):
                        continue  # a block on a built-in tool (semantics §7: policies see it)
                    if r is None and type(decl) is ir.Graph and _builtin(ref):
                        yield _builtin_route(ref)
                        continue
                    if r is None or not isinstance(r.decl, kinds):
                        d = _check_ref(a, key, ref, kinds, what)
                        if d is not None and r is None and d.code == "AFP101":
                            unknown.setdefault(_unknown_key(a, key, ref), []).append((d, ref))
                        elif d is not None:
                            yield d
        yield from _ambiguous_agents(a, m)
    for found in unknown.values():
        yield also_named(found[0][0], [ref for _, ref in found[1:]])
    yield from check_offered(a)


def _unknown_key(a: Analysis, module: str, ref: ir.Ref) -> tuple:
    """What one AFP101 stands for: a name declared nowhere in its module (or its alias's), or an
    alias no import gives. One root cause, one diagnostic: every other use of it is a label."""
    if ref.alias is not None and ref.alias not in a.aliases.get(module, {}):
        return module, ref.alias, None
    return module, ref.alias, ref.name


def also_named(d: Diagnostic, refs: list[ir.Ref]) -> Diagnostic:
    """`d`, with a secondary label at each further use of the unknown name (`refs`)."""
    if not refs:
        return d
    more = tuple(Label(r.span, "also named here", False) for r in refs)
    return attrs.evolve(d, labels=d.labels + more)


def unresolved_names(a: Analysis) -> frozenset[tuple]:
    """The `_unknown_key`s of every reference the declarations make that resolves to nothing
    (reported by `check_names`): a test naming one of them again is the same root cause."""
    def make() -> frozenset[tuple]:
        out = set()
        for m in a.program.modules:
            for decl in m.decls:
                for refs, _, _ in _refs(decl):
                    out.update(_unknown_key(a, m.key, ref) for ref in refs if a.resolve(m.key, ref) is None
                               and not (type(decl) is ir.Policy and _builtin(ref)))
        return frozenset(out)
    return a.memo("unresolved-names", make)


def _duplicates(m: ir.Module) -> Iterator[Diagnostic]:
    first: dict[str, ir.Decl] = {}
    for d in m.decls:
        if d.name in first:
            prev = first[d.name]
            yield diag("AFP103", f"the name `{d.name}` is declared twice", d.span,
                       f"{ir.kind_of(d)} `{d.name}` declared again here",
                       secondary=(Label(prev.span, f"first declared here as a {ir.kind_of(prev)}", False),),
                       help="names live in one namespace per module, whatever their kinds: rename one")
        else:
            first[d.name] = d
    for imp in m.imports:  # an alias is a name of the module too
        d = first.get(imp.alias)
        if d is not None:
            yield diag("AFP103", f"the name `{d.name}` is both an import alias and a declaration",
                       d.span, f"{ir.kind_of(d)} `{d.name}` declared here",
                       secondary=(Label(imp.alias_span, "the import's alias", False),),
                       help="names live in one namespace per module: rename the declaration or "
                            "the alias")


def _lists(decl: ir.Decl) -> tuple[tuple[str, tuple[ir.Ref, ...]], ...]:
    if isinstance(decl, ir.Agent):
        return (("tools", decl.tools), ("skills", decl.skills), ("context", decl.context),
                ("policies", decl.policies), ("redact", decl.redact))
    if isinstance(decl, ir.Skill):
        return (("tools", decl.tools),)
    return ()


def _repeated(lists: tuple[tuple[str, tuple[ir.Ref, ...]], ...]) -> Iterator[Diagnostic]:
    """A name listed twice in one list attribute (`tools = [t, t]`, `lists`: a declaration's
    `_lists`): a warning at the repeat."""
    for key, refs in lists:
        if len(refs) < 2:
            continue  # (nothing to repeat)
        seen: dict[tuple, ir.Ref] = {}
        for ref in refs:
            first = seen.setdefault((ref.alias, ref.name), ref)
            if first is not ref:
                yield diag("AFP106", f"`{ref}` is listed twice in `{key}`", ref.span,
                           "listed again here", severity=Severity.WARNING,
                           secondary=(Label(first.span, "first listed here", False),),
                           help=f"remove the repeat from `{key}`")


_TOOL, _SKILL = (ir.Tool,), (ir.Skill,)


def _refs(decl: ir.Decl) -> Iterator[tuple[Iterable[ir.Ref], tuple[type, ...], str]]:
    """The declaration's references in source order, in runs of one expected kind (a run rather
    than a tuple per reference: most references are in lists)."""
    if isinstance(decl, ir.Agent):
        yield decl.tools, _TOOL, "a tool"
        yield decl.skills, _SKILL, "a skill"
        if decl.graph is not None:
            yield (decl.graph,), (ir.Graph,), "a graph"
        yield decl.context, CONTEXT, "a steering, fact or instruction"
        yield decl.policies, (ir.Policy,), "a policy"
        yield decl.redact, (ir.Redact,), "a redact rule"
    elif isinstance(decl, ir.Tool) and isinstance(decl.impl, ir.AgentImpl):
        yield (decl.impl.agent,), (ir.Agent,), "an agent"
    elif isinstance(decl, ir.Skill):
        yield decl.tools, _TOOL, "a tool"
        if decl.steps:
            yield (s.tool for s in decl.steps), _TOOL, "a tool"
    elif isinstance(decl, ir.Graph):
        yield (e.skill for e in decl.entries), _SKILL, "a skill"
        for r in decl.routes:
            yield (r.src, r.dst), _SKILL, "a skill"
            if r.on is not None:
                yield (r.on,), _TOOL, "a tool"
    elif isinstance(decl, ir.Policy):
        yield (b.tool for b in decl.blocks if b.tool is not None), _TOOL, "a tool"
    elif isinstance(decl, ir.Test) and decl.agent is not None:
        yield (decl.agent,), (ir.Agent,), "an agent"


def _check_ref(a: Analysis, module: str, ref: ir.Ref, kinds: tuple[type, ...], what: str) -> Diagnostic | None:
    if ref.alias is not None and ref.alias not in a.aliases.get(module, {}):
        known = sorted(a.aliases.get(module, {}))
        if any(i.alias == ref.alias for i in a.modules[module].imports):
            return None  # the import itself failed and was reported
        return diag("AFP101", f"unknown module alias `{ref.alias}`", ref.span, "no import has this alias",
                    help=_did_you_mean(ref.alias, known) or f'import it first: `import "..." as {ref.alias}`')
    resolved = a.resolve(module, ref)
    if resolved is None:
        target = a.aliases.get(module, {}).get(ref.alias) if ref.alias else module
        table = a.symbols.get(target, {})
        same_kind = [n for n, d in table.items() if isinstance(d, kinds)]
        prefix = f"{ref.alias}." if ref.alias else ""  # (a suggestion is written as the use is)
        # (names of the kind expected only: a name of another kind would only be AFP102)
        hint = (_did_you_mean(ref.name, same_kind, prefix)
                or (None if ref.alias else imported_hint(a, module, ref.name, kinds)))
        where = f" in module `{ref.alias}`" if ref.alias else ""
        return diag("AFP101", f"unknown {what[2:] if what.startswith('a ') else what[3:]} `{ref}`", ref.span,
                    f"nothing named `{ref.name}` is declared{where}", help=hint)
    if not isinstance(resolved.decl, kinds) and not duplicated_as(a, resolved.module, ref.name, kinds):
        return diag("AFP102", f"`{ref}` is {ir.a_kind(resolved.decl)}, but {what} is expected here", ref.span,
                    f"expected {what}", secondary=(Label(resolved.decl.span, f"`{ref.name}` is declared here",
                                                         False),) if resolved.module == module else ())
    return None


def _builtin_route(ref: ir.Ref) -> Diagnostic:
    """AFP209 for `route a -> b on read_skill` (or `skip_step`): a built-in is no tool of the
    source skill, so the route never fires (semantics §4); not "unknown tool", which it is not."""
    return diag("AFP209", f"a route cannot wait for the built-in `{ref.name}`", ref.span,
                "a built-in, not a tool of the skill",
                help="write a bare route (`route a -> b`) to let the model pick `b` with "
                     "`read_skill`, or wait for one of the source skill's own tools"
                if ref.name == READ_SKILL else
                "wait for one of the source skill's own tools (a step's tool)")


def _builtin(ref: ir.Ref) -> bool:
    """A policy block's tool that is a built-in (`before read_skill`): policies see its calls."""
    return ref.alias is None and ref.name in (READ_SKILL, SKIP_STEP)


def duplicated_as(a: Analysis, module: str, name: str, kinds: type | tuple[type, ...]) -> bool:
    """Is `name` declared twice in `module` (AFP103), once as one of `kinds`? A reference to it
    is then not also of the wrong kind: one root cause, one diagnostic."""
    m = a.modules.get(module)
    return m is not None and any(d.name == name and isinstance(d, kinds) for d in m.decls)


def imported_hint(a: Analysis, module: str, name: str, kinds: tuple[type, ...]) -> str | None:
    """"did you mean `alias.name`?" for a bare name that only an imported module declares (of the
    kind expected here): the alias was left out, as in `redact = [cards]` for `std_redact.cards`."""
    found = [f"{alias}.{n}" for alias, target in sorted(a.aliases.get(module, {}).items())
             for n, d in a.symbols.get(target, {}).items() if isinstance(d, kinds)]
    exact = [q for q in found if q.rpartition(".")[2] == name]
    if exact:
        return f"did you mean `{exact[0]}`?"
    bare = {}
    for q in found:
        bare.setdefault(q.rpartition(".")[2], q)
    close = closest(name, list(bare))
    return f"did you mean `{bare[close]}`?" if close else None


def _did_you_mean(name: str, candidates: list[str], prefix: str = "") -> str | None:
    close = closest(name, candidates)
    return f"did you mean `{prefix}{close}`?" if close else None


def _ambiguous_agents(a: Analysis, m: ir.Module) -> Iterator[Diagnostic]:
    agents = [d for d in m.decls if isinstance(d, ir.Agent)]
    if len(agents) == 1:
        return
    for t in m.decls:
        if isinstance(t, ir.Test) and t.agent is None:
            msg = ("this test names no agent and the module declares none" if not agents else
                   f"this test names no agent and the module declares {len(agents)}")
            yield diag("AFP111", msg, t.span, "which agent?",
                       help="add `agent = NAME` to the test" if agents else _imported_agent(a, m))


def _imported_agent(a: Analysis, m: ir.Module) -> str:
    """The help for a module with no agent of its own: an imported one by its alias, if any."""
    for alias, key in a.aliases.get(m.key, {}).items():
        found = next((d.name for d in a.modules[key].decls if isinstance(d, ir.Agent)), None) \
            if key in a.modules else None
        if found is not None:
            return f"add `agent = {alias}.{found}` to the test, or declare an agent to test"
    return "declare an agent to test"
