"""Lowering of schema blocks (`input { city: string(min_length: 1) "City" }`) to JSON Schema 2020-12.

Role:       called by `lower` for a tool's `input`/`output` blocks. The module-level builders
            (`named_schema` ... `block_schema`) make every schema part from plain values; the tree
            walker here and the parser's fused path (`fastparse_schema`, which lowers a block that
            needs no diagnostic straight from its tokens) both build with them.
Emits:      AFP301 invalid-schema (unknown type or constraint, constraint not fitting its type,
            duplicate field), AFP302 default-violates-schema.
Invariants: the compiled schema is an object with `properties`, `required` (fields without `?`
            or default) and `additionalProperties: false` unless `...` is present.
"""
from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import attrs

from . import ir
from .codes import diag
from .diagnostics import Severity
from .fastlex import Lowered
from .frozen import adopt, thaw
from .literals import MAX_NAME, compile_problem
from .lower_values import BAD, ValueLowerer, to_data
from .schema_bounds import crossed
from .schema_enum import enum_left
from .source import Span
from .suggest import closest

if TYPE_CHECKING:  # parse trees come from lark or from `fastparse`, of the same shape
    import lark

# Speed: a block's `ir.Schema` is built by `ir.maker`'s positional builder (the same object).
_SCHEMA = ir.maker(ir.Schema)
TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
         "any": None, "object": "object"}

# constraint key → (JSON Schema keyword, types it applies to, expected value kind)
CONSTRAINTS = {
    "pattern": ("pattern", {"string"}, str),
    "format": ("format", {"string"}, str),
    "min_length": ("minLength", {"string"}, "count"),
    "max_length": ("maxLength", {"string"}, "count"),
    "min": ("minimum", {"integer", "number"}, "number"),
    "max": ("maximum", {"integer", "number"}, "number"),
    "exclusive_min": ("exclusiveMinimum", {"integer", "number"}, "number"),
    "exclusive_max": ("exclusiveMaximum", {"integer", "number"}, "number"),
    "min_items": ("minItems", {"array"}, "count"),
    "max_items": ("maxItems", {"array"}, "count"),
}


@functools.cache
def _default_checker() -> tuple:
    """jsonschema is imported only when a field has a default (it is slow to import)."""
    import jsonschema
    import referencing
    import referencing.exceptions
    return jsonschema, referencing.Registry(), (jsonschema.SchemaError, referencing.exceptions.Unresolvable)


