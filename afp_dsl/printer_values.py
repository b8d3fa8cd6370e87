"""Canonical text for values and expressions: strings, numbers, regexes, JSON data, conditions.

Role:       the inverse of `lower_values`, used by `printer`.
Invariants: pure; strings are JSON-escaped on one line; data is JSON-shaped (`{ key: value }`,
            bare keys when they are names); expressions get the fewest parentheses that keep
            their structure (`or` < `and` < `not` < comparison < operand).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from . import ir

INDENT = "  "
WIDTH = 100
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def indent(text: str) -> str:
    return "\n".join(INDENT + line if line else line for line in text.split("\n"))


# ---------------------------------------------------------------- literals and data
def string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def number(value: int | float) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "1e999" if value > 0 else "-1e999"  # what a too-large literal lowers to
    return json.dumps(value)


# A character class as the lexer reads one inside a regex literal (`fastlex.REGEX`): a `/` in it
# is text, so it is written as it stands.
_CLASS = re.compile(r"\[\^?\]?(?:[^\]\\\n\r\[]|\\[^\n\r])*\]")


def regex(r: ir.Regex) -> str:
    """`/pattern/flags`, escaping a bare `/` (outside a character class) and line breaks the
    literal cannot hold."""
    out, i, p = [], 0, r.pattern
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            out.append(p[i:i + 2])
            i += 2
            continue
        cls = _CLASS.match(p, i) if c == "[" else None
        if cls is not None:
            out.append(cls.group())
            i = cls.end()
            continue
        out.append({"/": "\\/", "\n": "\\n", "\r": "\\r"}.get(c, c))
        i += 1
    return "/" + "".join(out) + "/" + r.flags


def key(k: str) -> str:
    return k if NAME_RE.match(k) else string(k)


def data(value: Any) -> str:
    """Literal JSON data as a value: one line when short, else one entry per line."""
    flat = _flat(value)
    if len(flat) <= WIDTH - 20 or not isinstance(value, (Mapping, tuple, list)) or not value:
        return flat
    if isinstance(value, Mapping):
        rows = [f"{key(k)}: {data(v)}," for k, v in value.items()]
        return "{\n" + "\n".join(indent(r) for r in rows) + "\n}"
    return "[\n" + "\n".join(indent(data(v) + ",") for v in value) + "\n]"


def _flat(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{key(k)}: {_flat(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if isinstance(value, ir.Regex):
        return regex(value)
    return string(str(value))  # not JSON data: keep something readable


# ---------------------------------------------------------------- expressions
_LEVEL = {ir.Or: 1, ir.And: 2, ir.Not: 3, ir.Compare: 4}


def print_expr(expr: Any) -> str:
    """An expression with the fewest parentheses that keep its structure."""
    if isinstance(expr, ir.Or):
        return " or ".join(_wrap(e, 1) for e in expr.items)
    if isinstance(expr, ir.And):
        return " and ".join(_wrap(e, 2) for e in expr.items)
    if isinstance(expr, ir.Not):
        return "not " + _wrap(expr.item, 2)
    if isinstance(expr, ir.Compare):
        right = expr.right
        r = regex(right) if isinstance(right, ir.Regex) else _wrap(right, 4)
        return f"{_wrap(expr.left, 4)} {expr.op} {r}"
    if isinstance(expr, ir.Path):
        return expr.root + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in expr.segments)
    if isinstance(expr, ir.Lit):
        return _flat(expr.value)
    if isinstance(expr, ir.ListExpr):
        return "[" + ", ".join(print_expr(e) for e in expr.items) + "]"
    if isinstance(expr, ir.Call):
        return f"{expr.func}({expr.arg})"
    if isinstance(expr, ir.Regex):
        return regex(expr)
    if isinstance(expr, ir.Invalid):
        return "?"
    return _flat(expr)


def _wrap(expr: Any, level: int) -> str:
    """Parenthesize `expr` when it binds no tighter than its context (`or` 1 ... operand 4)."""
    own = _LEVEL.get(type(expr), 5)
    return f"({print_expr(expr)})" if own <= level else print_expr(expr)
