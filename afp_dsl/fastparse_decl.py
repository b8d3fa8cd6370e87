"""Fast path of the parser, part 5: a plain declaration lowered straight from its tokens.

Role:       `fastparse._Parser.decl` asks `DeclParser.lowered_decl` first. When the parser knows
            the file's name, a tool, skill, agent, steering or instruction whose attributes are
            all of the commonest forms (a string, a text, a name, a list of names, a whole
            number, `true`/`false`, one of an attribute's choices, `python("module:attr")`, a
            tool's schema block) becomes a `Lowered` node holding the very IR declaration (spans
            included) that `Lowerer.decl` would build from its tree; no parse tree is made for it,
            and `lower` takes the declaration as it is.
Emits:      nothing. Anything else makes it give up on that declaration, having consumed nothing:
            the tree is built as before and `Lowerer.decl` lowers it (and reports), so diagnostics
            come from one place. It gives up on a reserved or too long name (AFP003, AFP110), an
            attribute given twice (AFP106), an unknown one (AFP104), a missing required one
            (AFP105), a value the converter would refuse (AFP106, AFP008), an attribute that
            would draw a "has no effect" warning (`keep_runs`, `on_skip`), a value of any other
            form (another call, `file(...)`, a qualified name, a string with escapes, an
            expression), a `steps` block, and any syntax the tree path would not accept.
Invariants: it reads exactly the tokens `_Parser.decl` reads, in the same order; the values are
            built as `Converter.quick` and the converters build them from the tree (the same
            builders), the schema blocks by `fastparse_schema`. tests/test_fastparse_decl.py
            compares both paths, spans included.
"""
from __future__ import annotations

from typing import Any

import attrs

from . import ir
from .attributes import SCHEMAS, Attr, valid_target
from .fastlex import ATTR_KEYS, KEYWORDS, Bail, Lowered, node
from .fastparse_route import RouteParser
from .fastparse_schema import Unfused
from .lower import RESERVED
from .literals import MAX_NAME, multiline, number, plain_string
from .source import Span

_new_span = tuple.__new__
_TEXT, _REF = ir.maker(ir.Text), ir.maker(ir.Ref)
_PYTHON_IMPL = ir.maker(ir.PythonImpl)
_QUICK_KINDS = frozenset(("string", "text", "refs", "ref", "int", "bool", "choice", "impl"))
_BOOLS = {"true": True, "false": False}
# Attributes that draw an "has no effect" warning in `Lowerer.decl` for any value this path
# builds (`keep_runs` without an agent impl, `on_skip` without `steps`): left to the tree path.
_WARNED = frozenset(("keep_runs", "on_skip"))


def _builder(cls: type) -> tuple[Any, tuple, dict[str, int]]:
    """(positional builder, every field's default, field name -> position) of an IR class. The
    defaults are shared by every declaration built (none is a factory: the tests check)."""
    fields = attrs.fields(cls)
    return ir.maker(cls), tuple(f.default for f in fields), {f.name: i for i, f in enumerate(fields)}


_KINDS = {"tool": ir.Tool, "skill": ir.Skill, "agent": ir.Agent, "steering": ir.Steering,
          "instruction": ir.Instruction}
FUSED_KINDS = frozenset(_KINDS)
_BUILDERS = {kind: _builder(cls) for kind, cls in _KINDS.items()}
# Per kind: attribute key -> its `Attr`, for the keys this path takes (in their plain forms).
_QUICK = {kind: {key: a for key, a in SCHEMAS[kind].attrs.items()
                 if a.kind in _QUICK_KINDS and key not in _WARNED
                 and (key in ATTR_KEYS or key not in KEYWORDS)}
          for kind in _KINDS}
_REQUIRED = {kind: SCHEMAS[kind].required for kind in _KINDS}


