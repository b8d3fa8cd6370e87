"""Canonical `.afp` source text for an IR module: `print_module`, `print_expr` (base of `afpc fmt`).

Role:       the inverse of `lower` + `lower_schema` (values and expressions: `printer_values`):
            imports, then declarations in order; attributes in the attribute-table order of their
            kind, defaults skipped (required ones always printed); schema blocks invert
            `lower_schema` (a JSON Schema no block produces is printed as a raw map);
            `file(...)` contents are printed inline.
Invariants: pure; `lower(parse(print_module(m))).decls == m.decls` for any IR the front end can
            produce without diagnostics; expressions get the fewest parentheses that keep their
            structure (`or` < `and` < `not` < comparison); comments are not kept (yet).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Callable, Union

import attrs

from . import ir
from .attributes import SCHEMAS
from .lower_schema import CONSTRAINTS, json_type
from .literals import compile_problem, multiline
from .printer_values import INDENT, NAME_RE, WIDTH, _flat, data, indent, print_expr, regex, string

__all__ = ["print_decl", "print_expr", "print_module"]

_MISSING = object()
Item = Union[str, tuple[str, str]]  # a body line, or an attribute `(key, value)`


# ---------------------------------------------------------------- module, blocks
def print_module(module: ir.Module) -> str:
    """The whole module as canonical text ("" for an empty module)."""
    parts = []
    if module.imports:
        parts.append("\n".join(f"import {string(i.path)} as {i.alias}" for i in module.imports))
    parts.extend(print_decl(d) for d in module.decls)
    return "\n\n".join(parts) + "\n" if parts else ""


def print_decl(decl: ir.Decl) -> str:
    kind = ir.kind_of(decl)
    return block(f"{kind} {decl.name}", _BODIES[kind](decl))


def block(head: str, items: list[Item]) -> str:
    """`head { items }`: on one line when there is one short single-line item, else indented."""
    lines = layout(items)
    if not lines:
        return head + " {}"
    if len(lines) == 1 and "\n" not in lines[0] and len(head) + len(lines[0]) + 6 <= WIDTH:
        return f"{head} {{ {lines[0]} }}"
    return head + " {\n" + "\n".join(indent(i) for i in lines) + "\n}"


def layout(items: list[Item]) -> list[str]:
    """Body lines: `(key, value)` attributes, with `=` aligned across each run of them, or lines."""
    out: list[str] = []
    run: list[tuple[str, str]] = []
    for item in [*items, ""]:
        if isinstance(item, tuple):
            run.append(item)
            continue
        width = max((len(k) for k, _ in run), default=0)
        out.extend(f"{k.ljust(width)} = {v}" for k, v in run)
        run = []
        out.append(item)
    return out[:-1]


def attr_pairs(decl: Any, keys: list[str]) -> list[Item]:
    """The attributes of `decl` named in `keys` that differ from their default (or are required)."""
    table = SCHEMAS[ir.kind_of(decl)]
    defaults = {f.name: f.default for f in attrs.fields(type(decl))}
    out: list[Item] = []
    for key in keys:
        field = table.attrs[key].field
        value = getattr(decl, field)
        if value == defaults.get(field, _MISSING) and key not in table.required:
            continue
        out.append((key, _ATTR_KINDS[table.attrs[key].kind](value)))
    return out


# ---------------------------------------------------------------- declarations
def _tool(d: ir.Tool) -> list[Item]:
    items = attr_pairs(d, ["description"])
    for key in ("input", "output"):
        schema = getattr(d, key)
        if schema is None:
            continue
        fields = schema_block(schema.json) if schema.origin == "block" else None
        items.append((key, data(schema.json)) if fields is None else block(key, fields))
    return items + attr_pairs(d, ["impl", "keep_runs", "check_in", "max_result_chars"])


def _skill(d: ir.Skill) -> list[Item]:
    items = attr_pairs(d, ["description", "body", "tools"])
    if d.steps:
        items.append(block("steps", [f"{s.tool}" + (f" {string(s.note)}" if s.note else "")
                                     for s in d.steps]))
    return items + attr_pairs(d, ["on_skip"])


def _graph(d: ir.Graph) -> list[Item]:
    items = attr_pairs(d, ["scope_tools"])
    for e in d.entries:
        items.append(" ".join([f"entry {e.skill}", *_when(e.when), *_label(e.label)]))
    for r in d.routes:
        parts = [f"route {r.src} -> {r.dst}"]
        if r.on is not None:
            parts.append(f"on {r.on}")
        if len(r.status) == 1:
            parts.append(f"status {r.status[0].name}")
        elif r.status:
            parts.append("status [" + ", ".join(s.name for s in r.status) + "]")
        items.append(" ".join(parts + _when(r.when) + _label(r.label)))
    return items


def _when(expr: ir.Expr | None) -> list[str]:
    return [] if expr is None else [f"when {print_expr(expr)}"]


def _label(label: str | None) -> list[str]:
    return [] if label is None else [string(label)]


def _attrs_only(d: Any) -> list[Item]:
    return attr_pairs(d, list(SCHEMAS[ir.kind_of(d)].attrs))


def _policy(d: ir.Policy) -> list[Item]:
    items = attr_pairs(d, ["impl"])
    for b in d.blocks:
        head = b.moment + (" *" if b.any_tool else f" {b.tool}" if b.tool is not None else "")
        items.append(block(head, [_rule(r) for r in b.rules]))
    return items


def _rule(r: ir.Rule) -> str:
    because = f" because {string(r.because)}" if r.because is not None else ""
    return f"{r.action} when {print_expr(r.when)}{because}"


def _test(d: ir.Test) -> list[Item]:
    return attr_pairs(d, ["agent"]) + [statement(s) for s in d.statements]


_BODIES: dict[str, Callable[[Any], list[Item]]] = {
    "agent": _attrs_only, "tool": _tool, "skill": _skill, "graph": _graph, "steering": _attrs_only,
    "fact": _attrs_only, "instruction": _attrs_only, "redact": _attrs_only, "policy": _policy,
    "test": _test,
}


# ---------------------------------------------------------------- test statements
def statement(s: ir.TestStmt) -> str:
    return _STATEMENTS[type(s)](s)


def _calls(s: ir.ModelCalls) -> str:
    return "model calls " + ", ".join(
        f"{c.tool} {data(c.args)}" if c.args else f"{c.tool}" for c in s.calls)


def _decide(s: ir.Decide) -> str:
    by = f" by {string(s.by)}" if s.by is not None else ""
    note = f" note {string(s.note)}" if s.note is not None else ""
    return f"{s.decision}{by}{note}"


def _expect_answer(s: ir.ExpectAnswer) -> str:
    if s.matches is not None:
        return f"expect answer matches {regex(s.matches)}"
    return f"expect answer == {string(s.equals or '')}"


def _expect_called(s: ir.ExpectCalled) -> str:
    return f"expect not called {s.tool}" if s.count == 0 else f"expect called {s.tool} {s.count}"


_STATEMENTS: dict[type, Callable[[Any], str]] = {
    ir.UserSays: lambda s: f"user {string(s.text)}",
    ir.ModelCalls: _calls,
    ir.ModelSays: lambda s: f"model says {string(s.text)}",
    ir.ToolReturns: lambda s: f"tool {s.tool} returns {data(s.value)}",
    ir.ToolFails: lambda s: f"tool {s.tool} fails {string(s.message)}",
    ir.Decide: _decide,
    ir.ExpectAnswer: _expect_answer,
    ir.ExpectCalled: _expect_called,
    ir.ExpectRoute: lambda s: f"expect route {s.src} -> {s.dst}",
    ir.ExpectCursor: lambda s: f"expect cursor {s.skill}",
    ir.ExpectOutcome: lambda s: f"expect outcome {s.outcome}",
    ir.ExpectTrace: lambda s: f"expect trace {s.kind}",
}


# ---------------------------------------------------------------- attribute values
def text(t: ir.Text | ir.Data) -> str:
    """Prompt text: a `\"\"\"` block when it spans lines and reads back exactly, else a string."""
    if isinstance(t, ir.Data):
        return data(t.value)
    value = t.value
    if "\n" in value and '"""' not in value and all(c in "\n\t" or c.isprintable() for c in value):
        body = '"""\n' + indent(value) + '\n"""'
        if multiline(body[:-3] + INDENT + '"""') == value:  # as it reads back, indented in its block
            return body
    return string(value)


