"""Reading a raw JSON Schema document: its sub-schemas by the keywords of 2020-12, the JSON
pointer of each, where an entry is written in the spec, and the (lazily imported) validator.

Role:       checks layer, shared by the raw-schema checks (`schemas`, `schema_defaults`).
Emits:      nothing; pure functions of plain values.
Invariants: walks without recursion (a schema may nest deeper than Python's stack); never
            fetches anything: the registry is an empty local `referencing.Registry`.
"""
from __future__ import annotations

import functools
from typing import Any, Iterator

from .. import ir


@functools.cache
def jsonschema_parts() -> tuple:
    """jsonschema (slow to import) is needed only for schemas written as raw JSON Schema."""
    import jsonschema
    import referencing
    import referencing.exceptions
    return jsonschema, referencing.Registry(), referencing.exceptions.Unresolvable


# The keywords of JSON Schema 2020-12 whose value is a schema, a map of names to schemas, or a
# list of schemas (with `definitions`, `additionalItems` and the list form of `items` of the drafts
# before it, which validators still read). Anything under another keyword is data (an annotation
# the validator ignores), not a schema: its `default` is no default and its bounds bound nothing.
_ONE_SCHEMA = frozenset(("additionalProperties", "items", "contains", "not", "if", "then", "else",
                         "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                         "contentSchema", "additionalItems"))
_NAMED_SCHEMAS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
_LISTED_SCHEMAS = frozenset(("allOf", "anyOf", "oneOf", "prefixItems"))


def span_at(schema: ir.Schema, pointer: str):
    """Where the entry at `pointer` (or the nearest enclosing one) is written in a raw map
    schema; the whole schema for a file (its text is not the spec's)."""
    spans = dict(schema.pointers)
    while pointer:
        if pointer in spans:
            return spans[pointer]
        pointer = pointer.rpartition("/")[0]
    return schema.span


def subschemas(doc: Any) -> Iterator[tuple[dict, str]]:
    """(schema object, its JSON pointer) for `doc` and every schema in it, by the keywords of
    2020-12 (`_ONE_SCHEMA`...), depth first; a boolean schema has nothing to read."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:  # (no recursion: a schema may be nested deeper than Python's stack)
        node, pointer = stack.pop()
        if not isinstance(node, dict):
            continue
        yield node, pointer
        children = []
        for key, value in node.items():
            at = f"{pointer}/{escape(str(key))}"
            if key in _ONE_SCHEMA:
                children += [(v, f"{at}/{i}") for i, v in enumerate(value)] if isinstance(value, list) else [(value, at)]
            elif key in _NAMED_SCHEMAS and isinstance(value, dict):
                children += [(v, f"{at}/{escape(str(k))}") for k, v in value.items()]
            elif key in _LISTED_SCHEMAS and isinstance(value, list):
                children += [(v, f"{at}/{i}") for i, v in enumerate(value)]
        stack.extend(reversed(children))


def escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")