class SchemaLowerer:
    def __init__(self, values: ValueLowerer):
        self.v = values
        self.diags = values.diags
        self.pointers: list[tuple[str, Span]] = []

    def block(self, node: lark.Tree) -> ir.Schema:
        """A top-level schema block → ir.Schema with pointer spans for each field; a block the
        fast parser already lowered (`Lowered`) is taken as it is."""
        if type(node) is Lowered:
            return refiled(node.value, self.v.file)
        self.pointers = []
        json = self.object(node, "")
        return block_schema(json, self.pointers, self.v.span(node))

    # Speed: each part is frozen as it is finished (`adopt`, tuples), so the schema needs no second
    # walk to freeze it; a dict stays open only while its own field or type is being built.
    def object(self, node: lark.Tree, pointer: str) -> dict:
        props: dict[str, Any] = {}
        required: list[str] = []
        open_ = False
        for child in node.children:
            if child.data == "rest":
                if open_:  # (as a field or a constraint given twice)
                    self.diags.append(diag("AFP301", "`...` is given twice in this schema block",
                                           self.v.span(child), "given again here",
                                           help="keep one `...`: it already allows any other field"))
                open_ = True
                continue
            name, schema, is_required = self.field(child, pointer, props)
            if name is None:
                continue
            props[name] = schema
            if is_required:
                required.append(name)
        return object_schema(props, required, open_)

    def field(self, node: lark.Tree, pointer: str, seen: dict) -> tuple[str | None, Any, bool]:
        name_tok = node.children[0].children[0]
        name = str(name_tok)
        span = self.v.span(name_tok)
        here = f"{pointer}/properties/{name}"
        if len(name) > MAX_NAME:  # an identifier like any other (language §2)
            self.diags.append(diag("AFP110", f"the field name is {len(name)} characters long; at "
                                   f"most {MAX_NAME} are allowed", span, "name too long",
                                   notes=("field names are identifiers, and the model sees them "
                                          "in the tool's schema",)))
        if name in seen:
            self.diags.append(diag("AFP301", f"field `{name}` is declared twice", span, "declared again here"))
            return None, {}, False
        self.pointers.append((here, span))
        # The grammar's order: `field_name OPTIONAL? ":" stype constraints? default? label?`.
        parts = node.children
        optional = isinstance(parts[1], str)  # (the one token before the type)
        at = 2 if optional else 1
        schema = self.stype(parts[at], here)  # a new dict: the type's keys come first
        default_node = None
        for part in parts[at + 1:]:
            if isinstance(part, str):  # the label
                schema["description"] = self.v.string(part)
            elif part.data == "constraints":
                self.constraints(part, schema)
            else:
                default_node = part
        if default_node is not None:
            self.default(default_node, schema, here)
        return name, adopt(schema), not optional and default_node is None

    # -------------------------------------------------------------- types
    def stype(self, node: lark.Tree, pointer: str) -> dict:
        kind = node.data
        if kind == "type_name":
            return self.named_type(node.children[0])
        if kind == "type_null":
            return null_schema()
        if kind == "type_list":  # `[T]`, `[T(constraints)]`: the constraints are the items'
            items = self.stype(node.children[0], pointer + "/items")
            for part in node.children[1:]:
                if part is not None:
                    self.constraints(part, items)
            return list_schema(items)
        if kind == "type_object":
            return self.object(node.children[0], pointer)
        if kind == "literal_union":
            return self.union(node)
        return {}  # pragma: no cover

    def named_type(self, tok: lark.Token) -> dict:
        name = str(tok)
        out = named_schema(name)
        if out is None:
            close = closest(name, list(TYPES))
            self.diags.append(diag(
                "AFP301", f"unknown type `{name}`", self.v.span(tok), "not a schema type",
                help=f"did you mean `{close}`?" if close else
                "types are string, integer, number, boolean, null, any, [T], { fields } or literals"))
            return {}
        return out

    def union(self, node: lark.Tree) -> dict:
        values = []
        for lit in node.children:
            tok = lit.children[0]
            if tok.type == "STRING" or tok.type == "MLSTRING":
                values.append(self.v.string(tok))
            elif tok.type == "NUMBER":
                values.append(self.v.number(tok))  # what `token` puts in its Lit
            else:
                values.append(None if tok.type == "NULL" else str(tok) == "true")
        return union_schema(values)

    # -------------------------------------------------------------- constraints, defaults
    def constraints(self, node: lark.Tree, schema: dict) -> None:
        for c in node.children:
            key_tok, val_node = c.children
            kind = val_node.type if isinstance(val_node, str) else None
            if kind == "NUMBER" or kind == "STRING":
                # Speed: a literal's value as its `Lit` would hold it (with the same diagnostics),
                # without building the `Lit`.
                raw = self.v.number(val_node) if kind == "NUMBER" else self.v.string(val_node)
                if self.v.span(val_node) in self.v.bad_strings:
                    continue  # (AFP005: not the value meant)
                self.constraint(key_tok, val_node, raw, True, schema)
            else:
                value = self.v.value(val_node)
                self.constraint(key_tok, val_node, getattr(value, "value", None),
                                isinstance(value, ir.Lit), schema)

    def constraint(self, key_tok: lark.Token, val_node: Any, raw: Any, is_lit: bool, schema: dict) -> None:
        """Constraint `key_tok: val_node`, whose lowered value is a `Lit` holding `raw` if `is_lit`."""
        key = str(key_tok)
        if key in CONSTRAINTS and CONSTRAINTS[key][0] in schema:  # the first value is kept
            self.diags.append(diag("AFP301", f"constraint `{key}` is given twice",
                                   self.v.span(key_tok), "given again here",
                                   help="keep one of the two values"))
            return
        problem = _constraint_problem(key, raw, is_lit, schema)
        if problem is None:
            add_constraint(schema, key, raw)
            meant = format_near_miss(key, raw)
            if meant is not None:
                self.diags.append(diag("AFP301", f"`{raw}` is not a format of JSON Schema 2020-12",
                                       self.v.span(val_node), "unknown format", severity=Severity.WARNING,
                                       notes=("a format is shown to the model as written; one JSON Schema "
                                              "does not define means nothing to it",),
                                       help=f'did you mean `"{meant}"`?'))
            return
        code, message, label, at_value, help_ = problem  # Speed: spans only for a diagnostic
        span = self.v.span(val_node) if at_value else self.v.span(key_tok)
        self.diags.append(diag(code, message, span, label, help=help_))

    def default(self, node: lark.Tree, schema: dict, pointer: str) -> None:
        value_node = node.children[0]
        span = self.v.span(value_node)
        data = to_data(self.v.value(value_node), self.diags)
        if data is BAD or self.v.holds_fault(span):  # (AFP005: not the value meant)
            return
        schema["default"] = data
        jsonschema, registry, schema_errors = _default_checker()
        try:
            errors = list(jsonschema.Draft202012Validator(
                thaw({k: v for k, v in schema.items() if k != "default"}),
                registry=registry).iter_errors(thaw(data)))
        except (*schema_errors, RecursionError):
            return  # the schema itself is reported as AFP301
        if errors:
            best = jsonschema.exceptions.best_match(errors)
            from .argcheck import describe_default, did_you_mean_fields, misspelt_fields
            what = describe_default(best, thaw(schema), thaw(data))  # (worded as the model is told)
            self.diags.append(diag("AFP302", f"the default does not satisfy the field's schema: {what}",
                                   span, "invalid default",
                                   help=did_you_mean_fields(misspelt_fields(errors, "default"))))


