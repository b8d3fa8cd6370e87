"""Per-kind attribute tables and the converters that check and lower attribute values.

Role:       the single description of which `key = value` each declaration kind accepts
            (language.md §5), used by `lower` and by the docs.
Emits:      AFP008 number-out-of-range (in JSON files), AFP104 unknown-attribute, AFP106
            bad-attribute-value, AFP109 file-not-found (also a data file that is not JSON),
            AFP301 invalid-schema (a schema file that is not JSON).
Invariants: a converter never raises; on a bad value it reports and returns `BAD`, so the IR
            keeps the attribute's default.
"""
from __future__ import annotations

import posixpath
import re
from typing import Any, Callable

from . import ir
from .codes import diag
from .diagnostics import Diagnostic
from .frozen import freeze
from .literals import NUMBER_RANGE, shown_number
from .lower_values import BAD, EXPR_CALLS, CallV, MapV, ValueLowerer, call_help, to_data
from .record import Record, record
from .source import Span
from .spec_files import OutOfRange, Unreadable, json_line, json_problem, leaves_folder, parse_json
from .suggest import closest


_CALLS = re.compile(r"`(file|python|returns|agent)\(")  # the calls an expected value names


@record
class Attr(Record):
    field: str  # the IR field it fills
    kind: str  # converter name, see Converter.run
    choices: tuple = ()
    minimum: int | None = None


@record
class KindSchema(Record):
    attrs: dict[str, Attr]
    required: tuple[str, ...] = ()


def _a(kind: str, field: str | None = None, **kw: Any) -> Callable[[str], Attr]:
    return lambda key: Attr(field or key, kind, **kw)


def _table(required: tuple[str, ...] = (), **spec: Callable[[str], Attr]) -> KindSchema:
    return KindSchema({k: f(k) for k, f in spec.items()}, required)


SCHEMAS: dict[str, KindSchema] = {
    "agent": _table(
        system=_a("text"), model=_a("string"), max_iterations=_a("int", minimum=1),
        wrap_up=_a("bool"), tools=_a("refs"), skills=_a("refs"), graph=_a("ref"),
        context=_a("refs"), policies=_a("refs"), redact=_a("refs"),
        continuity=_a("choice", choices=("run", "conversation")),
        tool_scope=_a("choice", choices=("always", "active"))),
    "tool": _table(
        ("description",), description=_a("string"), input=_a("schema"), output=_a("schema"),
        impl=_a("impl"), keep_runs=_a("int", minimum=0), check_in=_a("expr"),
        max_result_chars=_a("int", minimum=1)),
    "skill": _table(
        ("description",), description=_a("string"), body=_a("text"), tools=_a("refs"),
        on_skip=_a("choice", choices=("advance", "hold"))),
    "graph": _table(scope_tools=_a("bool")),
    "steering": _table(("prompt",), prompt=_a("text")),
    "fact": _table(("data",), data=_a("data"), when=_a("expr")),
    "instruction": _table(("prompt",), prompt=_a("text"), when=_a("expr")),
    "redact": _table(keys=_a("strings"), patterns=_a("regexes"), placeholder=_a("string"),
                     model=_a("bool")),
    "policy": _table(impl=_a("python")),
    "test": _table(agent=_a("ref")),
}


# The keys a kind writes before a block (`input { ... }`, `steps { ... }`, `before t { ... }`).
BLOCK_KEYS: dict[str, tuple[str, ...]] = {
    "tool": ("input", "output"), "skill": ("steps",),
    "policy": ("input", "output", "before", "after")}


def unknown_attribute(kind: str, key: str, span: Span, table: KindSchema | None = None) -> Diagnostic:
    """AFP104 for `key` in a `kind` declaration, with the closest known attribute or block."""
    table = table if table is not None else SCHEMAS.get(kind, KindSchema({}, ()))
    known = sorted(set(table.attrs) | set(BLOCK_KEYS.get(kind, ())))  # (a schema attribute is in both)
    close = closest(key, known)
    help = f"did you mean `{close}`?" if close else (
        f"{kind} attributes are: " + ", ".join(f"`{k}`" for k in known) if known else
        f"a {kind} takes no attributes")
    return diag("AFP104", f"unknown attribute `{key}` for {kind}", span, "unknown attribute", help=help)


