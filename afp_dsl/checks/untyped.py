"""Ordered comparisons of an argument whose type the tool's input schema does not give.

Role:       checks layer; for a tool's `check_in` and a policy `before`/`after` rule on a named
            tool, every `args.PATH OP literal` with `OP` one of `< <= > >=` and a number or
            string literal, where the input schema leaves the field's type open (no `input`, a
            field typed `any` or `{}`, or an undeclared field of an open object).
Emits:      AFP308 untyped-comparison (warning): such a comparison is false when the model sends
            the other type (`"5000"` for 5000: language §6, no conversion), so a check-in that
            should pause, or a rule that should deny, silently does not.
Invariants: warns only where the schema provably says nothing of the type (a composed schema,
            `patternProperties`, a `$ref` or a field it does not allow is left to other checks);
            a site with an unknown root or field (AFP303/AFP304) is skipped.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..evaluate import render_expr
from ..frozen import is_mapping
from . import sites as S
from .sitelist import sites
from .exprs import has_unknown_operand, walk
from .schemapaths import _COMPOSED, Field, walk_schema
from .schemas import is_broken

_ORDERED = frozenset({"<", "<=", ">", ">="})
_TYPED = frozenset({"type", "enum", "const", "$ref"}) | _COMPOSED
_PLACES = frozenset({"check_in", "before", "after"})


def check_untyped(analysis: Analysis) -> Iterable[Diagnostic]:
    for site in sites(analysis):
        if site.place in _PLACES and site.tool is not None:
            yield from _site(analysis, site)


def _site(analysis: Analysis, site: S.Site) -> Iterator[Diagnostic]:
    compares = [n for n in walk(site.expr) if type(n) is ir.Compare and n.op in _ORDERED]
    if not compares or has_unknown_operand(analysis, site):
        return
    for c in compares:
        path, lit = (c.left, c.right) if type(c.left) is ir.Path else (c.right, c.left)
        if (type(path) is ir.Path and path.root == "args" and path.segments
                and type(lit) is ir.Lit and _kind(lit.value) is not None):
            why = _open_type(site.tool, path.segments)
            if why is not None:
                yield _warning(site, c, path, lit, why)


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else None


def _open_type(tool: ir.Tool, segments: tuple) -> str | None:
    """Why the schema leaves the type of `args.<segments>` open, or None when it gives one (or
    cannot be read that far)."""
    if tool.input is None:
        return f"`{tool.name}` declares no `input`"
    if is_broken(tool.input):
        return None
    schema = tool.input.json
    found = walk_schema(schema, segments)
    if isinstance(found, Field):
        return None if _TYPED & set(found.schema) else (
            f"the input schema of `{tool.name}` gives `{_dotted(segments)}` no type")
    if found is not None:
        return None  # (a field the schema does not allow: AFP304)
    parent = schema if len(segments) == 1 else walk_schema(schema, segments[:-1])
    parent = parent.schema if isinstance(parent, Field) else parent
    if not is_mapping(parent) or not isinstance(segments[-1], str) or (
            _COMPOSED | {"patternProperties", "$ref"}) & set(parent):
        return None
    extra = parent.get("additionalProperties", True)
    if extra is True or (is_mapping(extra) and not _TYPED & set(extra)):
        return (f"the input schema of `{tool.name}` does not declare `{_dotted(segments)}` "
                f"(it allows other arguments, of any type)")
    return None


def _dotted(segments: tuple) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segments).lstrip(".")


def _warning(site: S.Site, c: ir.Compare, path: ir.Path, lit: ir.Lit, why: str) -> Diagnostic:
    other = "a number" if _kind(lit.value) == "string" else "a string"
    sent = "5000" if other == "a number" else '"5000"'
    effect = {"check_in": "the check-in does not pause the run",
              "before": "the rule does not match", "after": "the rule does not match"}[site.place]
    want = _kind(lit.value)
    return diag("AFP308", f"`{render_expr(c)}` compares an argument of unknown type with a "
                f"{want}", c.span,
                "the type of the argument is not declared",
                notes=(f"{why}; `{c.op}` needs two numbers or two strings and converts nothing: "
                       f"if the model sends {other} ({sent}), the comparison is false and "
                       f"{effect}",),
                help=_help(site.tool, path, want))


def _help(tool: ir.Tool, path: ir.Path, want: str) -> str:
    field = f"{path.segments[-1]}: {want}"
    if tool.input is None:
        return f"give `{tool.name}` an input schema, e.g. `input {{ {field} }}`"
    return f"declare the field's type in the input schema of `{tool.name}`, e.g. `{field}`"
