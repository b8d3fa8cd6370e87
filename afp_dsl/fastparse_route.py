"""Fast path of the parser, part 4: a graph's route lowered straight from its tokens.

Role:       `fastparse._Parser.route` asks `RouteParser.lowered_route` first. When the parser
            knows the file's name, a route of plain names whose condition lowering would take
            without a diagnostic becomes a `Lowered` node holding the very `ir.Route` (spans
            included) that `Lowerer.route` would build from its tree, with the same IR
            constructors; no parse tree is made for it, and `lower` takes the route as it is.
Emits:      nothing. Anything it does not handle makes it give up on that route, having consumed
            nothing: the tree is built as before and `Lowerer.route` lowers it (and reports), so
            diagnostics come from one place. It gives up on `=>` (AFP001), a qualified name, a
            label or string with escapes, a number out of range, a path index that is not a whole
            number, a regex that draws AFP004, a map or a call other than `returned(NAME)` /
            `active(NAME)` (what `ValueLowerer.clean_expr` reports), parentheses, and any syntax
            the tree path would not accept.
Invariants: it reads exactly the tokens `_Parser.route` reads, in the same order, with the same
            nesting bound (`MAX_NESTING`, counted the same way); without parentheses every node's
            span runs from its first token's start to its last token's end.
            tests/test_fastparse_route.py compares both paths, spans included.
"""
from __future__ import annotations

from typing import Any

from . import ir
from .fastlex import COMP_OPS, MAX_NESTING, Bail, Lowered, node
from .fastparse_schema import SchemaParser, Unfused
from .literals import REGEX_FLAGS, compile_problem, number
from .lower_values import EXPR_CALLS
from .source import Span

_new_span = tuple.__new__
# Speed: the IR nodes are built by `ir.maker`'s positional builders (fields in declaration
# order), the same objects as the classes' `__init__` builds, at a quarter of the cost.
_ROUTE, _REF, _STATUS = ir.maker(ir.Route), ir.maker(ir.Ref), ir.maker(ir.Status)
_PATH, _LIT, _COMPARE, _CALL = ir.maker(ir.Path), ir.maker(ir.Lit), ir.maker(ir.Compare), ir.maker(ir.Call)
_AND, _OR, _NOT, _LIST, _REGEX = (ir.maker(ir.And), ir.maker(ir.Or), ir.maker(ir.Not), ir.maker(ir.ListExpr),
                                  ir.maker(ir.Regex))
_LITERALS = {"true": True, "false": False, "null": None}
_FLAGS = frozenset(REGEX_FLAGS)
_PATH_CALLS = frozenset(("agent", "returns"))  # callee words that make a value call (`CallV`)


