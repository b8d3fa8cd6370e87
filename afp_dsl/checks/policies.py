"""Policy and redaction checks: rules that can never match, misplaced `ask`, too-broad patterns.

Role:       checks layer; rule conditions go through `solver` with the facts of their moment
            (a `before T`/`after T` block types `args`/`result` by T's schemas).
Emits:      AFP401 policy-rule-never-matches (warning), AFP402 ask-outside-before,
            AFP403 redact-pattern-too-broad, AFP407 does-nothing (warning: an empty policy or
            redact rule).
Invariants: a block's tool counts as missing only when every agent that uses the policy lacks
            it (a policy no agent uses is not judged); regexes that do not compile are left to
            the syntax checks (AFP004).
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic, Label
from ..evaluate import regex_flags
from ..regex_quiet import compile_quietly
from .regex_risk import BUDGET, paths
from . import graphview as G
from . import sitelist
from . import sites as S
from .guards import unsatisfiable
from .solver import refute

_PROBES = ("", "a", "ab", " ", "\n", "0", "sk-", "A b")


def check_policies(analysis: Analysis) -> Iterable[Diagnostic]:
    users = _policy_users(analysis)
    for module, p in analysis.decls(ir.Policy):
        for i, block in enumerate(p.blocks):
            before = [r for b in p.blocks[:i] if _joined(b, block) for r in b.rules]
            yield from _block(analysis, module, p, block, users.get((module, p.name), []), before)
    for module, r in analysis.decls(ir.Redact):
        yield from _patterns(r)
    yield from _empty(analysis)


def _empty(analysis: Analysis) -> Iterator[Diagnostic]:
    """AFP407 for a policy with no blocks and no `impl`, a redact rule with no keys and no
    patterns: accepted, they would silently allow everything, scrub nothing. Not claimed of a
    declaration with a rejected attribute (AFP104/AFP106): what it was meant to say is unknown."""
    for m, p in analysis.decls(ir.Policy):
        if analysis.attribute_error(m, p):
            continue
        if not any(b.rules for b in p.blocks) and p.impl is None:
            yield diag("AFP407", f"policy `{p.name}` has no rules and no `impl`: it allows "
                       "everything", p.span, "empty policy",
                       help="add a rule (`before t { deny when … because \"…\" }`), or "
                            "bind it to host code with `impl = python(\"module:attr\")`")
    for m, r in analysis.decls(ir.Redact):
        if not r.keys and not r.patterns and not analysis.attribute_error(m, r):
            yield diag("AFP407", f"redact rule `{r.name}` has no `keys` and no `patterns`: it "
                       "scrubs nothing", r.span, "empty redact rule",
                       help='add `keys = ["password"]` or `patterns = [/sk-[A-Za-z0-9]{20,}/]`')


def _policy_users(analysis: Analysis) -> dict[tuple[str, str], list[tuple[str, ir.Agent]]]:
    out: dict[tuple[str, str], list[tuple[str, ir.Agent]]] = {}
    for m, a in analysis.decls(ir.Agent):
        for ref in a.policies:
            r = analysis.resolve(m, ref)
            if r is not None and isinstance(r.decl, ir.Policy):
                out.setdefault((r.module, r.decl.name), []).append((m, a))
    return out


def _joined(first: ir.PolicyBlock, then: ir.PolicyBlock) -> bool:
    """Whether the rules of `first` run before those of `then` for every call `then` sees: two
    blocks of one moment are one list at run time (declaration order), a `before *` block joins
    every tool's, and a block for one tool joins a later block for the same tool only."""
    if first.moment != then.moment:
        return False
    if first.any_tool or then.moment in ("input", "output"):
        return True
    return not then.any_tool and first.tool is not None and then.tool is not None and (
        first.tool.alias, first.tool.name) == (then.tool.alias, then.tool.name)


def _block(analysis: Analysis, module: str, p: ir.Policy, block: ir.PolicyBlock,
           users: list[tuple[str, ir.Agent]], before: list[ir.Rule]) -> Iterator[Diagnostic]:
    for rule in block.rules:
        if rule.action == "ask" and block.moment != "before":
            yield diag("AFP402", f"`ask` cannot be used in an `{block.moment}` block", rule.span,
                       "only `before` can pause for a person",
                       notes=("a pause needs a tool call that has not run yet",),
                       help="use `deny`, or move the rule to a `before` block")
    missing = None if any(analysis.misspelt(m, a) for m, a in users) else \
        _missing_tool(analysis, module, block, users)  # (`tols = [t]`: its tools are unknown)
    if missing is not None:
        yield missing
        return
    yield from _dead_rules(analysis, module, p, block, before)


