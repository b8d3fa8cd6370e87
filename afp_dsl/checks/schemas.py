"""Schema checks: raw and file schemas against the 2020-12 metaschema, every `$ref` resolved,
defaults against their schema; the schemas found invalid in the check now running (`is_broken`).

Role:       checks layer; schema blocks are valid by construction (`lower_schema` reports their
            problems), so this rule looks at raw maps and `file(...)` schemas. `is_broken` is read
            by `sites`; what a schema says about a path is `schemapaths`.
Emits:      AFP301 invalid-schema (also for a `$ref` that does not resolve within the schema, and
            for bounds that leave no value), AFP309 unknown-schema-keyword (warning),
            AFP302 default-violates-schema (also for the value of `impl = returns(...)` against
            the tool's `output` schema, both from `schema_defaults`).
Invariants: never fetches anything: validators use an empty local `referencing.Registry`, so a
            remote `$ref` does not resolve (the run would fail to validate with it).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from .. import ir
from ..analysis import Analysis
from ..codes import diag
from ..diagnostics import Diagnostic
from ..frozen import thaw
from ..schema_bounds import empty
from .schema_defaults import defaults, returned_value
from .schema_walk import escape, jsonschema_parts, span_at, subschemas

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def check_schemas(a: Analysis) -> Iterable[Diagnostic]:
    for _, tool in a.decls(ir.Tool):
        broken = False
        for which in ("input", "output"):
            schema = getattr(tool, which)
            if schema is not None and a.schema_reported(schema):
                mark_broken(schema)  # (its AFP301 came from the front end)
                broken = broken or which == "output"
            elif schema is not None and schema.origin != "block":
                found = list(_check_raw(tool, which, schema))
                if any(d.code == "AFP301" for d in found):
                    mark_broken(schema)
                    broken = broken or which == "output"
                yield from found
        if type(tool.impl) is ir.ReturnsImpl and tool.output is not None and not broken:
            yield from returned_value(tool, tool.impl, tool.output)


def mark_broken(schema: Any) -> None:
    broken = getattr(_SCOPE, "broken", None)
    if broken is not None:  # (outside `run_checks` no later rule reads it)
        broken[id(schema)] = schema


def _check_raw(tool: ir.Tool, which: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    doc = thaw(schema.json)
    where = f"the `{which}` schema of tool `{tool.name}`"
    if schema.file:
        where += f" (file `{schema.file}`)"
    if not isinstance(doc, dict):
        yield diag("AFP301", f"{where} must be a JSON object", schema.span, "not an object")
        return
    declared = doc.get("$schema")
    if declared is not None and declared.rstrip("#") != DRAFT:
        yield diag("AFP301", f"{where} declares `$schema` {declared!r}; only JSON Schema 2020-12 is supported",
                   schema.span, "another draft", help=f'remove `$schema` or set it to "{DRAFT}"')
        return
    jsonschema, _, _ = jsonschema_parts()
    try:
        jsonschema.Draft202012Validator.check_schema(doc)
    except jsonschema.SchemaError as e:
        path = "".join(f"/{escape(str(p))}" for p in e.absolute_path)
        yield diag("AFP301", f"{where} is not valid JSON Schema 2020-12: {_meta_problem(e)}",
                   span_at(schema, path), f"invalid at `{path}`" if path else "invalid schema")
        return
    except RecursionError:
        yield diag("AFP301", f"{where} is nested too deeply", schema.span, "too deep")
        return
    if which == "input" and doc.get("type", "object") != "object":
        yield diag("AFP301", f"{where} must describe an object (tool arguments are a JSON object)",
                   schema.span, "not an object schema", help='use `{ type: "object", properties: { ... } }`')
    yield from _dangling_refs(doc, where, schema)
    yield from _no_keyword(doc, where, schema)
    yield from _misspelt_keywords(doc, where, schema)
    yield from _empty_bounds(doc, where, schema)
    yield from defaults(doc, tool, which, schema)


def _empty_bounds(doc: Any, where: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP301 for each sub-schema whose bounds leave no value (`minimum: 5, maximum: 1`)."""
    for node, pointer in subschemas(doc):
        pair = empty(node)
        if pair is not None:
            lo, hi = pair
            yield diag("AFP301", f"{where} has bounds that leave no value at `{pointer or '/'}`: "
                       f"`{lo}: {node[lo]}` and `{hi}: {node[hi]}`", span_at(schema, f"{pointer}/{hi}"),
                       "leaves no value",
                       help="correct one of the two bounds")


