"""What a tool's schema says about one path, as solver atoms (types, closed sets of values).

Role:       the schema half of `sites.facts`: a route's or rule's `args.x` / `result.x` gets the
            facts its tool's input or output schema gives (`walk_schema` finds the field).
Invariants: pure; a schema the walker does not understand yields no facts; an atom's text names
            the tool and is rendered only when a diagnostic reads it.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from .. import ir
from ..evaluate import parse_result
from ..frozen import FrozenMap, is_mapping
from .schemapaths import Field, deref_root, schema_types, type_names, walk_schema
from .solver import Atom, Key, key_text

_JSON_TYPES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
               "null": "null", "object": "compound", "array": "compound"}
_KNOWN_TYPES = frozenset(_JSON_TYPES)
_INTEGER = (frozenset({"integer"}), frozenset({"integer", "null"}))
_FACTS: dict[tuple[int, bool, Key], tuple[Any, tuple[Atom, ...]]] = {}


def clear_cache() -> None:
    _FACTS.clear()


def schema_facts(tool: ir.Tool, schema: ir.Schema, loose: bool | str, key: Key) -> tuple[Atom, ...]:
    """What `tool`'s `schema` says about `key` (`loose`: null too, for a result that may not be
    a success); cached per (schema, loose, key), since the same tool's paths are asked about
    from every route and rule that mentions them. The entry keeps the schema alive, so its id
    is not reused while cached; bounded, and dropped after each `run_checks`."""
    cached = (id(schema), loose, key)
    hit = _FACTS.get(cached)
    if hit is None or hit[0] is not schema:
        if len(_FACTS) > 100_000:
            _FACTS.clear()
        hit = _FACTS[cached] = (schema, _compute_schema_facts(tool, schema, key, loose))
    return hit[1]


def _compute_schema_facts(tool: ir.Tool, schema: ir.Schema, key: Key, loose: bool | str) -> tuple[Atom, ...]:
    if key[1] == "result" and len(key) > 2 and result_may_parse(schema.json):
        return ()
    field = walk_schema(schema.json, key[2:])
    if not isinstance(field, Field):
        return ()
    node, optional = field
    values = _enum(node)
    types = schema_types(node)
    if len(key) == 2 and key[1] == "result":  # the whole result, as guards see it (below)
        values, types = _parsed(values, types)
    eq = None
    if values is not None:
        values += (None,) if optional else ()
        eq = Atom("eq", key, values=values + ((None,) if loose else ()), level="schema",
                  text=None, render=partial(_enum_text, tool.name, key, values, loose))
    if types is None or not types <= _KNOWN_TYPES:
        return () if eq is None else (eq,)
    typed = Atom("type", key, types=_mapped_types(types, optional or loose),
                 integer=types in _INTEGER, level="schema", text=None,
                 render=partial(_type_text, tool.name, key, types, optional, loose))
    bounds = _bounds(tool.name, key, node) if not (optional or loose) and types <= _NUMBERS \
        and len(key) > 2 else ()
    return (typed, *bounds) if eq is None else (eq, typed, *bounds)


_NUMBERS = frozenset({"integer", "number"})
_BOUND_OPS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
              ("exclusiveMaximum", "<"))


def _bounds(tool: str, key: Key, node: Mapping) -> tuple[Atom, ...]:
    """A number field's range (`integer(min: 0)`) as solver atoms: only for a value that is
    surely a number (required, and a success's result), as an ordered atom says it is one."""
    out = []
    for word, op in _BOUND_OPS:
        b = node.get(word)
        if isinstance(b, (int, float)) and not isinstance(b, bool) and b == b and abs(b) != float("inf"):
            out.append(Atom("ord", key, op=op, bound=b, level="schema", text=None,
                            render=partial(_bound_text, tool, key, op, b)))
    return tuple(out)


def _bound_text(tool: str, key: Key, op: str, bound: Any) -> str:
    return f"`{key_text(key)} {op} {json.dumps(bound)}` ({_where(tool, key)})"


_MAY_PARSE: dict[int, tuple[Any, bool]] = {}


def result_may_parse(schema: Any) -> bool:
    """`_result_may_parse`, once per `output` schema. Speed: it is asked for every `result`
    path and fact; cached by identity as `walk_schema` is (the entry keeps `schema` alive, so
    its id is not reused while cached)."""
    hit = _MAY_PARSE.get(id(schema))
    if hit is None or hit[0] is not schema:
        if len(_MAY_PARSE) > 100_000:
            _MAY_PARSE.clear()
        hit = _MAY_PARSE[id(schema)] = (schema, _result_may_parse(schema))
    return hit[1]


def _result_may_parse(schema: Any) -> bool:
    """Can guards see a whole result of this `output` schema as a list or an object the schema
    does not describe? A string result that parses as JSON is parsed (language.md §6), so a
    schema that allows strings (a `type` with `string`, or no `type` and no closed set of
    values) says nothing certain of `result.x`: the tool may return `'{"x": …}'`."""
    node = deref_root(schema)
    if not is_mapping(node):
        return True
    values = _enum(node)
    if values is not None:
        return any(isinstance(v, str) and not _plain_scalar(parse_result(v)) for v in values)
    types = schema_types(node)
    return types is None or "string" in types


def _parsed(values: tuple | None, types: frozenset[str] | None) -> tuple:
    """The values and types of a whole `result` whose schema says them of the value the tool
    returns: guards see a string result that parses as JSON parsed (language.md §6), so `"5"`
    is `5` and a `string` result may be any JSON value. A value parsed to a list or an object
    leaves no closed set (facts hold scalars only)."""
    if values is not None:
        values = tuple(parse_result(v) for v in values)
        if not all(_plain_scalar(v) for v in values):
            values = None
    if types is not None and "string" in types:
        types = None  # (a string that does not parse stays a string: every type is possible)
    return values, types


@functools.lru_cache(maxsize=256)
def _mapped_types(types: frozenset[str], nullable: bool) -> frozenset[str]:
    """The solver's types of values of the JSON `types` (and null when `nullable`).
    Speed: a pure function of a few type names, asked for every path a guard reads."""
    return frozenset({_JSON_TYPES[t] for t in types} | ({"null"} if nullable else set()))


# Speed: the texts of schema facts name the tool, so each is made only when a diagnostic reads it.
def _enum_text(tool: str, key: Key, values: tuple, loose: bool | str) -> str:
    shown = ", ".join([_show(v) for v in values])
    return f"`{key_text(key)}` is one of {shown} ({_where(tool, key)}){_otherwise(loose)}"


def _type_text(tool: str, key: Key, types: frozenset, optional: bool, loose: bool | str) -> str:
    shown = type_names(types) + (" or absent" if optional else "")
    return f"`{key_text(key)}` is {shown} ({_where(tool, key)}){_otherwise(loose)}"


def _where(tool: str, key: Key) -> str:
    return f"{'input' if key[1] == 'args' else 'output'} schema of `{tool}`"


def _otherwise(loose: bool | str) -> str:
    if loose == "answer":
        return ", or null: an agent's answer (JSON or prose) is not checked against `output`"
    return ", or null when the status is not `success`" if loose else ""


def _enum(node: Mapping) -> tuple | None:
    d = node._d if type(node) is FrozenMap else node  # Speed: its dict's C methods
    if "const" in d and _plain_scalar(d["const"]):
        return (d["const"],)
    enum = d.get("enum")
    if isinstance(enum, (list, tuple)) and enum and (
            _SCALAR_TYPES.issuperset(map(type, enum))  # Speed: plain JSON values, in C
            or all(v is None or isinstance(v, _SCALARS) for v in enum)):
        return tuple(enum)
    return None


_SCALARS = (bool, int, float, str)
_SCALAR_TYPES = frozenset({bool, int, float, str, type(None)})


def _plain_scalar(v: Any) -> bool:
    return v is None or isinstance(v, _SCALARS)


# Speed: `json.dumps` with a non-default option builds a new encoder on every call; this one
# has exactly the options `json.dumps(v, ensure_ascii=False)` would use, so the text is the same.
_JSON = json.JSONEncoder(ensure_ascii=False)


def _show(v: Any) -> str:
    return "`" + _JSON.encode(v) + "`"
