"""JSON form of the IR through one cattrs converter: `ir_to_json`, `ir_from_json`.

Role:       the only module that knows the IR's JSON field names; `afpc compile` writes this and
            `afp_dsl.load_ir` reads it back without the parser.
Invariants: every IR object carries a `node` tag (its class name); spans are `[file, start, end]`;
            `ir_from_json(ir_to_json(p)) == p`; reading is strict (exact JSON types, lists for
            tuples, null only where the field is optional), so a malformed document is one
            `IRFormatError` naming the path of the bad value, never an error from deep inside.
"""
from __future__ import annotations

import json
import types
import typing
from typing import Any

import attrs
import cattrs
from cattrs.errors import IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from cattrs.v import format_exception

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
    conv.register_structure_hook(Span, _span)
    conv.register_unstructure_hook(FrozenMap, thaw)
    conv.register_structure_hook(typing.Any, lambda v, _: freeze(v))
    conv.register_structure_hook(str | int, _segment)
    conv.register_structure_hook_func(_is_tuple, lambda v, t: _tuple(conv, v, t))
    for t in (str, int, bool):
        conv.register_structure_hook(t, _strict(t))

    def structure_union(value: Any, t: Any) -> Any:
        allowed = typing.get_args(t)
        if value is None and type(None) in allowed:
            return None
        cls = CLASSES.get(value.get(TAG)) if isinstance(value, dict) else None
        if cls is None or not any(issubclass(cls, a) for a in allowed if a is not type(None)):
            kinds = ", ".join(sorted(a.__name__ for a in allowed if a is not type(None)))
            raise ValueError(f"expected an IR node ({kinds}), got {_brief(value)}")
        return conv.structure(value, cls)

    conv.register_structure_hook_func(_is_ir_union, structure_union)
    for name, cls in CLASSES.items():
        base_un = make_dict_unstructure_fn(cls, conv)
        base_st = make_dict_structure_fn(cls, conv)
        conv.register_unstructure_hook(cls, _tagging(name, base_un))
        hook = _untagging(base_st)
        conv.register_structure_hook(cls, _schema(hook) if cls is ir_expr.Schema else hook)

    return conv


def _brief(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object with node {value.get(TAG)!r}" if TAG in value else "an object without a `node` tag"
    scalar = isinstance(value, (str, int, float, bool, type(None)))
    text = json.dumps(value) if scalar else f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _span(value: Any, _: Any) -> Span:
    if (type(value) is not list or len(value) != 3 or type(value[0]) is not str
            or any(type(v) is not int or v < 0 for v in value[1:])):
        raise ValueError(f"a span must be [file, start, end] (a string and two offsets), "
                         f"not {_brief(value)}")
    return Span(value[0], value[1], value[2])


def _is_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple(conv: cattrs.Converter, value: Any, t: Any) -> tuple:
    """A JSON list, strictly (a string or an object is not silently iterated)."""
    if type(value) is not list:
        raise ValueError(f"expected a list, got {_brief(value)}")
    item = typing.get_args(t)[0]
    out, errors = [], []
    for i, v in enumerate(value):
        try:
            out.append(conv.structure(v, item))
        except Exception as e:  # noqa: BLE001 - collected, with the index, as cattrs does
            e.__notes__ = [*getattr(e, "__notes__", []), IterableValidationNote(f"@ index {i}", i, item)]
            errors.append(e)
    if errors:
        raise IterableValidationError(f"While structuring {t!r}", errors, t)
    return tuple(out)


def _explain(exc: BaseException, t: Any) -> str:
    """Our own hooks' messages as they are; cattrs' wording for the rest."""
    if type(exc) is ValueError and exc.args:
        return str(exc)
    return format_exception(exc, t)


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


def _schema(fn):
    """A schema's `json` is what the validator reads: a JSON Schema object (or `true`/`false`)."""
    def structure(value: Any, cls: type) -> Any:
        node = fn(value, cls)
        if not isinstance(node.json, (FrozenMap, bool)):
            raise ValueError(f"a schema's `json` must be a JSON Schema object, not "
                             f"{_brief(thaw(node.json))}")
        return node
    return structure


def _tagging(name: str, fn):
    def unstructure(obj: Any) -> dict:
        return {TAG: name, **fn(obj)}
    return unstructure


def _untagging(fn):
    def structure(value: Any, cls: type) -> Any:
        if not isinstance(value, dict) or value.get(TAG, cls.__name__) != cls.__name__:
            raise ValueError(f"expected a {cls.__name__} object, got {_brief(value)}")
        return fn({k: v for k, v in value.items() if k != TAG}, cls)
    return structure


CONVERTER = make_converter()


def ir_to_data(program: ir.Program) -> dict:
    return {"afp_ir": FORMAT_VERSION, "program": _plain(CONVERTER.unstructure(program, ir.Program))}


def ir_to_json(program: ir.Program, indent: int | None = 1) -> str:
    return json.dumps(ir_to_data(program), indent=indent, ensure_ascii=False)


class IRFormatError(ValueError):
    """What `afp_dsl.load_ir` raises for anything it cannot read as an IR document of this
    version (a missing or unreadable file, text that is not JSON, a malformed document); the
    message names what is wrong and how to get a good document."""


FIX = "pass the JSON that `afpc compile SPEC -o FILE.ir.json` writes (recompile it with this afp)"


def ir_from_data(data: Any) -> ir.Program:
    if not isinstance(data, dict):
        raise IRFormatError(f"not an afp IR document: the JSON is {_brief(data)}, not an object "
                            f"with `afp_ir` and `program`; {FIX}")
    version = data.get("afp_ir")
    if type(version) is not int or version != FORMAT_VERSION:
        found = "no `afp_ir` field" if "afp_ir" not in data else f"`afp_ir` is {_brief(version)}"
        raise IRFormatError(f"not an afp IR document of format version {FORMAT_VERSION} "
                            f"({found}); {FIX}")
    if "program" not in data:
        raise IRFormatError(f"malformed IR document: no `program` field; {FIX}")
    try:
        program = CONVERTER.structure(data["program"], ir.Program)
    except cattrs.BaseValidationError as e:
        problems = cattrs.transform_error(e, path="$.program", format_exception=_explain)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise IRFormatError(f"malformed IR document: {problems[0]}{more}; {FIX}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
        raise IRFormatError(f"malformed IR document: {e}; {FIX}") from None
    if program.module(program.root) is None:
        keys = ", ".join(f"`{m.key}`" for m in program.modules[:5]) or "none"
        raise IRFormatError(f"malformed IR document: `root` {_brief(program.root)} names none of "
                            f"its modules (modules: {keys}) @ $.program.root; {FIX}")
    return program


def ir_from_json(text: str) -> ir.Program:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise IRFormatError(f"not JSON: {e}; {FIX}") from None
    return ir_from_data(data)