class DeclParser(RouteParser):
    def lowered_decl(self, kind: str) -> Lowered | None:
        """The declaration at `self.i` (its kind's word) lowered, or None with nothing consumed."""
        i, depth = self.i, self.depth
        try:
            return self.fused_decl(kind)
        except (Unfused, Bail, IndexError):
            self.i, self.depth = i, depth  # (the tree path bails on what is not valid syntax)
            return None

    def fused_decl(self, kind: str) -> Lowered:
        """`KIND NAME { key = value, ..., input { ... } }` (as `_Parser.decl` reads it)."""
        k, v = self.k, self.v
        i = self.i
        start = self.s[i]
        name = v[i + 1]
        if k[i + 1] != "W" or name in RESERVED or len(name) > MAX_NAME or k[i + 2] != "{":
            raise Unfused
        name_span = _new_span(Span, (self.file, self.s[i + 1], self.e[i + 1]))
        self.i = i + 3
        quick, fields = _QUICK[kind], {}
        while k[self.i] != "}":
            key = v[self.i]
            if k[self.i] != "W" or key in fields:
                raise Unfused
            if k[self.i + 1] == "{" and kind == "tool" and (key == "input" or key == "output"):
                self.i += 1
                fields[key] = (key, self.fused_block().value)
            elif k[self.i + 1] == "=" and key in quick:
                attr, key_start = quick[key], self.s[self.i]
                self.i += 2
                fields[key] = (attr.field, self.quick_value(attr))
                if key == "max_iterations":  # (`Agent.budget_span`, as `Lowerer.decl` sets it)
                    fields["budget_span"] = ("budget_span", _new_span(
                        Span, (self.file, key_start, self.e[self.i - 1])))
            else:
                raise Unfused
            if k[self.i] == ",":
                self.i += 1
        for req in _REQUIRED[kind]:
            if req not in fields:
                raise Unfused
        end = self.e[self.i]
        self.i += 1
        make, defaults, index = _BUILDERS[kind]
        args = list(defaults)
        for field, value in fields.values():
            args[index[field]] = value
        args[index["name"]] = name
        args[index["span"]] = name_span
        args[index["full_span"]] = _new_span(Span, (self.file, start, end))
        out = node(kind + "_decl", [], start, end, Lowered)
        out.value = make(*args)
        return out

    def quick_value(self, attr: Attr) -> Any:
        """An attribute's value in a plain form, as the converter of `attr.kind` takes it from
        the tree. Where the tree path's expression would go on (`==`, `and`, `in`, ...), the
        next item cannot start (it must be a key followed by `=` or `{`): `fused_decl` gives up."""
        k, i, conv = self.k, self.i, attr.kind
        kind = k[i]
        if conv == "string" or conv == "text":
            value = self.quick_text(i)
            if conv == "text":
                value = _TEXT(value, None, _new_span(Span, (self.file, self.s[i], self.e[i])))
        elif conv == "ref":
            value = self.quick_ref(i)
        elif conv == "refs" and kind == "[":
            refs = []
            i += 1
            while k[i] != "]":
                refs.append(self.quick_ref(i))
                i += 1
                if k[i] == ",":
                    i += 1
                elif k[i] != "]":
                    raise Unfused
            value = tuple(refs)
        elif conv == "int" and kind == "N":  # (`Converter.c_int`)
            value = number(self.v[i])
            if type(value) is not int or (attr.minimum is not None and value < attr.minimum):
                raise Unfused
        elif conv == "bool" and kind == "W" and self.v[i] in _BOOLS:
            value = _BOOLS[self.v[i]]
        elif conv == "choice":
            value = self.quick_text(i)
            if value not in attr.choices:
                raise Unfused
        elif conv == "impl" and kind == "W" and self.v[i] == "python" and k[i + 1] == "(" \
                and k[i + 3] == ")":  # `python("module:attr")` (`Converter.c_python`)
            target = self.quick_text(i + 2)
            if not valid_target(target):
                raise Unfused
            value = _PYTHON_IMPL(target, _new_span(Span, (self.file, self.s[i], self.e[i + 3])))
            i += 3
        else:
            raise Unfused
        self.i = i + 1
        return value

    def quick_text(self, i: int) -> str:
        """A string literal's text, when it needs no decoding and draws no diagnostic."""
        kind = self.k[i]
        if kind == "M":
            return multiline(self.v[i])
        value = plain_string(self.v[i]) if kind == "S" else None
        if value is None:
            raise Unfused
        return value

    def quick_ref(self, i: int) -> ir.Ref:
        """A bare name as a reference (a path of one root: what `_path_ref` makes of it). A name
        the tree path would read on (`a.b`, `a[0]`, `a(...)`) is followed by what neither a list
        nor the next item accepts: the caller gives up there."""
        w = self.v[i]
        if self.k[i] != "W" or w in KEYWORDS:
            raise Unfused
        return _REF(w, None, _new_span(Span, (self.file, self.s[i], self.e[i])))