def _missing_tool(analysis: Analysis, module: str, block: ir.PolicyBlock,
                  users: list[tuple[str, ir.Agent]]) -> Diagnostic | None:
    if block.tool is None or not users:
        return None
    r = analysis.resolve(module, block.tool)
    if r is None and block.tool.alias is None and block.tool.name in _BUILTINS:
        return _missing_builtin(analysis, block, users)
    if r is None or not isinstance(r.decl, ir.Tool):
        return None
    key = (r.module, r.decl.name)
    if any(key in G.agent_tools(analysis, m, a) for m, a in users):
        return None
    if any(_tools_unresolved(analysis, m, a) for m, a in users):
        return None  # a misspelt tool or skill of the agent is the one root cause (AFP101)
    names = ", ".join(f"`{a.name}`" for _, a in users)
    return diag("AFP401", f"the `{block.moment} {block.tool}` rules can never match", block.tool.span,
                "no agent using this policy has this tool",
                notes=(f"the policy is used by {names}, and none of them can call `{block.tool}`",),
                help=f"give the agent the tool `{block.tool}`, or remove the block")


_BUILTINS = ("read_skill", "skip_step")


def _missing_builtin(analysis: Analysis, block: ir.PolicyBlock,
                     users: list[tuple[str, ir.Agent]]) -> Diagnostic | None:
    """AFP401 for a block on a built-in no agent using the policy is offered: `read_skill` goes
    to agents with skills, `skip_step` to agents with a skill that has `steps`."""
    steps = block.tool.name == "skip_step"
    for m, a in users:
        if _tools_unresolved(analysis, m, a):
            return None  # (which skills it has is unknown: AFP101 is the root cause)
        skills = _skills(analysis, m, a)
        if any(s.steps for _, s in skills) if steps else skills:
            return None
    names = ", ".join(f"`{a.name}`" for _, a in users)
    offered = "agents with a skill that has `steps`" if steps else "agents with skills"
    return diag("AFP401", f"the `{block.moment} {block.tool}` rules can never match", block.tool.span,
                "no agent using this policy is offered this built-in",
                notes=(f"`{block.tool}` is offered only to {offered}; the policy is used by {names}",),
                help="remove the block, or give the agent what the built-in serves")


def _skills(analysis: Analysis, module: str, agent: ir.Agent) -> list[tuple[str, ir.Skill]]:
    """The agent's skills: open ones and its graph's."""
    found = (analysis.resolve(module, ref) for ref in agent.skills)
    skills = [(r.module, r.decl) for r in found if r is not None and isinstance(r.decl, ir.Skill)]
    g = G.agent_graph(analysis, module, agent)
    if g is not None:
        skills += [(n.key[0], n.skill) for n in G.view(analysis, g[0], g[1]).nodes.values()]
    return skills


def _tools_unresolved(analysis: Analysis, module: str, agent: ir.Agent) -> bool:
    """True when the agent names a tool, skill or graph that does not resolve (reported by the
    name checks): which tools it has is then unknown."""
    if G.has_unresolved(analysis, module, agent.tools) or \
            G.has_unresolved(analysis, module, agent.skills, ir.Skill):
        return True
    g = G.agent_graph(analysis, module, agent)
    if agent.graph is not None and g is None:
        return True
    found = (analysis.resolve(module, ref) for ref in agent.skills)
    skills = [(r.module, r.decl) for r in found if r is not None]
    if g is not None:
        skills += [(n.key[0], n.skill) for n in G.view(analysis, g[0], g[1]).nodes.values()]
    return any(G.has_unresolved(analysis, m, s.tools) for m, s in skills)