# Every keyword of JSON Schema 2020-12 (core, applicator, validation, unevaluated, format,
# content and meta-data vocabularies) and the older drafts' that validators still read.
KEYWORDS = frozenset((
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
    "$defs", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
    "prefixItems", "items", "contains", "properties", "patternProperties", "additionalProperties",
    "propertyNames", "unevaluatedItems", "unevaluatedProperties", "type", "enum", "const",
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired", "format",
    "contentEncoding", "contentMediaType", "contentSchema", "title", "description", "default",
    "deprecated", "readOnly", "writeOnly", "examples", "definitions", "dependencies",
    "additionalItems", "$recursiveRef", "$recursiveAnchor"))


_FOLDED = {k.lower(): k for k in KEYWORDS}


def _no_keyword(doc: dict, where: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP309 for a raw schema none of whose keys is a keyword (`input = { a: "string" }`): it
    accepts any value, which is seldom what its author meant (a schema block, most likely)."""
    keys = [k for k in doc if isinstance(k, str) and not k.startswith("x-")]
    if not keys or any(k in KEYWORDS for k in keys) or any(_FOLDED.get(k.lower()) for k in keys):
        return
    shown = ", ".join(f"`{k}`" for k in keys[:3]) + (", …" if len(keys) > 3 else "")
    yield diag("AFP309", f"{where} has no JSON Schema keyword ({shown}): the validator ignores "
               f"every key, so it accepts any value", schema.span, "accepts anything",
               help=f"for a schema block, write `{_schema_key(where)} {{ {keys[0]}: string }}` "
                    "(no `=`); for raw JSON Schema, `{ type: \"object\", properties: { … } }`")


def _schema_key(where: str) -> str:
    return "output" if "`output`" in where else "input"


def _misspelt_keywords(doc: Any, where: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP309 for each key of a (sub-)schema that is no keyword but is spelt like one: the
    validator ignores it, so what it meant to say is not checked. Once per spelling."""
    from ..suggest import closest
    seen: set[str] = set()
    for node, pointer in subschemas(doc):
        for key in node:
            if not isinstance(key, str) or key in KEYWORDS or key in seen or key.startswith("x-"):
                continue
            meant = _FOLDED.get(key.lower()) or closest(key, KEYWORDS)  # (`MINLENGTH` too)
            if meant is None:
                continue
            seen.add(key)
            yield diag("AFP309", f"{where} has the key `{key}` (at `{pointer or '/'}`), which is not a "
                       f"JSON Schema keyword: the validator ignores it",
                       span_at(schema, f"{pointer}/{escape(key)}"),
                       "a key the validator ignores", help=f"did you mean `{meant}`?")


def _meta_problem(e: Any) -> str:
    """The metaschema's complaint in the spec's words, never Python's repr of the value: an
    unknown `type` (the usual mistake) names the types; anything else, the keyword refused."""
    if e.absolute_path and e.absolute_path[-1] == "type":
        from ..suggest import closest
        value = e.instance
        types = ["array", "boolean", "integer", "null", "number", "object", "string"]
        close = closest(value, types) if isinstance(value, str) else None
        return (f"`type` must be one of {', '.join(types)}, or a list of them"
                + (f" (did you mean `{close}`?)" if close else ""))
    return e.message


# ---------------------------------------------------------------- $ref resolution
def _dangling_refs(doc: dict, where: str, schema: ir.Schema) -> Iterator[Diagnostic]:
    """AFP301 for each distinct `$ref` / `$dynamicRef` that does not resolve within the schema,
    resolved as the run's validator would (base URIs from `$id`, anchors, JSON pointers)."""
    seen: set[str] = set()
    for ref, pointer, local in _unresolved(doc):
        if ref in seen:
            continue
        seen.add(ref)
        at = f" (at `{pointer or '/'}`)"
        if local:
            yield diag("AFP301", f"{where} has a `$ref` that points nowhere: `{ref}`{at}",
                       span_at(schema, f"{pointer}/$ref"),
                       "unresolvable `$ref`", help="point it at a definition the schema declares "
                       "(such as `#/$defs/NAME`), or declare one")
        else:
            yield diag("AFP301", f"{where} has a `$ref` to `{ref}`, which is not part of the "
                       f"schema{at}", span_at(schema, f"{pointer}/$ref"), "unresolvable `$ref`",
                       notes=("schemas must be self-contained: a `$ref` is resolved within the "
                              "schema only, and nothing is fetched",),
                       help="copy the referenced schema under `$defs` and use `#/$defs/NAME`")


def _unresolved(doc: dict) -> Iterator[tuple[str, str, bool]]:
    """(ref, JSON pointer of the schema holding it, is the ref local to this document)."""
    import referencing
    import referencing.exceptions
    from referencing.jsonschema import DRAFT202012
    try:
        root = DRAFT202012.create_resource(doc)
        base = root.id() or ""
        stack = [(referencing.Registry().with_resource(base, root).resolver(base_uri=base), root)]
        where = _pointers(doc)
        while stack:
            resolver, res = stack.pop()
            yield from _node_refs(resolver, res.contents, where, referencing.exceptions)
            stack.extend((resolver.in_subresource(sub), sub) for sub in res.subresources())
    except Exception:  # noqa: BLE001 - a shape the metaschema let through but `referencing`
        return  # cannot walk is not judged: a check never raises on bad input


def _node_refs(resolver, node: Any, where: dict[int, str], errors) -> Iterator[tuple[str, str, bool]]:
    if not isinstance(node, dict):
        return
    for keyword in ("$ref", "$dynamicRef"):
        ref = node.get(keyword)
        if not isinstance(ref, str):
            continue
        try:
            resolver.lookup(ref)
        except errors.Unresolvable as e:
            local = isinstance(e, (errors.PointerToNowhere, errors.NoSuchAnchor, errors.InvalidAnchor))
            yield ref, where.get(id(node), ""), local


def _pointers(doc: Any) -> dict[int, str]:
    """The JSON pointer of every object in `doc`, by identity."""
    out: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, dict):
            out[id(node)] = pointer
            stack.extend((v, f"{pointer}/{escape(str(k))}") for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{pointer}/{i}") for i, v in enumerate(node))
    return out


# ---------------------------------------------------------------- the AFP301 schemas of this check
# The raw schemas `check_schemas` found invalid (AFP301) in the check now running, by identity
# (each entry keeps its schema alive, so an id is not reused while the check runs): the
# expression checks do not read paths and types from them (one root cause, one diagnostic: an
# invalid `properties` would otherwise make every `result.x` an AFP304 too). Not a cache but
# the check's own state, so it is held per `run_checks` call (`broken_scope`), never in a
# module-level dict: checks running at once in several threads (a server), or one started
# inside another, would otherwise clear or read each other's. (A thread-local, not a ContextVar:
# setting one replaces the context's mapping, freeing objects a host may have `gc.freeze`d.)
_SCOPE = threading.local()


@contextmanager
def broken_scope() -> Iterator[None]:
    """The AFP301 schemas of one `run_checks` call: fresh on entry, dropped on exit (the
    enclosing call's, if any, come back)."""
    outer = getattr(_SCOPE, "broken", None)
    _SCOPE.broken = {}
    try:
        yield
    finally:
        _SCOPE.broken = outer


def is_broken(schema: Any) -> bool:
    """Did `check_schemas` report `schema` invalid (AFP301) in the check now running?"""
    broken = getattr(_SCOPE, "broken", None)
    return broken is not None and broken.get(id(schema)) is schema
