"""Guard satisfiability: entry, route, context and `check_in` conditions that can never hold.

Role:       checks layer; runs `solver.refute` on every entry, route and fact/instruction `when`
            and every tool `check_in`, with the facts of its place (a route's `on` tool and
            `status` set, the source skill, the tool's output schema; a `check_in`'s own tool's
            input schema).
Emits:      AFP208 guard-unsatisfiable (error).
Invariants: claimed only when every case of the guard's DNF is contradictory on one key;
            a guard whose every contradictory case holds a comparison already reported as
            AFP305/AFP306 (impossible on its own) is skipped; regexes, `mentions`, comparisons
            between paths and host code are never used to claim anything. A `check_in` written
            as the literal `false` is the explicit "never ask" and is not reported.
"""
from __future__ import annotations

from typing import Iterable

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..printer_values import print_expr
from ..suggest import closest
from . import sitelist
from . import sites as S
from .exprs import walk
from .impossible import self_impossible
from .solver import Atom, Facts, Verdict

GUARDED_PLACES = ("entry", "route", "context", "check_in")


def check_guards(analysis: Analysis) -> Iterable[Diagnostic]:
    for site in sitelist.sites(analysis):
        if site.place not in GUARDED_PLACES:
            continue
        if site.place == "check_in":
            if isinstance(site.expr, ir.Lit) and site.expr.value is False:
                continue  # `check_in = false`: the check-in switched off, on purpose
            d = unsatisfiable(site, what=site.owner)
        else:
            d = unsatisfiable(site)
        if d is not None:
            yield d


def unsatisfiable(site: S.Site, code: str = "AFP208", what: str | None = None) -> Diagnostic | None:
    """A diagnostic when the site's condition provably never holds (and is not AFP305's)."""
    facts = site.facts
    verdict = site.never()
    if verdict is None or covered_by_exprs(verdict, facts):
        return None
    what = what or f"the condition of {site.owner}"
    notes = describe_reasons(verdict)
    return diag(code, f"{what} can never hold", site.expr.span, "never true", notes=notes,
                help=_not_a_condition(site.expr) or _misspelt_name(site) or
                "fix the contradiction, or remove the condition's dead branch")


def _misspelt_name(site: S.Site) -> str | None:
    """"did you mean" for `tool == "lokup"` / `skill == "triag"` in a route: a name close to one
    of those the route can see (its tool, the tools its source skill hears, its source skill)."""
    known = {"tool": (site.on,) if site.on else site.hears,
             "skill": (site.skill,) if site.place == "route" and site.skill else ()}
    for node in walk(site.expr):
        if type(node) is not ir.Compare or node.op not in ("==", "in"):
            continue
        path, other = (node.left, node.right) if type(node.left) is ir.Path else (node.right, node.left)
        if type(path) is not ir.Path or path.segments or not known.get(path.root):
            continue
        items = other.items if type(other) is ir.ListExpr else (other,)
        for lit in items:
            if type(lit) is ir.Lit and isinstance(lit.value, str) and lit.value not in known[path.root]:
                close = closest(lit.value, known[path.root])
                if close:
                    shown = ", ".join(f"`{n}`" for n in known[path.root])
                    return f'did you mean `"{close}"`? `{path.root}` here is one of {shown}'
    return None


def _not_a_condition(expr: ir.Expr) -> str | None:
    """The help for a condition that is a bare value rather than a test (`check_in = "true"`,
    `when = message`): only `true` holds, so name the form that was meant."""
    if isinstance(expr, ir.Lit) and expr.value in ("true", "false"):
        return f"write `{expr.value}` without quotes"
    if isinstance(expr, ir.Lit) and not isinstance(expr.value, bool):
        return ("a condition is `true`, `false` or a comparison such as `args.amount > 100` or "
                "`message matches /urgent/`")
    if isinstance(expr, ir.Path):
        text = print_expr(expr)
        return f"compare `{text}`, such as `{text} == \"…\"`; only `true` holds on its own"
    return None


def covered_by_exprs(verdict: Verdict, facts: Facts) -> bool:
    """Every contradictory case contains a comparison that is impossible on its own."""
    for case in verdict.cases:
        if not any(a.positive and self_impossible(a, facts) for a in case):
            return False
    return True


def describe_reasons(verdict: Verdict, limit: int = 3) -> tuple[str, ...]:
    out: list[str] = []
    many = len(verdict.reasons) > 1
    for i, reason in enumerate(verdict.reasons[:limit]):
        text = describe_conflict(reason)
        out.append(f"case {i + 1}: {text}" if many else text)
    if len(verdict.reasons) > limit:
        out.append(f"… and {len(verdict.reasons) - limit} more contradictory cases")
    return tuple(out)


def describe_conflict(atoms: Iterable[Atom]) -> str:
    """`a` and `b` cannot both be true; or `a` can never be true: <fact>."""
    atoms = list(atoms)
    written = [a for a in atoms if a.level == "guard"]
    known = [a for a in atoms if a.level != "guard"]
    shown = " and ".join(f"`{a.text}`" for a in written)
    if not written:
        return "; ".join(a.text for a in known)
    if known:
        return f"{shown} cannot hold: " + "; ".join(a.text for a in known)
    if len(written) == 1:
        a = written[0]
        return f"`{a.text}` is always false" if a.kind == "const" else f"`{a.text}` can never be true"
    return f"{shown} cannot all be true" if len(written) > 2 else f"{shown} cannot both be true"
