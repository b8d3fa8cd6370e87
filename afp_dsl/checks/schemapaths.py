"""What a JSON Schema says about a path: the sub-schema and whether it may be absent (`walk_schema`).

Role:       checks layer; shared by the expression checks (AFP304) and the schema facts of
            `sites` (`schemafacts`); split from `schemas`.
Invariants: pure; a schema it does not understand (composition, a remote `$ref`) gets None, never
            a guess; `walk_schema` answers are cached per (schema, segments) until the
            `run_checks` call ends (`clear_cache`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..frozen import FrozenMap, is_mapping
from ..record import Record, record

class Field(NamedTuple):
    """What a schema says about one path: the sub-schema and whether it may be absent.
    Speed: a named tuple (one C call to build; one per path a guard reads)."""

    schema: Any
    optional: bool


@record
class FieldProblem(Record):
    index: int  # the segment that has no field
    message: str
    candidates: tuple[str, ...] = ()


# Speed: a set, so one `isdisjoint` pass over a node's keys replaces seven lookups.
_COMPOSED = frozenset({"anyOf", "oneOf", "allOf", "not", "if", "$dynamicRef", "unevaluatedProperties"})


def schema_types(node: Any) -> frozenset[str] | None:
    t = node.get("type") if is_mapping(node) else None
    if isinstance(t, str):
        return frozenset({t})
    if isinstance(t, (list, tuple)) and all(isinstance(x, str) for x in t):
        return frozenset(t)
    return None


_FIELDS: dict[tuple[int, tuple], tuple[Any, Field | FieldProblem | None]] = {}


def clear_cache() -> None:
    _FIELDS.clear()


def walk_schema(root: Any, segments: tuple) -> Field | FieldProblem | None:
    """Follow `segments` into a JSON Schema; None when the schema does not say.

    Speed: cached per (schema, segments): the path checks and the schema facts both walk every
    path a guard reads. The entry keeps `root` alive, so its id is not reused while cached."""
    key = (id(root), segments)
    hit = _FIELDS.get(key)
    if hit is None or hit[0] is not root:
        if len(_FIELDS) > 100_000:
            _FIELDS.clear()
        hit = _FIELDS[key] = (root, _walk_schema(root, segments))
    return hit[1]


def _walk_schema(root: Any, segments: tuple) -> Field | FieldProblem | None:
    node, optional = root, False
    for i, seg in enumerate(segments):
        node = _deref(root, node)
        d = _dict_of(node)
        if d is None or not _COMPOSED.isdisjoint(d):
            return None
        step = _step_field(d, seg) if isinstance(seg, str) else _step_item(d, seg)
        if isinstance(step, str):
            return FieldProblem(i, step, _candidates(d) if isinstance(seg, str) else ())
        if step is None:
            return None
        node, optional = step[0], optional or step[1]
    node = _deref(root, node)
    return Field(node, optional) if is_mapping(node) else None


def _dict_of(node: Any) -> Mapping | None:
    """What to read a schema node through: a FrozenMap's own dict, a dict, any other mapping
    itself; None for anything that is not a mapping.
    Speed: the walk then reads keys with the dict's C methods, not FrozenMap's Python ones."""
    t = type(node)
    if t is FrozenMap:
        return node._d
    if t is dict or is_mapping(node):
        return node
    return None


def _step_field(node: Mapping, seg: str) -> tuple | str | None:
    props = _dict_of(node.get("properties"))
    if props is not None and seg in props:
        required = node.get("required")
        return props[seg], not (isinstance(required, (list, tuple)) and seg in required)
    types = schema_types(node)  # (only needed, so only read, when the field is not declared)
    if types is not None and "object" not in types:
        return f"is {type_names(types)}, which has no fields"
    if node.get("additionalProperties") is False and "patternProperties" not in node:
        return "has no field"
    extra = node.get("additionalProperties")
    if is_mapping(extra) and "patternProperties" not in node:
        return extra, True
    return None


def _step_item(node: Mapping, seg: int) -> tuple | str | None:
    types = schema_types(node)
    if types is not None and "array" not in types:
        return f"is {type_names(types)}, not a list"
    prefix = node.get("prefixItems")
    if isinstance(prefix, (list, tuple)) and seg < len(prefix):
        return prefix[seg], True
    items = node.get("items")
    if is_mapping(items):
        return items, True
    return None


_TYPE_NAMES = {"object": "an object", "array": "a list", "integer": "an integer", "null": "null"}


def type_names(types: frozenset) -> str:
    """`a string or null`: JSON types as words."""
    return " or ".join(_TYPE_NAMES.get(t, f"a {t}") for t in sorted(types))


def _candidates(node: Mapping) -> tuple[str, ...]:
    props = node.get("properties")
    return tuple(props) if is_mapping(props) else ()


def deref_root(root: Any) -> Any:
    """The schema node `root` stands for, its `$ref` followed (None: it points nowhere)."""
    return _deref(root, root)


def _deref(root: Any, node: Any) -> Any:
    t = type(node)
    if (t is FrozenMap and "$ref" not in node._d) or (t is dict and "$ref" not in node):
        return node  # Speed: the usual node, with no `$ref` to follow (a FrozenMap: its dict)
    for _ in range(32):
        if not (is_mapping(node) and isinstance(node.get("$ref"), str)):
            return node
        ref = node["$ref"]
        if not ref.startswith("#"):
            return None
        node = _pointer(root, ref[1:])
    return None


def _pointer(doc: Any, pointer: str) -> Any:
    for part in [p for p in pointer.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if is_mapping(doc):
            doc = doc.get(part)
        elif isinstance(doc, (list, tuple)) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return None
    return doc