class RouteParser(SchemaParser):
    def lowered_route(self) -> Lowered | None:
        """The route at `self.i` (its `route` word) lowered, or None with nothing consumed."""
        i, depth = self.i, self.depth
        try:
            return self.fused_route()
        except (Unfused, Bail, IndexError):
            self.i, self.depth = i, depth  # (the tree path bails on what is not valid syntax)
            return None

    def span_of(self, first: int, last: int) -> Span:
        return _new_span(Span, (self.file, self.s[first], self.e[last]))

    def fused_route(self) -> Lowered:
        """`route A -> B [on T] [status S | status [S, ...]] [when COND] [LABEL] [,]`."""
        k, v = self.k, self.v
        first = i = self.i
        src = self.fused_ref(i + 1)
        if k[i + 2] != "->":  # `=>` draws AFP001
            raise Unfused
        dst = self.fused_ref(i + 3)
        on, status, when, label = None, (), None, None
        i += 4
        if k[i] == "W" and v[i] == "on":
            on = self.fused_ref(i + 1)
            i += 2
        if k[i] == "W" and v[i] == "status":
            status, i = self.fused_statuses(i + 1)
        if k[i] == "W" and v[i] == "when":
            self.i = i + 1
            when = self.fused_expr()
            i = self.i
        if k[i] == "S" or k[i] == "M":
            label = self.fused_text(i)
            i += 1
        if k[i] == ",":
            i += 1
        self.i = i
        out = node("route_stmt", [], self.s[first], self.e[i - 1], Lowered)
        out.value = _ROUTE(src, dst, on, status, when, label, self.span_of(first, i - 1))
        return out

    def fused_ref(self, i: int) -> ir.Ref:
        if self.k[i] != "W" or self.k[i + 1] == ".":  # a qualified name goes to the tree
            raise Unfused
        return _REF(self.v[i], None, self.span_of(i, i))

    def fused_statuses(self, i: int) -> tuple[tuple[ir.Status, ...], int]:
        """`status NAME` or `status [NAME, ...]` from token `i`: (statuses, the index after it)."""
        k = self.k
        if k[i] != "[":
            return (self.fused_status(i),), i + 1
        names = [self.fused_status(i + 1)]
        i += 2
        while k[i] == "," and k[i + 1] != "]":
            names.append(self.fused_status(i + 1))
            i += 2
        if k[i] == ",":
            i += 1
        if k[i] != "]":
            raise Unfused
        return tuple(names), i + 1

    def fused_status(self, i: int) -> ir.Status:
        if self.k[i] != "W":
            raise Unfused
        return _STATUS(self.v[i], self.span_of(i, i))

    # -------------------------------------------------------------- conditions
    def fused_expr(self) -> Any:
        """As `ValueParser.expr` + `ValueLowerer.expr`: `or` over `and`."""
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Unfused
        first_i = self.i
        first = self.fused_and()
        k, v = self.k, self.v
        if k[self.i] == "W" and v[self.i] == "or":
            items = [first]
            while k[self.i] == "W" and v[self.i] == "or":
                self.i += 1
                items.append(self.fused_and())
            first = _OR(tuple(items), self.span_of(first_i, self.i - 1))
        self.depth = depth - 1
        return first

    def fused_and(self) -> Any:
        first_i = self.i
        first = self.fused_not()
        k, v = self.k, self.v
        if k[self.i] != "W" or v[self.i] != "and":
            return first
        items = [first]
        while k[self.i] == "W" and v[self.i] == "and":
            self.i += 1
            items.append(self.fused_not())
        return _AND(tuple(items), self.span_of(first_i, self.i - 1))

    def fused_not(self) -> Any:
        """`not X`, a comparison, or one operand (as `ValueParser.not_expr`)."""
        k, v = self.k, self.v
        first = self.i
        if k[first] == "W" and v[first] == "not":
            self.i += 1
            depth = self.depth = self.depth + 1
            if depth > MAX_NESTING:
                raise Unfused
            inner = self.fused_not()
            self.depth = depth - 1
            return _NOT(inner, self.span_of(first, self.i - 1))
        left = self.fused_operand()
        i = self.i
        kind = k[i]
        if kind in COMP_OPS:
            self.i = i + 1
            right = self.fused_operand()
            return _COMPARE(v[i], left, right, self.span_of(first, self.i - 1))
        if kind != "W":
            return left
        w = v[i]
        if w == "in" or w == "not":
            self.i = i + 1
            if w == "not":
                self.keyword("in")
            if k[self.i] != "[":
                raise Unfused
            right = self.fused_list()
            op = "in" if w == "in" else "not in"
        elif w == "matches":
            if k[i + 1] != "R":
                raise Unfused
            right = self.fused_regex(i + 1)
            self.i = i + 2
            op = w
        elif w == "mentions":
            self.i = i + 1
            if k[self.i] == "[":
                right = self.fused_list()
            elif k[self.i] == "S" or k[self.i] == "M":
                right = self.fused_lit(self.i, self.fused_text(self.i))
                self.i += 1
            else:
                raise Unfused
            op = w
        else:
            return left
        return _COMPARE(op, left, right, self.span_of(first, self.i - 1))

    def fused_operand(self) -> Any:
        k, v = self.k, self.v
        i = self.i
        kind = k[i]
        if kind == "W":
            w = v[i]
            if w in _LITERALS:
                self.i = i + 1
                return self.fused_lit(i, _LITERALS[w])
            if w in _PATH_CALLS:
                raise Unfused  # a value call: `clean_expr` reports it
            if k[i + 1] == "(" and w != "tool" and w != "status" and w != "skill":
                return self.fused_call()
            return self.fused_path()
        if kind == "S" or kind == "M":
            value = self.fused_text(i)
        elif kind == "N":
            value = self.fused_number(i)
        elif kind == "R":
            self.i = i + 1
            return self.fused_regex(i)
        elif kind == "[":
            return self.fused_list()
        else:
            raise Unfused  # a map (reported in a condition), parentheses, or not an operand
        self.i = i + 1
        return self.fused_lit(i, value)

    def fused_lit(self, i: int, value: Any) -> ir.Lit:
        return _LIT(value, self.span_of(i, i))

    def fused_path(self) -> ir.Path:
        k, v = self.k, self.v
        first = i = self.i
        segs: list[str | int] = []
        while True:
            if k[i + 1] == ".":
                if k[i + 2] != "W":
                    raise Unfused
                segs.append(v[i + 2])
                i += 2
            elif k[i + 1] == "[":
                if k[i + 2] != "N" or k[i + 3] != "]":
                    raise Unfused
                index = number(v[i + 2])
                if type(index) is not int or index < 0:  # AFP001 / AFP008
                    raise Unfused
                segs.append(index)
                i += 3
            else:
                break
        self.i = i + 1
        return _PATH(v[first], tuple(segs), self.span_of(first, i), self.span_of(first, first))

    def fused_call(self) -> ir.Call:
        """`returned(NAME)` / `active(NAME)` (or `alias.NAME`); any other call is reported."""
        first = self.i
        func = self.v[first]
        if func not in EXPR_CALLS:
            raise Unfused
        self.i = first + 2
        arg = self.fused_expr()
        if (type(arg) is not ir.Path or len(arg.segments) > 1 or self.k[self.i] != ")"
                or (arg.segments and type(arg.segments[0]) is not str)):
            raise Unfused
        self.i += 1
        ref = _REF(arg.segments[0], arg.root, arg.span) if arg.segments else _REF(arg.root, None, arg.span)
        return _CALL(func, ref, self.span_of(first, self.i - 1))

    def fused_list(self) -> ir.ListExpr:
        k = self.k
        first = self.i
        self.i += 1
        items = []
        if k[self.i] != "]":
            items.append(self.fused_expr())
            while k[self.i] == "," and k[self.i + 1] != "]":
                self.i += 1
                items.append(self.fused_expr())
            if k[self.i] == ",":
                self.i += 1
        if k[self.i] != "]":
            raise Unfused
        self.i += 1
        return _LIST(tuple(items), self.span_of(first, self.i - 1))

    def fused_regex(self, i: int) -> ir.Regex:
        """A regex token, when `ValueLowerer.regex` would report nothing about it."""
        text = self.v[i]
        end = text.rindex("/")
        pattern, flags = text[1:end], text[end + 1:]
        if (not _FLAGS.issuperset(flags) or len(set(flags)) != len(flags)
                or compile_problem(pattern, flags) is not None):
            raise Unfused
        return _REGEX(pattern, "".join(sorted(flags)), self.span_of(i, i))
