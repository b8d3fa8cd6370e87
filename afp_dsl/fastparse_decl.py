"""Fast path of the parser, part 5: a plain declaration lowered straight from its tokens.

Role:       `fastparse._Parser.decl` asks `DeclParser.lowered_decl` first. When the parser knows
            the file's name, a tool, skill, agent, steering or instruction whose attributes are
            all of the commonest forms (a string, a text, a name, a list of names, a tool's
            schema block) becomes a `Lowered` node holding the very IR declaration (spans
            included) that `Lowerer.decl` would build from its tree; no parse tree is made for it,
            and `lower` takes the declaration as it is.
Emits:      nothing. Anything else makes it give up on that declaration, having consumed nothing:
            the tree is built as before and `Lowerer.decl` lowers it (and reports), so diagnostics
            come from one place. It gives up on a reserved or too long name (AFP003, AFP110), an
            attribute given twice (AFP106), an unknown one (AFP104), a missing required one
            (AFP105), a value of any other form (a number, a call, `file(...)`, a qualified name, a
            string with escapes, an expression), a `steps` block, and any syntax the tree path
            would not accept.
Invariants: it reads exactly the tokens `_Parser.decl` reads, in the same order; the values are
            built as `Converter.quick` builds them from the tree (the same builders), the schema
            blocks by `fastparse_schema`. tests/test_fastparse_decl.py compares both paths, spans
            included.
"""
from __future__ import annotations

from typing import Any

import attrs

from . import ir
from .attributes import SCHEMAS
from .fastlex import ATTR_KEYS, KEYWORDS, Bail, Lowered, node
from .fastparse_route import RouteParser
from .fastparse_schema import Unfused
from .lower import RESERVED
from .lower_values import MAX_NAME, multiline, plain_string
from .source import Span

_new_span = tuple.__new__
_TEXT, _REF = ir.maker(ir.Text), ir.maker(ir.Ref)
_QUICK_KINDS = frozenset(("string", "text", "refs", "ref"))


def _builder(cls: type) -> tuple[Any, tuple, dict[str, int]]:
    """(positional builder, every field's default, field name -> position) of an IR class."""
    fields = attrs.fields(cls)
    assert not any(isinstance(f.default, attrs.Factory) for f in fields)  # (shared defaults)
    return ir.maker(cls), tuple(f.default for f in fields), {f.name: i for i, f in enumerate(fields)}


_KINDS = {"tool": ir.Tool, "skill": ir.Skill, "agent": ir.Agent, "steering": ir.Steering,
          "instruction": ir.Instruction}
FUSED_KINDS = frozenset(_KINDS)
_BUILDERS = {kind: _builder(cls) for kind, cls in _KINDS.items()}
# Per kind: attribute key -> (IR field, converter kind), for the keys given in a quick form only.
_QUICK = {kind: {key: (a.field, a.kind) for key, a in SCHEMAS[kind].attrs.items()
                 if a.kind in _QUICK_KINDS and (key in ATTR_KEYS or key not in KEYWORDS)}
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
                field, conv = quick[key]
                self.i += 2
                fields[key] = (field, self.quick_value(conv))
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

    def quick_value(self, conv: str) -> Any:
        """An attribute's value in the form `Converter.quick` takes (`conv`: the converter kind).
        Where the tree path's expression would go on (`==`, `and`, `in`, `matches`, ...), the
        next item cannot start (it must be a key followed by `=` or `{`): `fused_decl` gives up."""
        k, i = self.k, self.i
        kind = k[i]
        if conv == "string" or conv == "text":
            if kind == "S":
                value = plain_string(self.v[i])
                if value is None:
                    raise Unfused
            elif kind == "M":
                value = multiline(self.v[i])
            else:
                raise Unfused
            if conv == "text":
                value = _TEXT(value, None, _new_span(Span, (self.file, self.s[i], self.e[i])))
            self.i = i + 1
        elif conv == "ref":
            value = self.quick_ref(i)
            self.i = i + 1
        elif kind == "[":  # refs
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
            self.i = i + 1
        else:
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