def _dead_rules(analysis: Analysis, module: str, p: ir.Policy, block: ir.PolicyBlock,
                before: list[ir.Rule]) -> Iterator[Diagnostic]:
    """AFP401 for a rule of `block` that never decides; `before`: the rules of the policy's
    earlier blocks that run first for the same calls (`_joined`)."""
    site_list = [s for s in sitelist.policy_sites(analysis, module, p)]
    by_rule = {id(s.expr): s for s in site_list}
    always: ir.Rule | None = next((r for r in before if _always(r)), None)
    earlier: list[ir.Rule] = [r for r in before if _can_hold(r, by_rule)]
    for rule in block.rules:
        if always is not None:
            yield diag("AFP401", f"this `{rule.action}` rule can never match", rule.span,
                       "an earlier rule always decides first",
                       secondary=(Label(always.span, "this rule's condition is always true", False),),
                       notes=("the first rule whose `when` holds decides; later rules never run",),
                       help="move this rule before the one that always matches")
            continue
        site = by_rule.get(id(rule.when))
        if site is not None and refute([site.expr], S.facts(site), reasons=False) is not None:
            # never true on its own: AFP401 here, or AFP305 already (no second, vacuous
            # "shadowed"); and a rule that never holds decides nothing before later rules
            d = unsatisfiable(site, "AFP401", f"the condition of this `{rule.action}` rule")
            if d is not None:
                yield d
            continue
        if site is not None:
            d = _shadowed(rule, earlier, site)
            if d is not None:
                yield d
        earlier.append(rule)
        if _always(rule):
            always = rule


def _always(rule: ir.Rule) -> bool:
    return isinstance(rule.when, ir.Lit) and rule.when.value is True


def _can_hold(rule: ir.Rule, by_rule: dict) -> bool:
    """A rule of an earlier block counts among the ones that decide first unless it never holds
    (reported at its own block)."""
    site = by_rule.get(id(rule.when))
    return site is None or refute([site.expr], S.facts(site), reasons=False) is None


def _shadowed(rule: ir.Rule, earlier: list[ir.Rule], site: S.Site) -> Diagnostic | None:
    """A rule that can hold only where an earlier rule of the block holds (or fails, which is a
    denial) never decides: its `when` and the negation of every earlier `when` cannot all hold."""
    if not earlier:
        return None
    if refute([rule.when] + _negated(earlier), S.facts(site), reasons=False) is None:
        return None
    return diag("AFP401", f"this `{rule.action}` rule can never match", rule.span,
                "earlier rules always decide first",
                secondary=tuple(Label(r.span, "decides first", False) for r in earlier),
                notes=("wherever this rule's condition holds, an earlier rule's holds too; the "
                       "first rule whose `when` holds decides",),
                help="move this rule before the ones that cover it, or narrow their conditions")


def _negated(rules: list[ir.Rule]) -> list[ir.Expr]:
    return [ir.Not(item=r.when, span=r.when.span) for r in rules]


def _patterns(r: ir.Redact) -> Iterator[Diagnostic]:
    for rx in r.patterns:
        try:
            compiled = compile_quietly(rx.pattern, regex_flags(rx.flags))
        except re.error:
            continue
        hit = next((s for s in _PROBES if paths(rx.pattern, rx.flags, len(s)) <= BUDGET
                    and _empty_match(compiled, s)), None)  # (probes are tiny: only the estimate)
        if hit is not None:
            where = "the empty string" if hit == "" else f"an empty piece of {hit!r}"
            note = f"it matches {where}, so it would mark every position of every value"
        elif _shortest_is_empty(rx.pattern, compiled.flags):
            note = ("its shortest match is empty (what it requires is only a lookaround, or "
                    "optional): wherever it matches so, it marks a position, not a value")
        else:
            continue
        yield diag("AFP403", f"the pattern `{rx}` of redact rule `{r.name}` matches the empty string",
                   rx.span, "can match nothing at all", notes=(note,),
                   help="require at least one character, e.g. `+` instead of `*`")


def _shortest_is_empty(pattern: str, flags: int) -> bool:
    """Whether the pattern's shortest match is empty, read off the parse tree of Python's own
    regex compiler (`getwidth`; lookarounds have no width): the probes above only find an empty
    match whose context they happen to hold (`(?<=password=)\\S*` needs `password=` first).
    The parser is the standard library's private module, so anything unexpected from it leaves
    the decision to the probes."""
    try:
        from re import _parser  # (sre_parse until Python 3.11)
        return _parser.parse(pattern, flags).getwidth()[0] == 0
    except Exception:  # noqa: BLE001 - a private API: never a crash of the checker
        return False


def _empty_match(compiled: re.Pattern, text: str) -> bool:
    return any(m.group(0) == "" for m in compiled.finditer(text))