class Converter:
    def __init__(self, values: ValueLowerer, diags: list[Diagnostic], read_file: Callable[[str], str | None]):
        self.v = values
        self.diags = diags
        self.read_file = read_file

    def unknown(self, kind: str, key: str, span: Span, table: KindSchema) -> Diagnostic:
        return unknown_attribute(kind, key, span, table)

    def run(self, spec: Attr, value: Any, key_span: Span) -> Any:
        return getattr(self, "c_" + spec.kind)(spec, value, key_span)

    def quick(self, spec: Attr, node: Any) -> Any:
        """The converted value of the commonest well-formed attributes (a string, a text, a name,
        a list of names) read straight off the parse tree, or `NOT_QUICK` for anything else.
        Speed: `run(spec, v.value(node), ...)` first builds the `Lit`, `Path` or `ListExpr` that
        the converter then takes apart; these forms give the same value and never a diagnostic
        beyond the string's own (which `v.string` reports just as `v.value` would)."""
        kind = spec.kind
        if isinstance(node, str):
            if node.type != "STRING" and node.type != "MLSTRING":
                return NOT_QUICK
            if kind == "string":
                return self.v.string(node)
            if kind == "text":
                value = self.v.string(node)  # (its diagnostic, if any, before the span: as `token`)
                return _TEXT(value, None, self.v.span(node))
            return NOT_QUICK
        if kind == "refs" and node.data == "list":
            refs = []
            for item in node.children:
                ref = _path_ref(self.v, item)
                if ref is None:
                    return NOT_QUICK
                refs.append(ref)
            return tuple(refs)
        if kind == "ref":
            return _path_ref(self.v, node) or NOT_QUICK
        return NOT_QUICK

    def bad(self, value: Any, key_span: Span, want: str, key: str = "", help: str | None = None) -> Any:
        span = getattr(value, "span", key_span)
        if span in self.v.out_of_range or span in self.v.bad_strings:  # already reported (AFP008,
            return BAD  # AFP005): one diagnostic per cause
        if help is None:  # (`pyhton("m:f")`: a near miss of a call this attribute takes)
            help = (call_help(value, _CALLS.findall(want)) or "").strip() or None
        if help is None and "name" in want and isinstance(value, ir.Path) and self.as_ref(value) is None:
            help = "a reference is `name`, or `alias.name` for a declaration of an imported module"  # (`r.a.b`)
        self.diags.append(diag("AFP106", f"expected {want}" + (f" for `{key}`" if key else ""), span,
                               f"expected {want}", help=help))
        return BAD

    # -------------------------------------------------------------- scalar kinds
    def c_string(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, ir.Lit) and isinstance(value.value, str):
            return value.value
        return self.bad(value, key_span, "a string", spec.field)

    def c_bool(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, ir.Lit) and isinstance(value.value, bool):
            return value.value
        return self.bad(value, key_span, "`true` or `false`", spec.field)

    def c_int(self, spec: Attr, value: Any, key_span: Span) -> Any:
        v = getattr(value, "value", None) if isinstance(value, ir.Lit) else None
        if isinstance(v, bool) or not isinstance(v, int) or (spec.minimum is not None and v < spec.minimum):
            whole = isinstance(v, float) and v.is_integer() and (spec.minimum is None or v >= spec.minimum)
            return self.bad(value, key_span, f"a whole number of at least {spec.minimum}", spec.field,
                            help=f"write `{int(v)}`" if whole else None)
        return v

    def c_choice(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, ir.Lit) and value.value in spec.choices:
            return value.value
        return self.bad(value, key_span, " or ".join(f'"{c}"' for c in spec.choices), spec.field,
                        help=_choice_help(value, spec.choices))

    def c_expr(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, (MapV, CallV, ir.Regex)):
            return self.bad(value, key_span, "a condition such as `args.amount > 100`", spec.field,
                            help=(call_help(value, EXPR_CALLS) or "").strip() or None)
        return self.v.clean_expr(value)

    # -------------------------------------------------------------- references
    def as_ref(self, value: Any) -> ir.Ref | None:
        if isinstance(value, ir.Path) and len(value.segments) <= 1 and all(
                isinstance(s, str) for s in value.segments):
            if value.segments:
                return ir.Ref(name=value.segments[0], alias=value.root, span=value.span)
            return ir.Ref(name=value.root, span=value.span)
        return None

    def c_ref(self, spec: Attr, value: Any, key_span: Span) -> Any:
        ref = self.as_ref(value)
        return ref if ref is not None else self.bad(value, key_span, "a name", spec.field)

    def c_refs(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if not isinstance(value, ir.ListExpr):
            single = self.as_ref(value)
            if single is not None:
                return self.bad(value, key_span, f"a list of names, like `[{single}]`", spec.field)
            return self.bad(value, key_span, "a list of names", spec.field)
        refs = []
        for item in value.items:
            ref = self.as_ref(item)
            if ref is None:
                self.bad(item, key_span, "a name")
            else:
                refs.append(ref)
        return tuple(refs)

    def c_strings(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if not isinstance(value, ir.ListExpr):
            return self.bad(value, key_span, "a list of strings", spec.field)
        out = []
        for item in value.items:
            if isinstance(item, ir.Lit) and isinstance(item.value, str):
                out.append(item.value)
            else:
                self.bad(item, key_span, "a string")
        return tuple(out)

    def c_regexes(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if not isinstance(value, ir.ListExpr):
            return self.bad(value, key_span, "a list of regexes like `[/sk-[a-z]+/]`", spec.field)
        out = []
        for item in value.items:
            if isinstance(item, ir.Regex):
                out.append(item)
            else:
                self.bad(item, key_span, "a regex like `/pattern/`")
        return tuple(out)

    # -------------------------------------------------------------- text, data, files
    def file_arg(self, value: CallV) -> tuple[str, str | None] | None:
        """(relative path, contents or None) of a `file("...")` call, or None when malformed."""
        if len(value.args) != 1 or not isinstance(value.args[0], ir.Lit) or not isinstance(
                value.args[0].value, str):
            self.diags.append(diag("AFP106", '`file(...)` takes one path string', value.span,
                                   'write `file("relative/path")`'))
            return None
        rel = value.args[0].value
        if value.args[0].span in self.v.bad_strings:  # (AFP005: the path is not what was meant)
            return rel, None
        if not rel:  # (else it names the spec's own folder)
            self.diags.append(diag("AFP109", "`file(\"\")` names no file", value.args[0].span,
                                   "empty path",
                                   help='name a file relative to the spec, as `file("data.json")`'))
            return rel, None
        if leaves_folder(rel):
            self.diags.append(diag("AFP109", f"`file(\"{rel}\")` reads outside the folder of the spec",
                                   value.args[0].span, "outside the spec's folder",
                                   notes=("`file(...)` reads only files in the folder of the spec "
                                          "that names it, or in folders below it",),
                                   help="move the file next to the spec (or into a folder below "
                                        "it) and name it relative to the spec"))
            return rel, None
        text = self.read_file(rel)
        if text is None or isinstance(text, Unreadable):
            self.diags.append(diag("AFP109", f"cannot read file `{rel}`" + (f": {text}" if text else ""),
                                   value.args[0].span, "cannot be read" if text else
                                   "no such file, or not readable UTF-8 text",
                                   help="paths in `file(...)` are relative to the spec that names them"))
            return rel, None
        return rel, text

    def c_text(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, ir.Lit) and isinstance(value.value, str):
            return ir.Text(value=value.value, span=value.span)
        if isinstance(value, CallV) and value.func == "file":
            got = self.file_arg(value)
            if got is None or got[1] is None:
                return BAD
            return ir.Text(value=got[1], file=posixpath.normpath(got[0]), span=value.span)
        return self.bad(value, key_span, 'a string or `file("...")`', spec.field)

    def c_data(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, CallV) and value.func == "file":
            got = self.file_arg(value)
            if got is None or got[1] is None:
                return BAD
            rel, text = got  # (language.md §3: a file is text for `data`, whatever its name)
            return ir.Text(value=text, file=rel, span=value.span)
        if isinstance(value, ir.Lit) and isinstance(value.value, str):
            return ir.Text(value=value.value, span=value.span)
        if isinstance(value, (MapV, ir.ListExpr)):
            data = to_data(value, self.diags)
            return BAD if data is BAD else ir.Data(value=data, span=value.span)
        return self.bad(value, key_span, 'a string, a map, a list or `file("...")`', spec.field)

    def json_file(self, rel: str, text: str, span: Span, schema: bool = False) -> Any:
        """The frozen JSON of file `rel`, or BAD with a diagnostic: AFP301 invalid-schema for a
        tool's schema file (`schema`), AFP109 for a data file, saying where the JSON breaks."""
        try:
            return freeze(parse_json(text))
        except OutOfRange as e:
            self.diags.append(diag("AFP008", f"file `{rel}` holds the number {shown_number(str(e))}, too "
                                   "large to represent", span, "out of range", help=NUMBER_RANGE))
            return BAD
        except (ValueError, RecursionError) as e:
            what = "schema file" if schema else "file"
            self.diags.append(diag("AFP301" if schema else "AFP109",
                                   f"{what} `{rel}` is not valid JSON: {json_problem(e)}", span,
                                   "not JSON", notes=json_line(text, e),
                                   help="a schema file holds one JSON Schema object" if schema else None))
            return BAD

    def c_schema(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, MapV):
            typed = _block_written_as_map(value)
            if typed is not None:  # `input = { a: string }`: a schema block with a stray `=`
                self.diags.append(diag(
                    "AFP106", f"`{spec.field} = {{ … }}` is a raw JSON Schema map, whose values are "
                    f"data, but `{typed.root}` here is a type", typed.span, "a type, not data",
                    help=f"for a schema block, drop the `=`: `{spec.field} {{ … }}`; for raw JSON "
                         f"Schema, write `{{ type: \"object\", properties: {{ … }} }}`"))
                return BAD
            data = to_data(value, self.diags)
            return BAD if data is BAD else ir.Schema(json=data, origin="map", span=value.span,
                                                     pointers=tuple(_pointers(value, "")))
        if isinstance(value, CallV) and value.func == "file":
            got = self.file_arg(value)
            if got is None or got[1] is None:
                return BAD
            data = self.json_file(got[0], got[1], value.span, schema=True)
            return BAD if data is BAD else ir.Schema(json=data, origin="file", file=got[0], span=value.span)
        return self.bad(value, key_span, 'a schema block `{ field: type }`, a JSON Schema map or `file("x.json")`',
                        spec.field)

    # -------------------------------------------------------------- bodies
    def c_python(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, CallV) and value.func == "python":
            if len(value.args) == 1 and isinstance(value.args[0], ir.Lit) and isinstance(value.args[0].value, str):
                target = value.args[0].value
                if value.args[0].span in self.v.bad_strings:  # (AFP005: not the target meant)
                    return BAD
                if valid_target(target):
                    return ir.PythonImpl(target=target, span=value.span)
                self.diags.append(diag("AFP106", f"`{target}` is not a `module:attribute` target",
                                       value.args[0].span, "bad target",
                                       help='write `python("package.module:function")`'))
                return BAD
        return self.bad(value, key_span, '`python("module:attribute")`', spec.field)

    def c_impl(self, spec: Attr, value: Any, key_span: Span) -> Any:
        if isinstance(value, CallV) and value.func == "returns":
            if len(value.args) != 1:
                return self.bad(value, key_span, "`returns(value)` with one value")
            data = to_data(value.args[0], self.diags)
            if data is BAD or self.v.holds_fault(value.span):  # (AFP005 said why)
                return BAD
            return ir.ReturnsImpl(value=data, span=value.span)
        if isinstance(value, CallV) and value.func == "agent":
            ref = self.as_ref(value.args[0]) if len(value.args) == 1 else None
            return ir.AgentImpl(agent=ref, span=value.span) if ref else self.bad(value, key_span, "`agent(NAME)`")
        if isinstance(value, CallV) and value.func == "python":
            return self.c_python(spec, value, key_span)
        return self.bad(value, key_span, '`python("module:attr")`, `returns(value)` or `agent(NAME)`', "impl")


def _choice_help(value: Any, choices: tuple) -> str | None:
    """`"Run"` for `"run"`, or a bare `active` for `"active"`: the choice that was meant."""
    if isinstance(value, ir.Path) and not value.segments and value.root in choices:
        return f'write `"{value.root}"` in quotes'
    if isinstance(value, ir.Lit) and isinstance(value.value, str):
        close = closest(value.value.lower(), list(choices))
        return f'did you mean `"{close}"`?' if close else None
    return None


NOT_QUICK = object()  # `Converter.quick`: the value needs the general path
# Speed: `quick` builds its nodes with `ir.maker`'s positional builders (the same objects).
_TEXT, _REF = ir.maker(ir.Text), ir.maker(ir.Ref)


def _path_ref(v: ValueLowerer, node: Any) -> ir.Ref | None:
    """The `Ref` that `as_ref` makes of the `Path` a `path` node lowers to, or None when the node
    is not a path of a root and at most one named segment (`as_ref` would refuse it, or lowering
    it could report a bad index)."""
    if isinstance(node, str) or node.data != "path" or len(node.children) > 2:
        return None
    root = node.children[0]
    root_tok = root.children[0] if not isinstance(root, str) else root
    if len(node.children) == 1:
        return _REF(str(root_tok), None, v.span(node))
    seg = node.children[1]
    if seg.type == "NUMBER":
        return None
    return _REF(str(seg), str(root_tok), v.span(node))


def valid_target(target: str) -> bool:
    mod, sep, attr = target.partition(":")
    return bool(sep) and all(p.isidentifier() for p in mod.split(".")) and all(
        p.isidentifier() for p in attr.split("."))


def _pointers(value: Any, at: str):
    """(JSON pointer, span of the entry or item written there) for every entry and item of a
    raw map schema, so that a problem at `/properties/x/type` is shown under `type: "strng"`,
    not under the whole map (no recursion limit worry: the value was nested within the parser's bound)."""
    if isinstance(value, MapV):
        for key, key_span, v in value.items:
            here = f"{at}/{key.replace('~', '~0').replace('/', '~1')}"
            end = getattr(v, "span", None) or key_span  # (the entry: `type: "strng"`)
            yield here, Span(key_span.file, key_span.start, max(end.end, key_span.end))
            yield from _pointers(v, here)
    elif isinstance(value, ir.ListExpr):
        for i, v in enumerate(value.items):
            here = f"{at}/{i}"
            if getattr(v, "span", None) is not None:
                yield here, v.span
            yield from _pointers(v, here)


_TYPE_WORDS = frozenset(("string", "integer", "number", "boolean", "any", "object"))


def _block_written_as_map(value: MapV) -> Any:
    """The first entry value of a raw map schema that is a bare type name (`{ a: string }`,
    also `{ a: [string] }`): the author meant a schema block. None when there is none."""
    for _, _, v in value.items:
        item = v.items[0] if isinstance(v, ir.ListExpr) and len(v.items) == 1 else v
        if isinstance(item, ir.Path) and not item.segments and item.root in _TYPE_WORDS:
            return item
    return None
