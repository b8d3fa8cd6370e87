"""Fast path of the parser, part 2: token helpers, values, expressions and schema blocks.

Role:       `ValueParser` walks the token lists from `fastlex`; `fastparse._Parser` adds the
            declarations on top. Each method builds the node Lark builds for its rule, with the
            span `propagate_positions` gives it (see `fastlex.Node`).
Invariants: raises `Bail` on anything unexpected; nesting deeper than `MAX_NESTING` bails too.
"""
from __future__ import annotations

from .fastlex import COMP_OPS, KEYWORDS, KW_ANY, MAX_NESTING, Bail, Node, Token, lex, node, wrapped


class ValueParser:
    def __init__(self, text: str):
        self.k, self.v, self.s, self.e, self.comments = lex(text)
        self.i = 0
        self.depth = 0

    # -------------------------------------------------------------- tokens
    def take(self, type_: str) -> Token:
        # Speed: builds the leaf as `fastlex.token` does, without that call (one per token).
        i = self.i
        self.i = i + 1
        t = Token(self.v[i])
        t.type = type_
        t.start_pos = self.s[i]
        t.end_pos = self.e[i]
        return t

    def expect(self, kind: str) -> int:
        """Consume punctuation (dropped from the tree); returns its end."""
        i = self.i
        if self.k[i] != kind:
            raise Bail
        self.i = i + 1
        return self.e[i]

    def word(self) -> str | None:
        i = self.i
        return self.v[i] if self.k[i] == "W" else None

    def keyword(self, w: str) -> int:
        i = self.i
        if self.k[i] != "W" or self.v[i] != w:
            raise Bail
        self.i = i + 1
        return self.e[i]

    def name(self, pure: bool = True) -> Token:
        """A NAME; a reserved word is a NAME only in a state that accepts no keyword (`pure`)."""
        i = self.i
        if self.k[i] != "W" or (not pure and self.v[i] in KEYWORDS):
            raise Bail
        return self.take("NAME")

    def seg(self) -> Token:
        """`NAME | _kw` (a path segment, map key or field name)."""
        i = self.i
        if self.k[i] != "W":
            raise Bail
        w = self.v[i]
        if w in KW_ANY:
            return self.take(w.upper())
        return self.take("NAME")

    def after_open(self) -> bool:
        """Right after `{` or `,` the LALR state accepts a name and no other keyword."""
        return self.k[self.i - 1] in ("{", ",")

    def comma(self, end: int) -> int:
        i = self.i
        if self.k[i] == ",":
            self.i = i + 1
            return self.e[i]
        return end

    def label(self) -> Token | None:
        k = self.k[self.i]
        return self.take("STRING") if k == "S" else self.take("MLSTRING") if k == "M" else None

    def string(self) -> Token:
        """The grammar's `_string`: a `"..."` or a `\"\"\"...\"\"\"` string."""
        lab = self.label()
        if lab is None:
            raise Bail
        return lab

    # -------------------------------------------------------------- schema blocks
    def schema_block(self) -> Node:
        start = self.expect("{") - 1
        items = []
        while self.k[self.i] != "}":
            if self.k[self.i] == "...":
                s, e = self.s[self.i], self.e[self.i]
                self.i += 1
                items.append(node("rest", [], s, e))
            else:
                items.append(self.field())
            if self.k[self.i] == ",":
                self.i += 1
        return node("schema_block", items, start, self.expect("}"))

    def field(self) -> Node:
        # `field_name: NAME | _kw | "steps"`: `steps` is a keyword outside `_kw`, its own token.
        # The other keywords outside `_kw` (`note`, `fails`, `outcome`, `trace`) are NAMEs here,
        # after a default value too: no LALR state where a field name may come next accepts
        # them (tests/test_fastparse.py::test_keyword_field_names_after_a_default, every way a
        # default can end)
        key = self.take("STEPS") if self.k[self.i] == "W" and self.v[self.i] == "steps" else self.seg()
        children = [node("field_name", [key], key.start_pos, key.end_pos)]
        if self.k[self.i] == "?":
            children.append(self.take("OPTIONAL"))
        self.expect(":")
        t = self.stype()
        children.append(t)
        end = t.ce
        if self.k[self.i] == "(":
            c = self.constraints()
            children.append(c)
            end = c.ce
        if self.k[self.i] == "=":
            s = self.s[self.i]
            self.i += 1
            value = self.operand()
            end = value.ce
            children.append(node("default", [value], s, end))
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return node("field", children, key.start_pos, end)

    def stype(self) -> Node:
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Bail
        t = self.stype_()
        self.depth = depth - 1
        return t

    def stype_(self) -> Node:
        i = self.i
        k = self.k[i]
        if k == "W":
            w = self.v[i]
            if w == "null" and self.k[i + 1] != "|":
                self.i += 1
                return node("type_null", [], self.s[i], self.e[i])
            if w not in ("true", "false", "null"):
                n = self.take("NAME")
                return node("type_name", [n], n.start_pos, n.end_pos)
        elif k == "[":
            self.i += 1
            inner = self.stype()
            parts = [inner, self.constraints()] if self.k[self.i] == "(" else [inner]
            return node("type_list", parts, self.s[i], self.expect("]"))
        elif k == "{":
            block = self.schema_block()
            return node("type_object", [block], self.s[i], block.ce)
        lits = [self.type_lit()]
        while self.k[self.i] == "|":
            self.i += 1
            lits.append(self.type_lit())
        return node("literal_union", lits, self.s[i], lits[-1].ce)

    def type_lit(self) -> Node:
        i = self.i
        k = self.k[i]
        if k == "S":
            t = self.take("STRING")
        elif k == "M":
            t = self.take("MLSTRING")
        elif k == "N":
            t = self.take("NUMBER")
        elif k == "W" and self.v[i] in ("true", "false", "null"):
            t = self.take(self.v[i].upper())
        else:
            raise Bail
        return node("type_lit", [t], t.start_pos, t.end_pos)

    def constraints(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        items = []
        if self.k[self.i] != ")":
            items.append(self.constraint())
            while self.k[self.i] == "," and self.k[self.i + 1] != ")":
                self.i += 1
                items.append(self.constraint())
            self.comma(0)
        return node("constraints", items, start, self.expect(")"))

    def constraint(self) -> Node:
        n = self.name()
        self.expect(":")
        value = self.operand()
        return node("constraint", [n, value], n.start_pos, value.ce)

    # -------------------------------------------------------------- expressions
    def expr(self):
        """An expression: `or` over `and_expr`."""
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Bail
        # Speed: the `or` level lives here and comparisons in `not_expr`, two calls fewer for
        # each expression (most are one value).
        first = self.and_expr()
        if self.k[self.i] == "W" and self.v[self.i] == "or":
            items = [first]
            while self.k[self.i] == "W" and self.v[self.i] == "or":
                self.i += 1
                items.append(self.and_expr())
            first = node("or_expr", items, first.cs, items[-1].ce)
        self.depth = depth - 1
        return first

    def and_expr(self):
        first = self.not_expr()
        if self.k[self.i] != "W" or self.v[self.i] != "and":
            return first
        items = [first]
        while self.k[self.i] == "W" and self.v[self.i] == "and":
            self.i += 1
            items.append(self.not_expr())
        return node("and_expr", items, first.cs, items[-1].ce)

    def not_expr(self):
        """`not X`, or a comparison (`cmp`, `in_`, ...), or one operand."""
        i = self.i
        k = self.k[i]
        if k == "W" and self.v[i] == "not":
            self.i += 1
            depth = self.depth = self.depth + 1
            if depth > MAX_NESTING:
                raise Bail
            inner = self.not_expr()
            self.depth = depth - 1
            return node("not_", [inner], self.s[i], inner.ce)
        left = self.operand()
        i = self.i
        k = self.k[i]
        if k in COMP_OPS:
            op = self.take("COMP_OP")
            right = self.operand()
            return node("cmp", [left, op, right], left.cs, right.ce)
        if k != "W":
            return left
        w = self.v[i]
        if w == "in" or w == "not":
            self.i += 1
            if w == "not":
                self.keyword("in")
            if self.k[self.i] != "[":
                raise Bail
            right = self.list_()
            return node("in_" if w == "in" else "not_in", [left, right], left.cs, right.ce)
        if w == "matches":
            self.i += 1
            if self.k[self.i] != "R":
                raise Bail
            rx = self.take("REGEX")
            return node("matches", [left, rx], left.cs, rx.end_pos)
        if w == "mentions":
            self.i += 1
            right = self.list_() if self.k[self.i] == "[" else self.string()
            return node("mentions", [left, right], left.cs, right.ce)
        return left

    def operand(self):
        i = self.i
        k = self.k[i]
        if k == "W":
            w = self.v[i]
            if w == "true" or w == "false" or w == "null":
                self.i += 1
                return node(w + "_lit", [], self.s[i], self.e[i])
            if w == "agent" or w == "returns":
                if self.k[i + 1] != "(":
                    raise Bail
                return self.call(w.upper())
            if w == "tool" or w == "status" or w == "skill":
                return self.path(w.upper())
            if self.k[i + 1] == "(":
                return self.call("NAME")
            return self.path("NAME")
        if k == "S":
            return self.take("STRING")
        if k == "N":
            return self.take("NUMBER")
        if k == "M":
            return self.take("MLSTRING")
        if k == "R":
            return self.take("REGEX")
        if k == "[":
            return self.list_()
        if k == "{":
            return self.map_()
        if k == "(":
            self.i += 1
            inner = self.expr()
            end = self.expect(")")
            return inner if type(inner) is Token else wrapped(inner, self.s[i], end)
        raise Bail

    def path(self, root_type: str) -> Node:
        root = self.take(root_type)
        children = [node("root", [root], root.start_pos, root.end_pos)]
        end = root.end_pos
        k = self.k
        while True:
            i = self.i
            if k[i] == ".":
                self.i += 1
                seg = self.seg()
                children.append(seg)
                end = seg.end_pos
            elif k[i] == "[":
                if k[i + 1] != "N" or k[i + 2] != "]":
                    raise Bail
                self.i += 1
                children.append(self.take("NUMBER"))
                end = self.e[self.i]
                self.i += 1
            else:
                return node("path", children, root.start_pos, end)

    def call(self, callee_type: str) -> Node:
        name = self.take(callee_type)
        children = [node("callee", [name], name.start_pos, name.end_pos)]
        self.i += 1  # "("
        if self.k[self.i] != ")":
            children.append(self.expr())
            while self.k[self.i] == ",":
                self.i += 1
                children.append(self.expr())
        return node("call", children, name.start_pos, self.expect(")"))

    def list_(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        items = []
        if self.k[self.i] != "]":
            items.append(self.expr())
            while self.k[self.i] == "," and self.k[self.i + 1] != "]":
                self.i += 1
                items.append(self.expr())
            self.comma(0)
        return node("list", items, start, self.expect("]"))

    def map_(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        pairs = []
        if self.k[self.i] != "}":
            pairs.append(self.pair())
            while self.k[self.i] == "," and self.k[self.i + 1] != "}":
                self.i += 1
                pairs.append(self.pair())
            self.comma(0)
        return node("map", pairs, start, self.expect("}"))

    def pair(self) -> Node:
        key = self.label() or self.seg()
        self.expect(":")
        value = self.expr()
        return node("pair", [key, value], key.start_pos, value.ce)