def refs(items: tuple[ir.Ref, ...]) -> str:
    return "[" + ", ".join(str(r) for r in items) + "]"


def impl(value: ir.Impl) -> str:
    if isinstance(value, ir.PythonImpl):
        return f"python({string(value.target)})"
    if isinstance(value, ir.ReturnsImpl):
        return f"returns({data(value.value)})"
    return f"agent({value.agent})"


_ATTR_KINDS: dict[str, Callable[[Any], str]] = {
    "text": text, "data": text, "string": lambda v: string(v), "int": lambda v: json.dumps(v),
    "bool": lambda v: "true" if v else "false", "choice": lambda v: string(v), "refs": refs,
    "ref": str, "expr": lambda v: print_expr(v), "strings": lambda v: "[" + ", ".join(map(string, v)) + "]",
    "regexes": lambda v: "[" + ", ".join(map(regex, v)) + "]", "impl": impl, "python": impl,
    "schema": lambda v: data(v.json),
}


# ---------------------------------------------------------------- schema blocks
def schema_block(doc: Any) -> list[str] | None:
    """The field lines of the block that lowers to `doc`, or None when no block does."""
    if not (isinstance(doc, Mapping) and doc.get("type") == "object" and "properties" in doc
            and "required" in doc and set(doc) <= {"type", "properties", "required", "additionalProperties"}):
        return None
    props, required = doc["properties"], doc["required"]
    if not isinstance(props, Mapping) or not isinstance(required, (tuple, list)):
        return None
    if "additionalProperties" in doc and doc["additionalProperties"] is not False:
        return None
    if list(required) != [n for n in props if n in set(required)] or len(set(required)) != len(required) \
            or not set(required) <= set(props):
        return None
    lines = []
    for name, schema in props.items():
        line = _field(name, schema, name in required)
        if line is None:
            return None
        lines.append(line)
    return lines + ([] if "additionalProperties" in doc else ["..."])


