"""Fast path of the parser, part 3: a tool's schema block lowered straight from its tokens.

Role:       `fastparse._Parser` reads a tool's `input { ... }` / `output { ... }` with
            `SchemaParser.schema_value`. When the parser knows the file's name, a block that
            lowering would take without a diagnostic becomes a `Lowered` node holding the very
            `ir.Schema` (spans included) that `lower_schema` would build from its tree, built with
            `lower_schema`'s own builders; no parse tree is made for it.
Emits:      nothing. Anything it does not handle (a default value, a string with escapes, a
            number out of range, anything that would draw a diagnostic: an unknown type or
            constraint, a duplicate field, constraint or `...`, a name too long; and any syntax
            the tree path would not accept) makes it give up on that block: the tree is built as
            before and `lower_schema` lowers it (and reports), so diagnostics come from one place.
Invariants: it accepts a block only where `ValueParser.schema_block` builds its tree: the same
            tokens, the same nesting bound (`MAX_NESTING`, counted the same way).
            tests/test_fastparse_schema.py compares both paths, spans included.
"""
from __future__ import annotations

from typing import Any

from .fastlex import MAX_NESTING, Bail, Lowered, Node, node
from .fastparse_values import ValueParser
from .frozen import adopt
from .lower_schema import (add_constraint, block_schema, constraint_fits, list_schema, named_schema,
                           null_schema, object_schema, union_schema)
from .literals import MAX_NAME, multiline, number, plain_string
from .source import Span

_new_span = tuple.__new__


class Unfused(Exception):
    """The block holds something the fused path leaves to the tree and `lower_schema`."""


_LITERALS = {"true": True, "false": False, "null": None}


class SchemaParser(ValueParser):
    file: str | None = None  # the spans' file; None: every block gets its tree (as Lark's)
    pointers: list = []

    def schema_value(self) -> Node:
        """A tool's schema block: lowered here when it can be (a `Lowered`), else its tree."""
        if self.file is not None:
            i, depth = self.i, self.depth
            try:
                return self.fused_block()
            except (Unfused, Bail, IndexError):
                self.i, self.depth = i, depth  # (the tree path bails on what is not valid syntax)
        return self.schema_block()

    def fused_block(self) -> Lowered:
        start = self.s[self.i]
        self.pointers = []
        json = self.fused_object("")
        end = self.e[self.i - 1]
        out = node("schema_block", [], start, end, Lowered)
        out.value = block_schema(json, self.pointers, _new_span(Span, (self.file, start, end)))
        return out

    def fused_object(self, pointer: str) -> dict:
        """`{ field, ..., ... }` (as `lower_schema.SchemaLowerer.object`)."""
        k = self.k
        self.expect("{")
        props: dict[str, Any] = {}
        required: list[str] = []
        open_ = False
        while k[self.i] != "}":
            if k[self.i] == "...":
                if open_:
                    raise Unfused
                open_ = True
                self.i += 1
            else:
                self.fused_field(pointer, props, required)
            if k[self.i] == ",":
                self.i += 1
        self.i += 1
        return object_schema(props, required, open_)

    def fused_field(self, pointer: str, props: dict, required: list) -> None:
        """`name?: type(constraints) "label"` (no default: those go to the tree path)."""
        k = self.k
        i = self.i
        name = self.v[i]
        if k[i] != "W" or len(name) > MAX_NAME or name in props:
            raise Unfused
        here = f"{pointer}/properties/{name}"
        self.pointers.append((here, _new_span(Span, (self.file, self.s[i], self.e[i]))))
        optional = k[i + 1] == "?"
        i += 2 if optional else 1
        if k[i] != ":":
            raise Unfused
        self.i = i + 1
        schema = self.fused_type(here)
        if k[self.i] == "(":
            self.fused_constraints(schema)
        i = self.i
        if k[i] == "S" or k[i] == "M":
            schema["description"] = self.fused_text(i)
            self.i = i + 1
        elif k[i] == "=":
            raise Unfused
        props[name] = adopt(schema)
        if not optional:
            required.append(name)

    def fused_type(self, pointer: str) -> dict:
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Unfused
        k = self.k
        i = self.i
        kind = k[i]
        if kind == "W" and self.v[i] not in _LITERALS:
            out = named_schema(self.v[i])
            if out is None:
                raise Unfused
            self.i = i + 1
        elif kind == "W" and self.v[i] == "null" and k[i + 1] != "|":
            out = null_schema()
            self.i = i + 1
        elif kind == "[":
            self.i = i + 1
            items = self.fused_type(pointer + "/items")
            if k[self.i] == "(":  # `[T(constraints)]`: the items'
                self.fused_constraints(items)
            out = list_schema(items)
            self.expect("]")
        elif kind == "{":
            out = self.fused_object(pointer)
        else:
            values = [self.fused_literal()]
            while k[self.i] == "|":
                self.i += 1
                values.append(self.fused_literal())
            out = union_schema(values)
        self.depth = depth - 1
        return out

    def fused_literal(self) -> Any:
        i = self.i
        kind = self.k[i]
        if kind == "W" and self.v[i] in _LITERALS:
            value = _LITERALS[self.v[i]]
        elif kind == "N":
            value = self.fused_number(i)
        elif kind == "S" or kind == "M":
            value = self.fused_text(i)
        else:
            raise Unfused
        self.i = i + 1
        return value

    def fused_constraints(self, schema: dict) -> None:
        """`(key: value, ...)`, each value one number or string literal."""
        k = self.k
        self.i += 1
        if k[self.i] != ")":
            self.fused_constraint(schema)
            while k[self.i] == "," and k[self.i + 1] != ")":
                self.i += 1
                self.fused_constraint(schema)
            if k[self.i] == ",":
                self.i += 1
        self.expect(")")

    def fused_constraint(self, schema: dict) -> None:
        k = self.k
        i = self.i
        if k[i] != "W" or k[i + 1] != ":":
            raise Unfused
        kind = k[i + 2]
        if kind == "N":
            raw = self.fused_number(i + 2)
        elif kind == "S" or kind == "M":
            raw = self.fused_text(i + 2)
        else:
            raise Unfused
        key = self.v[i]
        if not constraint_fits(key, raw, schema):
            raise Unfused
        add_constraint(schema, key, raw)
        self.i = i + 3

    def fused_number(self, i: int) -> int | float:
        value = number(self.v[i])
        if value is None:
            raise Unfused
        return value

    def fused_text(self, i: int) -> str:
        if self.k[i] == "M":
            return multiline(self.v[i])
        text = plain_string(self.v[i])
        if text is None:
            raise Unfused
        return text
