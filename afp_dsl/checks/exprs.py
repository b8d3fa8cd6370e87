"""Expression checks: roots allowed per place, paths against tool schemas (comparisons: `comparisons`).

Role:       checks layer; walks every expression site (`sitelist.sites`), handing each
            comparison and route status to `comparisons`.
Emits:      AFP101/AFP102 for `returned(t)` / `active(s)` arguments, AFP303 unknown-root,
            AFP304 unknown-field, AFP305 type-mismatch (also a regex literal anywhere but after
            `matches`), AFP306 status-not-in-vocabulary.
Invariants: a comparison's AFP305 is claimed exactly when `impossible.self_impossible` proves it
            false under its key's schema facts (or, between two paths, their declared types), so
            `guards` can skip guards whose only flaw is one of these (a misplaced regex is an opaque atom there, never a proof); an unknown
            field is claimed only where the schema forbids other properties, and only for paths
            the place types (`sites.schema_view`).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..evaluate import render_expr
from ..suggest import closest
from . import sitelist
from . import sites as S
from .comparisons import compare, route_statuses
from .names import duplicated_as, imported_hint
from .schemafacts import result_may_parse
from .schemapaths import FieldProblem, walk_schema
from .solver import key_text


def check_exprs(analysis: Analysis) -> Iterable[Diagnostic]:
    for site in sitelist.sites(analysis):
        yield from check_site(analysis, site)
    for module, g in analysis.decls(ir.Graph):
        for r in g.routes:
            if r.status:
                yield from route_statuses(r)


def check_site(analysis: Analysis, site: S.Site) -> Iterator[Diagnostic]:
    bad: set[int] = set()  # ids of operands already reported
    nodes = walk(site.expr)
    for node, d in operand_problems(analysis, site, nodes):
        bad.add(id(node))
        yield d
    kinds = set(map(type, nodes))  # Speed: `nodes` holds every node of the expression
    if kinds & _CONDITIONS and (ir.Compare in kinds and len(nodes) > 3 or ir.ListExpr in kinds):
        for node, d in _nested_conditions(nodes):
            bad.add(id(node))
            yield d
    if ir.Regex in kinds:
        for node, d in _misplaced_regexes(site.expr, nodes):
            if not (bad and any(id(x) in bad for x in walk(node))):  # (reported already)
                bad.add(id(node))
                yield d
    if ir.Invalid in kinds:  # (reported by the front end, AFP106)
        bad.update(id(node) for node in nodes if type(node) is ir.Invalid)
    facts = site.facts
    for node in nodes:
        if isinstance(node, ir.Compare) and not (bad and any(id(x) in bad for x in walk(node))):
            yield from compare(site, node, facts)


def walk(e: Any) -> list[Any]:
    """Every node of an expression, parents first (depth-first, children in order).

    Speed: a list built with an explicit stack, instead of nested generators (one per level);
    nodes are told apart by exact type (the IR node classes have no subclasses)."""
    if type(e) is ir.Compare and type(e.left) not in _INNER and type(e.right) not in _INNER:
        return [e, e.left, e.right]  # Speed: the commonest guard, `path OP value`, at once
    out: list[Any] = []
    todo = [e]
    while todo:
        node = todo.pop()
        out.append(node)
        t = type(node)
        if t in _BRANCHES:
            todo.extend(reversed(node.items))
        elif t is ir.Compare:
            todo += (node.right, node.left)
        elif t is ir.Not:
            todo.append(node.item)
    return out


_BRANCHES = frozenset({ir.And, ir.Or, ir.ListExpr})
_INNER = _BRANCHES | {ir.Compare, ir.Not}  # the nodes `walk` looks into


# ---------------------------------------------------------------- roots and paths
def has_unknown_operand(analysis: Analysis, site: S.Site) -> bool:
    """Does the site's expression name an unknown root or field (AFP303/AFP304), hold an
    operand the front end rejected (`ir.Invalid`, AFP106) or a condition as an operand (AFP001)?"""
    nodes = walk(site.expr)
    return (any(d.code in ("AFP303", "AFP304") for _, d in operand_problems(analysis, site))
            or any(type(n) is ir.Invalid for n in nodes)
            or any(True for _ in _nested_conditions(nodes)))  # (AFP001: a condition as operand)


def operand_problems(analysis: Analysis, site: S.Site,
                     nodes: list[Any] | None = None) -> tuple[tuple[Any, Diagnostic], ...]:
    """(node, diagnostic) for each operand naming something unknown, in walk order (`nodes`:
    `walk(site.expr)`, when the caller has it). Speed: settled once per site and analysis (the
    expression checks and the route pairs both ask); keyed by identity, the entry keeping the
    site alive; bounded, and dropped after each `run_checks`."""
    hit = _OPERANDS.get(id(site))
    if hit is not None and hit[0] is site and hit[1] is analysis:
        return hit[2]
    if len(_OPERANDS) >= 65536:
        _OPERANDS.clear()
    found = _operand_problems(analysis, site, walk(site.expr) if nodes is None else nodes)
    _OPERANDS[id(site)] = (site, analysis, found)
    return found


_OPERANDS: dict[int, tuple[S.Site, Analysis, tuple]] = {}


def clear_cache() -> None:
    _OPERANDS.clear()


def _operand_problems(analysis: Analysis, site: S.Site,
                      nodes: Iterable[Any]) -> tuple[tuple[Any, Diagnostic], ...]:
    """(node, diagnostic) for each operand naming something unknown, in `nodes` order.
    Speed: told apart by exact type (no subclasses), asked of every node of every site; only
    paths and calls name anything."""
    found = []
    for node in nodes:
        t = type(node)
        if t is ir.Path:
            d = _path_operand(site, node)
        elif t is ir.Call:
            d = _call_operand(analysis, site, node)
        else:
            continue
        if d is not None:
            found.append((node, d))
    return tuple(found)


def _path_operand(site: S.Site, node: ir.Path) -> Diagnostic | None:
    if node.root not in S.ROOTS[site.place] or node.root in ("returned", "active"):
        return _unknown_root(site, node.root, node.root_span if node.root_span.end else node.span)
    return _path(site, node)


def _call_operand(analysis: Analysis, site: S.Site, node: ir.Call) -> Diagnostic | None:
    if node.func not in S.ROOTS[site.place]:
        return _unknown_root(site, f"{node.func}(...)", node.span)
    return _call_arg(analysis, site.module, node)


def _unknown_root(site: S.Site, root: str, span) -> Diagnostic:
    allowed = [r for r in S.ROOTS[site.place] if r not in ("returned", "active")]
    shown = ", ".join(f"`{r}`" for r in allowed)
    calls = " and the calls `returned(tool)`, `active(skill)`" if site.place == "context" else ""
    close = closest(root, allowed) or next((r for r in _MEANT.get(root, ()) if r in allowed), None)
    return diag("AFP303", f"`{root}` cannot be used in {S.PLACE_NAMES[site.place]}", span,
                f"not available in {site.owner}",
                notes=(f"allowed here: {shown}{calls}",),
                help=f"did you mean `{close}`?" if close else None)


# Roots of other frameworks' words for what a place offers (`answer` is `text` in `output`).
_MEANT = {"answer": ("text",), "response": ("text", "result"), "reply": ("text",),
          "output": ("text", "result"), "arguments": ("args",), "params": ("args",),
          "input": ("args", "message"), "prompt": ("message",), "user": ("message",),
          "query": ("message",), "step": ("iteration",), "turn": ("iteration",)}


def _call_arg(analysis: Analysis, module: str, call: ir.Call) -> Diagnostic | None:
    kind, what = (ir.Tool, "tool") if call.func == "returned" else (ir.Skill, "skill")
    r = analysis.resolve(module, call.arg)
    if r is None:
        names = [d.name for d in analysis.modules[module].decls if isinstance(d, kind)] \
            if module in analysis.modules else []
        close = closest(call.arg.name, names)
        hint = f"did you mean `{close}`?" if close else (
            None if call.arg.alias else imported_hint(analysis, module, call.arg.name, (kind,)))
        return diag("AFP101", f"unknown {what} `{call.arg}`", call.arg.span,
                    f"`{call.func}(...)` needs a {what}", help=hint)
    if not isinstance(r.decl, kind) and not duplicated_as(analysis, r.module, call.arg.name, kind):
        return diag("AFP102", f"`{call.arg}` is {ir.a_kind(r.decl)}, but `{call.func}(...)` "
                    f"needs a {what}", call.arg.span, f"expected a {what}")
    return None


def _path(site: S.Site, p: ir.Path) -> Diagnostic | None:
    if not p.segments:
        return None
    what = S.scalar_root(p.root)
    if what is not None:
        return diag("AFP304", f"`{p.root}` is {what}; it has no field `{_seg(p.segments[0])}`",
                    p.span, "always null", help=f"compare `{p.root}` itself")
    if p.root == "last":
        if p.segments[0] not in ("tool", "status", "result"):
            return _no_field(p, 0, "`last` has the fields `tool`, `status` and `result`",
                             ("tool", "status", "result"))
        if p.segments[0] != "result" and len(p.segments) > 1:  # (a name, or null: no fields)
            return diag("AFP304", f"`last.{p.segments[0]}` is a string; it has no field "
                        f"`{_seg(p.segments[1])}`", p.span, "always null",
                        help=f"compare `last.{p.segments[0]}` itself")
        return None
    if p.root not in ("args", "result"):
        return None
    view = S.schema_view(site, p.root)
    if view is None or (view.loose and p.segments[0] in view.keys):
        return None  # not typed here, or read from a failure's or an envelope's own fields
    if p.root == "result" and result_may_parse(view.schema.json):
        return None  # a string result may be JSON text, read parsed: its fields are unknown
    found = walk_schema(view.schema.json, p.segments)
    if isinstance(found, FieldProblem):
        side = "input" if p.root == "args" else "output"
        prefix = key_text(("path", p.root, *p.segments[:found.index]))
        if found.message == "has no field":
            msg = f"the {side} schema of `{site.tool.name}` declares no field `{prefix}.{_seg(p.segments[found.index])}`"
            return _no_field(p, found.index, msg, found.candidates)
        return _no_field(p, found.index, f"`{prefix}` {found.message} (the {side} schema of "
                         f"`{site.tool.name}`)", ())
    return None


def _no_field(p: ir.Path, index: int, msg: str, candidates: tuple) -> Diagnostic:
    seg = p.segments[index]
    close = closest(str(seg), [str(c) for c in candidates])
    known = ", ".join(f"`{c}`" for c in candidates)
    return diag("AFP304", msg, p.span, "unknown field",
                notes=(f"known fields: {known}",) if candidates and not close else (),
                help=f"did you mean `{close}`?" if close else None)


def _seg(s: Any) -> str:
    return f"[{s}]" if isinstance(s, int) else str(s)


# ---------------------------------------------------------------- conditions as values
_CONDITIONS = frozenset({ir.Compare, ir.And, ir.Or, ir.Not})


def _nested_conditions(nodes: list[Any]) -> Iterator[tuple[Any, Diagnostic]]:
    """A condition where language §6 wants an operand (`path`, `literal`, `list`, `call`): the
    operand of a comparison (`(x > 1) == true`) or an item of a list (`mentions [x > 1]`). The
    grammar of §6 has no such form (AFP001); the parser takes it so as to say so here, once per
    comparison or list. (A bracketed condition joined by `and`/`or`/`not` is the grammar's.)"""
    for node in nodes:
        if type(node) is ir.Compare:
            inner = [o for o in (node.left, node.right) if type(o) in _CONDITIONS]
            where = f"an operand of `{node.op}`"
        elif type(node) is ir.ListExpr:
            inner = [i for i in node.items if type(i) in _CONDITIONS]
            where = "an item of a list"
        else:
            continue
        if inner:
            yield node, diag(
                "AFP001", f"a condition cannot be {where}", inner[0].span, "a condition, not a value",
                notes=("an operand is a path, a literal, a list or `returned(...)`/`active(...)`; "
                       "conditions are joined with `and`, `or` and `not`",),
                help="write the condition on its own (`x > 1`, not `(x > 1) == true`), or "
                     "compare a path with a value")


# ---------------------------------------------------------------- regexes
def _misplaced_regexes(expr: Any, nodes: list[Any]) -> Iterator[tuple[Any, Diagnostic]]:
    """A regex literal anywhere but after `matches` (one per comparison): it is not a value, so
    the condition cannot be evaluated at run time (a policy denies, a route does not fire).
    `nodes`: every node of `expr` (the caller looks for a regex among them first)."""
    if isinstance(expr, ir.Regex):
        yield expr, _bare_regex(expr)
    for node in nodes:
        if isinstance(node, ir.Compare):
            operands = (node.left,) if node.op == "matches" else (node.left, node.right)
            found = [x for o in operands for x in walk(o) if isinstance(x, ir.Regex)]
            if found:
                yield node, _regex_operand(node, found[0])
        elif isinstance(node, (ir.And, ir.Or, ir.Not)):
            items = (node.item,) if isinstance(node, ir.Not) else node.items
            yield from ((i, _bare_regex(i)) for i in items if isinstance(i, ir.Regex))


_REGEX_NOTE = ("a regex literal stands only after `matches`; anywhere else the condition cannot "
               "be evaluated at run time",)


def _regex_operand(c: ir.Compare, rx: ir.Regex) -> Diagnostic:
    text = next((o for o in (c.left, c.right) if isinstance(o, (ir.Path, ir.Lit))), None)
    subject = render_expr(text) if text is not None else "PATH"
    test = f"{subject} matches {rx}"
    hint = f"not ({test})" if c.op in ("!=", "not in") else test
    return diag("AFP305", f"a regular expression cannot be an operand of `{c.op}`", rx.span,
                "not a value", notes=_REGEX_NOTE, help=f"to test a pattern, use `matches`: `{hint}`")


def _bare_regex(rx: ir.Regex) -> Diagnostic:
    return diag("AFP305", "a regular expression is not a condition", rx.span, "not a value",
                notes=_REGEX_NOTE, help=f"to test a pattern, use `matches`: `message matches {rx}`")
