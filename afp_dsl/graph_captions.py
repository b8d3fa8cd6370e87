"""Diagram captions: a route's and an entry's label, readable guards, Mermaid escaping.

Role:       the text of the edges `graph_export` draws (Mermaid, DOT, JSON) and the HTML
            report's graph; split from `graph_export` along that seam.
Invariants: pure and deterministic; a guard reads `=`, `≠`, `≥`, `≤`, `in [a, b]`, `AND`, `OR`,
            `NOT`, strings unquoted (an empty or blank one quoted, `""`: it would vanish),
            numbers as `json.dumps` writes them; every Mermaid caption is entity-escaped (`#`,
            `|`, `"`, `<`, `>`, `%`) and quoted when it holds a bracket, `@`, `~`.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

import attrs

from . import ir

_OPS = {"==": "=", "!=": "≠", "<=": "≤", ">=": "≥"}
_MERMAID_ESCAPES = {"#": "#35;", "|": "#124;", '"': "#quot;", "<": "#lt;", ">": "#gt;",
                    "%": "#37;"}  # (`%%` starts a Mermaid comment or `%%{…}` directive)
_MERMAID_TABLE = str.maketrans(_MERMAID_ESCAPES)
# Unquoted, a bracket in an edge label starts a node shape, `@` an edge id (`e1@-->`) and `~~~`
# an invisible link (Mermaid's parser rejects the line); between quotes (`|"…"|`) they are plain
# text, so a caption holding one is quoted instead of mangled.
_QUOTED_IF = frozenset("[](){}@~")
# Line breaks (those of str.splitlines) become spaces; other whitespace is kept as written.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


# ---------------------------------------------------------------- captions
def entry_caption(e: ir.Entry) -> str | None:
    if e.label is not None:
        return e.label
    return f"when {guard_caption(e.when)}" if e.when is not None else None


def route_caption(r: ir.Route) -> str | None:
    """The explicit label, else `on tool`, `on tool status=a,b`, `on status=a`, `when …`."""
    if r.label is not None:
        return r.label
    parts = []
    if r.on is not None:
        parts.append(f"on {r.on}")
    if r.status:
        status = "status=" + ",".join(s.name for s in r.status)
        parts.append(status if r.on is not None else f"on {status}")
    if r.when is not None:
        parts.append(f"when {guard_caption(r.when)}")
    return " ".join(parts) or None


def guarded_caption(stmt: ir.Entry | ir.Route, guard: Any) -> str | None:
    """The statement's caption with its guard as `guard` rewrites it (a run's redaction hides
    what the guard compares a secret with); an explicit label as it is."""
    if stmt.when is None or stmt.label is not None:
        return entry_caption(stmt) if isinstance(stmt, ir.Entry) else route_caption(stmt)
    hidden = attrs.evolve(stmt, when=guard(stmt.when))
    return entry_caption(hidden) if isinstance(stmt, ir.Entry) else route_caption(hidden)


def guard_caption(e: Any) -> str:
    """A readable guard: `=`, `≠`, `≥`, `≤`, `in [a, b]`, `AND`, `OR`, `NOT`; strings unquoted.

    Example:
        >>> guard_caption(ir.And(items=(ir.Compare(op=">=", left=ir.Path(root="score"),
        ...     right=ir.Lit(value=0.7)), ir.Compare(op="in", left=ir.Path(root="level"),
        ...     right=ir.ListExpr(items=(ir.Lit(value="high"), ir.Lit(value="critical")))))))
        'score ≥ 0.7 AND level in [high, critical]'
    """
    t = type(e)  # Speed: exact types (the IR node classes have no subclasses), commonest first
    if t is ir.Compare:
        return f"{_operand(e.left)} {_OPS.get(e.op, e.op)} {_operand(e.right)}"
    if t is ir.And:
        return " AND ".join(_paren(i, ir.Or) for i in e.items)
    if t is ir.Or:
        return " OR ".join(guard_caption(i) for i in e.items)
    if t is ir.Not:
        return "NOT " + _paren(e.item, (ir.And, ir.Or, ir.Compare))
    return _operand(e)


def readable_condition(text: str) -> str:
    """A recorded condition's source text (`result.amount <= 500`, from a `route.evaluated`
    event) written as `guard_caption` writes guards (`result.amount ≤ 500`): the operators and
    `and`/`or`/`not` replaced, strings unquoted, the rest as written. Text it cannot read as
    tokens is kept as it is."""
    from .fastlex import Bail, lex
    try:
        kinds, vals, starts, ends, _ = lex(text)
    except (Bail, RecursionError):
        return text
    out, at = [], 0
    for kind, val, start, end in zip(kinds[:-1], vals, starts, ends):
        out.append(text[at:start])
        if kind in _OPS:
            val = _OPS[kind]
        elif kind == "W" and val in ("and", "or", "not"):
            val = val.upper()
        elif kind == "S":
            try:
                text_val = json.loads(val)
            except ValueError:
                text_val = val
            val = text_val if isinstance(text_val, str) and text_val.strip() else val
        out.append(val)
        at = end
    return "".join(out) + text[at:]


def _paren(e: Any, kinds) -> str:
    text = guard_caption(e)
    return f"({text})" if isinstance(e, kinds) else text


def _operand(e: Any) -> str:
    t = type(e)
    if t is ir.Path:
        return e.root + "".join([f"[{s}]" if isinstance(s, int) else f".{s}" for s in e.segments])
    if t is ir.Lit:  # Speed: a plain int or finite float as `json.dumps` writes it (its repr)
        v = e.value  # (a string unquoted, but an empty or blank one quoted: it would vanish)
        return (v if v.strip() else json.dumps(v)) if isinstance(v, str) else repr(v) if type(v) is int or (
            type(v) is float and math.isfinite(v)) else json.dumps(v)
    if t is ir.ListExpr:
        return "[" + ", ".join(_operand(i) for i in e.items) + "]"
    if t is ir.Call:
        return f"{e.func}({e.arg})"
    if t is ir.Regex:
        return str(e)
    if t is ir.Invalid:
        return "?"
    return guard_caption(e)


# ---------------------------------------------------------------- Mermaid
def mermaid_escape(text: str) -> str:
    """Entity-escape text for Mermaid (tooling.md §4: `|`, `"`, `<`, `>`): `|` would end an
    edge label early, a quote ends a string, angle brackets are HTML; `#` itself starts an
    entity, so it is escaped too. Line breaks become spaces; nothing else changes.

    Example:
        >>> mermaid_escape('on t status=a|b "x" <y> #1  [c]')
        'on t status=a#124;b #quot;x#quot; #lt;y#gt; #35;1  [c]'
    """
    return _LINE_BREAK.sub(" ", text).translate(_MERMAID_TABLE)


def mermaid_caption(text: str) -> str:
    """An edge label as it sits between the pipes: escaped, and quoted when it holds a bracket,
    `@` or `~` (unquoted, `[ ] ( ) { }` start node shapes, `a@b` an edge id and `~~~` a link, and
    Mermaid rejects the line; quoted, they are text); a quoted label's leading backtick is an
    entity (`"\u0060` opens a Markdown string).

    Example:
        >>> mermaid_caption('on probe')
        'on probe'
        >>> mermaid_caption('when level in [high, critical] AND x > 1')
        '"when level in [high, critical] AND x #gt; 1"'
    """
    escaped = mermaid_escape(text)
    if _QUOTED_IF.isdisjoint(escaped):
        return escaped
    return '"' + ("#96;" + escaped[1:] if escaped.startswith("`") else escaped) + '"'
