"""Schema checks: raw and file schemas against the 2020-12 metaschema, defaults against their schema.

Role:       checks layer; schema blocks are valid by construction (`lower_schema` reports their
            problems), so this rule looks at raw maps and `file(...)` schemas.
Emits:      AFP301 invalid-schema, AFP302 default-violates-schema.
Invariants: never fetches anything: validators use an empty local `referencing.Registry`.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..frozen import thaw

DRAFT = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def _jsonschema() -> tuple:
    """jsonschema (slow to import) is needed only for schemas written as raw JSON Schema."""
    import jsonschema
    import referencing
    import referencing.exceptions
    return jsonschema, referencing.Registry(), referencing.exceptions.Unresolvable


def check_schemas(a: Analysis) -> Iterable[Diagnostic]:
    for _, tool in a.decls(ir.Tool):
        for which in ("input", "output"):
            schema = getattr(tool, which)
            if schema is not None and schema.origin != "block":
                yield from _check_raw(tool, which, schema)


def _check_raw(tool: ir.Tool, which: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    doc = thaw(schema.json)
    where = f"the `{which}` schema of tool `{tool.name}`"
    if not isinstance(doc, dict):
        yield diag("AFP301", f"{where} must be a JSON object", schema.span, "not an object")
        return
    declared = doc.get("$schema")
    if declared is not None and declared.rstrip("#") != DRAFT:
        yield diag("AFP301", f"{where} declares `$schema` {declared!r}; only JSON Schema 2020-12 is supported",
                   schema.span, "another draft", help=f'remove `$schema` or set it to "{DRAFT}"')
        return
    jsonschema, _, _ = _jsonschema()
    try:
        jsonschema.Draft202012Validator.check_schema(doc)
    except jsonschema.SchemaError as e:
        path = "/".join(str(p) for p in e.absolute_path)
        yield diag("AFP301", f"{where} is not valid JSON Schema 2020-12: {e.message}", schema.span,
                   f"invalid at `/{path}`" if path else "invalid schema")
        return
    except RecursionError:
        yield diag("AFP301", f"{where} is nested too deeply", schema.span, "too deep")
        return
    if which == "input" and doc.get("type", "object") != "object":
        yield diag("AFP301", f"{where} must describe an object (tool arguments are a JSON object)",
                   schema.span, "not an object schema", help='use `{ type: "object", properties: { ... } }`')
    yield from _defaults(doc, "", tool, which, schema)


def _defaults(node: Any, pointer: str, tool: ir.Tool, which: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _defaults(item, f"{pointer}/{i}", tool, which, schema)
        return
    if not isinstance(node, dict):
        return
    if "default" in node:
        sub = {k: v for k, v in node.items() if k != "default"}
        jsonschema, registry, unresolvable = _jsonschema()
        try:
            errors = list(jsonschema.Draft202012Validator(sub, registry=registry).iter_errors(node["default"]))
        except (unresolvable, jsonschema.SchemaError, RecursionError):
            errors = []
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            yield diag("AFP302", f"the default at `{pointer or '/'}` in the `{which}` schema of tool "
                       f"`{tool.name}` does not satisfy its schema: {best.message}", schema.span,
                       "invalid default")
    for key, value in node.items():
        if key not in ("default", "const", "enum", "examples"):
            yield from _defaults(value, f"{pointer}/{key}", tool, which, schema)
