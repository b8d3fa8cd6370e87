"""Schema checks of values: each sub-schema's `default` judged in place, and the value an
`impl = returns(...)` tool always answers judged by the tool's `output` schema.

Role:       checks layer, run by `schemas.check_schemas` on schemas that passed the metaschema.
Emits:      AFP302 default-violates-schema, worded as the model is told (`argcheck`), never
            echoing the value (it may be a secret: semantics §9).
Invariants: a value a `pattern` may not safely run on, or a `$ref` that cannot be followed, is
            not judged: a check never raises on bad input.
"""
from __future__ import annotations

from typing import Any, Iterator

from .. import ir
from ..codes import diag
from ..diagnostics import Diagnostic, Label
from ..frozen import is_mapping, thaw
from .regex_risk import runnable
from .schema_walk import jsonschema_parts, span_at, subschemas


def returned_value(tool: ir.Tool, impl: ir.ReturnsImpl, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP302 when the value `returns(...)` always answers fails the tool's own `output` schema
    (one of the two is wrong: every call of the tool would answer a result its schema refuses)."""
    from ..evaluate import parse_result  # (JSON text is the data guards read: judged parsed)
    doc, value = thaw(schema.json), parse_result(thaw(impl.value))
    errors = _violations(doc, value)
    if errors:  # (worded without the value, which may be a secret: semantics §9)
        from ..argcheck import describe_error, did_you_mean_fields, misspelt_fields
        best = jsonschema_parts()[0].exceptions.best_match(errors)
        what = "; ".join(describe_error(best, doc, value, "result"))
        yield diag("AFP302", f"the value tool `{tool.name}` returns does not satisfy its `output` "
                   f"schema: {what}", impl.span, "not a valid result",
                   help=did_you_mean_fields(misspelt_fields(errors, "result"))
                   or "change the value or the `output` schema",
                   secondary=(Label(schema.span, "the `output` schema", False),))


def _violations(doc: Any, value: Any) -> list:
    """The jsonschema errors of `value` against `doc`; none when it is valid or cannot be
    judged (a schema that does not resolve, or a pattern not safe to run on the value)."""
    if not isinstance(doc, dict) or not _patterns_runnable(doc, value):
        return []
    jsonschema, registry, unresolvable = jsonschema_parts()
    try:
        return list(jsonschema.Draft202012Validator(doc, registry=registry).iter_errors(value))
    except (unresolvable, jsonschema.SchemaError, RecursionError):
        return []


def defaults(doc: Any, tool: ir.Tool, which: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP302 for each sub-schema's `default` that the sub-schema refuses (the schema as a whole
    passed the metaschema, so each sub-schema did: `subschemas` walks only where it looked).
    Each default is judged in place, as `{"$ref": "#<pointer>"}` from the whole document, so a
    `$ref` beside it is resolved as the run's validator would, from the base a nested `$id` sets
    (`{"$ref": "#/$defs/n", "default": "x"}` is judged by the `n` in its scope)."""
    found = [(node, pointer) for node, pointer in subschemas(doc) if "default" in node]
    if not found:
        return
    jsonschema, registry, _ = jsonschema_parts()
    try:
        whole = jsonschema.Draft202012Validator(doc, registry=registry)
    except Exception:  # noqa: BLE001 - (the metaschema passed it; a check never raises)
        whole = None
    for node, pointer in found:
        sub = {k: v for k, v in node.items() if k != "default"}
        errors = _default_errors(whole, doc, sub, pointer, node["default"])
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            from ..argcheck import describe_default, did_you_mean_fields, misspelt_fields
            what = describe_default(best, sub, node["default"])  # (worded as the model is told)
            yield diag("AFP302", f"the default at `{pointer or '/'}` in the `{which}` schema of tool "
                       f"`{tool.name}` does not satisfy its schema: {what}",
                       span_at(schema, f"{pointer}/default"),
                       "invalid default", help=did_you_mean_fields(misspelt_fields(errors, "default")))


def _default_errors(whole: Any, doc: Any, sub: dict, pointer: str, value: Any) -> list:
    """The errors of `value` against the sub-schema at `pointer` (read in place from `whole`,
    or alone when the document could not be built into a validator); none when a regex of the
    schema may not run on it, or a reference cannot be followed."""
    jsonschema, registry, unresolvable = jsonschema_parts()
    try:
        if whole is not None:
            from urllib.parse import quote  # (only for raw schemas with defaults: keeps `check` lean)
            validator = whole.evolve(schema={"$ref": "#" + quote(pointer, safe="/~")})
        else:
            validator = jsonschema.Draft202012Validator(sub, registry=registry)
        if not _patterns_runnable(doc if whole is not None else sub, value):
            return []
        return list(validator.iter_errors(value))
    except (unresolvable, jsonschema.SchemaError, RecursionError):
        return []


def _patterns_runnable(schema: Any, value: Any) -> bool:
    """Whether validating `value` may run every `pattern`/`patternProperties` regex of `schema`
    on its longest string (`regex_risk.runnable`); if not, the default is not validated."""
    longest = max(_strings(value), key=len, default="")
    return all(runnable(p, "", longest) for p in _patterns(schema))


def _patterns(schema: Any) -> list[str]:
    """Every regex the validator may run: each sub-schema's `pattern` and `patternProperties`
    names (not what sits under a keyword it does not know: it runs none of that)."""
    out: list[str] = []
    for node, _ in subschemas(schema):
        if isinstance(node.get("pattern"), str):
            out.append(node["pattern"])
        if isinstance(node.get("patternProperties"), dict):
            out += [k for k in node["patternProperties"] if isinstance(k, str)]
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if is_mapping(value):
        return list(value) + [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []
