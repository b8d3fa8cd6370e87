"""JSON form of the IR through one cattrs converter: `ir_to_json`, `ir_from_json`.

Role:       the only module that knows the IR's JSON field names; `afpc compile` writes this and
            `afp_dsl.load_ir` reads it back without the parser.
Invariants: every IR object carries a `node` tag (its class name); spans are `[file, start, end]`;
            `ir_from_json(ir_to_json(p)) == p`.
"""
from __future__ import annotations

import json
import types
import typing
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from . import ir, ir_expr
from .frozen import FrozenMap, freeze, thaw
from .frozen import plain as _plain
from .source import Span

FORMAT_VERSION = 1
TAG = "node"  # every IR object's class name; no IR class has a field of this name
CLASSES: dict[str, type] = {
    name: obj for name, obj in vars(ir).items()
    if isinstance(obj, type) and attrs.has(obj) and obj.__module__ in (ir.__name__, ir_expr.__name__)
}


def _is_ir_class(t: Any) -> bool:
    return isinstance(t, type) and t in CLASSES.values()


def _is_ir_union(t: Any) -> bool:
    if typing.get_origin(t) not in (typing.Union, types.UnionType):
        return False
    args = [a for a in typing.get_args(t) if a is not type(None)]
    return bool(args) and all(_is_ir_class(a) for a in args)


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    for cls in CLASSES.values():
        attrs.resolve_types(cls, globalns=vars(ir))
    conv.register_unstructure_hook(Span, lambda s: [s.file, s.start, s.end])
    conv.register_structure_hook(Span, lambda v, _: Span(v[0], v[1], v[2]))
    conv.register_unstructure_hook(FrozenMap, thaw)
    conv.register_structure_hook(typing.Any, lambda v, _: freeze(v))
    conv.register_structure_hook(str | int, _segment)
    for t in (str, int, bool):
        conv.register_structure_hook(t, _strict(t))

    def structure_union(value: Any, t: Any) -> Any:
        if value is None:
            return None
        cls = CLASSES.get(value.get(TAG)) if isinstance(value, dict) else None
        if cls is None:
            raise ValueError(f"unknown IR node {value.get(TAG) if isinstance(value, dict) else value!r}")
        return conv.structure(value, cls)

    conv.register_structure_hook_func(_is_ir_union, structure_union)
    for name, cls in CLASSES.items():
        base_un = make_dict_unstructure_fn(cls, conv)
        base_st = make_dict_structure_fn(cls, conv)
        conv.register_unstructure_hook(cls, _tagging(name, base_un))
        conv.register_structure_hook(cls, _untagging(base_st))

    return conv


def _segment(value: Any, _: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"a path segment must be a string or an integer, not {value!r}")
    return value


def _strict(t: type):
    def structure(value: Any, _: Any) -> Any:
        if type(value) is not t and not (t is float and type(value) is int):
            raise ValueError(f"expected {t.__name__}, got {value!r}")
        return value
    return structure


def _tagging(name: str, fn):
    def unstructure(obj: Any) -> dict:
        return {TAG: name, **fn(obj)}
    return unstructure


def _untagging(fn):
    def structure(value: dict, cls: type) -> Any:
        return fn({k: v for k, v in value.items() if k != TAG}, cls)
    return structure


CONVERTER = make_converter()


def ir_to_data(program: ir.Program) -> dict:
    return {"afp_ir": FORMAT_VERSION, "program": _plain(CONVERTER.unstructure(program, ir.Program))}


def ir_to_json(program: ir.Program, indent: int | None = 1) -> str:
    return json.dumps(ir_to_data(program), indent=indent, ensure_ascii=False)


class IRFormatError(ValueError):
    """The JSON is not an IR document this version can read."""


def ir_from_data(data: Any) -> ir.Program:
    if not isinstance(data, dict) or data.get("afp_ir") != FORMAT_VERSION:
        raise IRFormatError(f"not an afp IR document of format version {FORMAT_VERSION}")
    try:
        return CONVERTER.structure(data["program"], ir.Program)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError, IndexError) as e:
        raise IRFormatError(f"malformed IR document: {e}") from None


def ir_from_json(text: str) -> ir.Program:
    try:
        data = json.loads(text)
    except ValueError as e:
        raise IRFormatError(f"not JSON: {e}") from None
    return ir_from_data(data)