def _field(name: Any, schema: Any, required: bool) -> str | None:
    if not isinstance(name, str) or not NAME_RE.match(name) or not isinstance(schema, Mapping):
        return None
    rest = dict(schema)
    description, default = rest.pop("description", _MISSING), rest.pop("default", _MISSING)
    constraints = _constraints(rest)
    stype = _stype(rest)
    if stype is None or constraints is None or (required and default is not _MISSING):
        return None
    if not all(_applies(rest.get("type"), CONSTRAINTS[k][1]) for k, _ in constraints):
        return None
    if description is not _MISSING and not isinstance(description, str):
        return None
    out = name + ("" if required or default is not _MISSING else "?") + ": " + stype
    if constraints:
        out += "(" + ", ".join(f"{k}: {_flat(v)}" for k, v in constraints) + ")"
    if default is not _MISSING:
        out += " = " + _flat(default)
    if description is not _MISSING:
        out += " " + string(description)
    return out


def _applies(t: Any, applies: set[str]) -> bool:
    return t is None or t in applies or (t == "integer" and "number" in applies)


def _constraints(rest: dict) -> list[tuple[str, Any]] | None:
    out = []
    for k, (keyword, _, kind) in CONSTRAINTS.items():
        if keyword not in rest:
            continue
        v = rest.pop(keyword)
        ok = isinstance(v, str) if kind is str else (
            not isinstance(v, bool) and isinstance(v, (int, float)) and (
                kind == "number" or (isinstance(v, int) and v >= 0)))
        if not ok or (k == "pattern" and compile_problem(v, "") is not None):
            return None
        out.append((k, v))
    return out


_NAMED = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
          "object": "object", "null": "null"}


def _stype(s: Any) -> str | None:
    """The type text whose lowering is exactly `s` (type keys only), or None."""
    if not isinstance(s, Mapping):
        return None
    keys = set(s)
    t = s.get("type", _MISSING)
    if "enum" in keys and keys <= {"enum", "type"}:
        return _union(s["enum"], t)
    if keys == {"type", "items"} and t == "array":
        inner = _item(s["items"])
        return None if inner is None else f"[{inner}]"
    if t == "object" and "properties" in keys:
        lines = schema_block(s)
        if lines is None:
            return None
        flat = "{ " + ", ".join(lines) + " }" if lines else "{}"
        return flat if len(flat) <= WIDTH - 40 and "\n" not in flat else "{\n" + "\n".join(indent(x) for x in lines) + "\n}"
    if not keys:
        return "any"
    if keys == {"type"} and isinstance(t, str) and t in _NAMED:
        return _NAMED[t]
    return None


def _item(s: Any) -> str | None:
    """A list's item type, with its constraints (`[string(min_length: 1)]`), or None."""
    if not isinstance(s, Mapping):
        return None
    rest = dict(s)
    constraints = _constraints(rest)
    stype = _stype(rest)
    if stype is None or constraints is None or not all(
            _applies(rest.get("type"), CONSTRAINTS[k][1]) for k, _ in constraints):
        return None
    return stype + ("(" + ", ".join(f"{k}: {_flat(v)}" for k, v in constraints) + ")"
                    if constraints else "")


def _union(values: Any, t: Any) -> str | None:
    if not isinstance(values, (tuple, list)) or not values:
        return None
    if not all(v is None or isinstance(v, (str, int, float)) for v in values):  # bool is an int
        return None
    if list(values) == [None]:  # `null` alone is the type `null`, not a union
        return None
    kinds = {json_type(v) for v in values}
    if (t is _MISSING) != (len(kinds) > 1) or (t is not _MISSING and {t} != kinds):
        return None
    return " | ".join(_flat(v) for v in values)