# -------------------------------------------------------------- the shared builders
# Schema parts from plain values. Each returns a new dict that its caller may still extend (a
# field's constraints and label go after its type's keys); `adopt` freezes it when finished.
def named_schema(name: str) -> dict | None:
    """The schema of type `name` (`string`, `any`, ...), or None when no type has that name."""
    if name not in TYPES:
        return None
    t = TYPES[name]
    return {"type": t} if t else {}


def null_schema() -> dict:
    return {"type": "null"}


def list_schema(items: dict) -> dict:
    return {"type": "array", "items": adopt(items)}


def union_schema(values: list) -> dict:
    """A union of literal values (`"ok" | "fail"`): their enum, typed when they share one type."""
    out: dict[str, Any] = {"enum": tuple(values)}
    kinds = {json_type(v) for v in values}
    if len(kinds) == 1:
        out = {"type": kinds.pop(), **out}
    return out


def constraint_fits(key: str, raw: Any, schema: dict) -> bool:
    """Whether constraint `key` with the literal value `raw` goes into `schema` without a
    diagnostic (a known constraint, not given yet, fitting the type, a value of the right kind,
    not a misspelt format)."""
    spec = CONSTRAINTS.get(key)
    return (spec is not None and spec[0] not in schema and _constraint_problem(key, raw, True, schema) is None
            and format_near_miss(key, raw) is None)


# The formats JSON Schema 2020-12 defines (its format-annotation vocabulary).
FORMATS = ("date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
           "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template",
           "json-pointer", "relative-json-pointer", "regex")


def format_near_miss(key: str, raw: Any) -> str | None:
    """The format meant by `format: raw` when `raw` is a near miss of one JSON Schema defines
    (`"emial"`, `"datetime"`, `"url"`); None for a defined one or a format of the host's own."""
    if key != "format" or not isinstance(raw, str) or raw in FORMATS:
        return None
    if raw.lower() == "url":
        return "uri"
    import difflib  # (stricter than `closest`: `phone` or `timestamp` may be the host's own)
    found = difflib.get_close_matches(raw, FORMATS, n=1, cutoff=0.75)
    return found[0] if found else None


def add_constraint(schema: dict, key: str, raw: Any) -> None:
    schema[CONSTRAINTS[key][0]] = raw


def object_schema(props: dict, required: list, open_: bool) -> dict:
    """A block's fields (name → finished schema) as an object schema; closed unless `open_` (`...`)."""
    out: dict[str, Any] = {"type": "object", "properties": adopt(props), "required": tuple(required)}
    if not open_:
        out["additionalProperties"] = False
    return out


def block_schema(json: dict, pointers: list, span: Span) -> ir.Schema:
    """A top-level block's schema, with the span of each field's name by JSON pointer."""
    return _SCHEMA(adopt(json), "block", None, tuple(pointers), span)


def refiled(value: Any, file: str) -> Any:
    """`value`, IR the fast parser lowered (a schema, a route, a declaration), with every span in
    `file`, should its tree be lowered under another name than it was parsed with."""
    t = type(value)
    if t is Span:  # (a field's default, `NOSPAN`, stays as it is)
        return value if value.file == file or not value.file else Span(file, value.start, value.end)
    if t is tuple:
        return tuple(refiled(x, file) for x in value)
    if attrs.has(t):
        span = getattr(value, "span", None)
        if type(span) is Span and span.file == file:  # (the parser's file: all spans are in it)
            return value
        return attrs.evolve(value, **{f.name: refiled(getattr(value, f.name), file)
                                      for f in attrs.fields(t)})
    return value


def _constraint_problem(key: str, raw: Any, is_lit: bool, schema: dict) -> tuple | None:
    """Why constraint `key` cannot go into `schema` with the value `raw` (a literal's if `is_lit`):
    (code, message, label, whether the value is pointed at rather than the key, help), or None."""
    spec = CONSTRAINTS.get(key)
    if spec is None:  # (JSON Schema's own spelling, `minimum`, names ours: `min`)
        close = _KEY_OF.get(key) or closest(key, list(CONSTRAINTS))
        return ("AFP301", f"unknown constraint `{key}`", "not a constraint", False,
                f"did you mean `{close}`?" if close else "constraints are " + ", ".join(CONSTRAINTS))
    keyword, applies, kind = spec
    types = _types_of(schema)
    if types is not None and not (types & applies or ("integer" in types and "number" in applies)):
        shown = (f"type `{next(iter(types))}`" if len(types) == 1 else "any of the types "
                 + ", ".join(f"`{t}`" for t in sorted(types))) if types else "type `any`"
        return ("AFP301", f"constraint `{key}` does not apply to {shown}",
                f"only for {' or '.join(sorted(applies))}", False, None)
    if not _fits(raw, kind) or not is_lit:
        want = {str: "a string", "count": "a whole number of at least 0", "number": "a number"}[kind]
        return "AFP301", f"constraint `{key}` needs {want}", "wrong value", True, None
    if key == "pattern":
        problem = compile_problem(raw, "")
        if problem is not None:
            return "AFP004", f"invalid regex: {problem}", "does not compile", True, None
    other = crossed(keyword, raw, schema, types == {"integer"})
    if other is not None:
        message = (f"`{key}: {_shown(raw)}` contradicts `{_KEY_OF[other]}: "
                   f"{_shown(schema[other])}`: no value can satisfy this field")
        return "AFP301", message, "leaves no value", True, "correct one of the two bounds"
    if "enum" in schema and not enum_left(schema, keyword, raw):  # (`"a" | "b"(min_length: 2)`)
        return ("AFP301", f"no literal of the union satisfies `{key}: {_shown(raw)}`: no value can "
                "satisfy this field", "leaves no value", True, "correct the constraint or the literals")
    return None


_KEY_OF = {spec[0]: key for key, spec in CONSTRAINTS.items()}


def _shown(raw: Any) -> str:
    return json.dumps(raw)


_ANNOTATIONS = frozenset(("description", "title", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"))
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (type(None), "null"), (list, "array"), (tuple, "array"), (dict, "object"))


def _types_of(schema: Any) -> set[str] | None:
    """The JSON types a field's values can have, as far as a constraint cares: its `type`; the
    types of its `enum` or `const` values; the union of its `anyOf`/`oneOf` members'; the empty
    set for `any` (no type at all). None when that cannot be told (the constraint is not judged)."""
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if t is not None:
        return None
    if "enum" in schema or "const" in schema:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        return {_json_type(v) for v in values} if isinstance(values, (list, tuple)) else None
    for union in ("anyOf", "oneOf"):
        if union in schema:
            parts = [_types_of(m) for m in schema[union]] if isinstance(schema[union], (list, tuple)) else [None]
            return None if any(p is None for p in parts) else set().union(*parts)
    return set() if set(schema) <= _ANNOTATIONS else None


def _json_type(value: Any) -> str:
    return next((name for cls, name in _JSON_TYPES if type(value) is cls), "object")


def _fits(raw: Any, kind: Any) -> bool:
    if kind is str:
        return isinstance(raw, str)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return False
    return kind == "number" or (isinstance(raw, int) and raw >= 0)


def json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if v is None:
        return "null"
    return "string"

