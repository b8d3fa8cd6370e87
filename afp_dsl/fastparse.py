"""Fast path of the parser: one master regex and recursive descent to the same lark tree.

Role:       `parser.parse` tries this first; the Lark grammar (grammar/afp.lark) stays normative.
            Builds exactly the tree Lark builds (rule names, kept tokens and their types, spans
            as `propagate_positions` sets them) so `lower` cannot tell the two apart.
Emits:      nothing: on anything it does not fully understand it returns None and the caller
            re-parses with Lark, which also writes the diagnostic.
Invariants: soft keywords: a word is typed as a keyword only where the grammar accepts it; a
            reserved word used as a name is accepted only where the LALR state accepts a name and
            no keyword, otherwise the fast path gives up (Lark decides).
"""
from __future__ import annotations

import re
from itertools import accumulate


# One match = leading whitespace + one token (or one stray character: the fast path gives up).
_LEX = re.compile(
    r'([ \t\f\r\n\ufeff]*)(#[^\n\r]*|"""[\s\S]*?"""|"(?:[^"\\\n\r]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*'
    r'|->|=>|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?'
    r'|/(?![/*])(?:[^/\\\n\r]|\\[^\n\r])+/[imsx]*|==|!=|<=|>=|\.\.\.|[^ \t\f\r\n\ufeff])')
_PUNCT = frozenset("{ } ( ) [ ] , : = . ? * | < > == != <= >= ... -> =>".split())
_KINDS = {p: p for p in _PUNCT}  # a token's kind: the punctuation itself, or W, S, M, N, R, #
_FIRST = {c: "W" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"}
_FIRST.update({c: "N" for c in "0123456789"}, **{"#": "#"})


def _kind(tok: str) -> str:
    """Kinds the first character does not decide; `?` (a stray character) makes the parser give up."""
    if tok.startswith('"""'):
        return "M"
    if tok[0] == '"':
        return "S" if len(tok) > 1 else "?"
    if tok[0] == "-" and len(tok) > 1:
        return "N"
    if tok[0] == "/" and len(tok) > 1:
        return "R"
    return "?"
_COMP = frozenset(("==", "!=", "<=", ">=", "<", ">"))

# Keywords usable as map keys, field names and path segments (the grammar's `_kw`).
KW_ANY = frozenset(
    "import as agent tool skill graph fact steering instruction redact policy test entry route on "
    "status when and or not in matches mentions true false null before after input output deny ask "
    "allow because user model calls says returns approve decline by expect called cursor answer".split())
KEYWORDS = KW_ANY | {"steps", "fails", "note", "outcome", "trace"}  # every keyword of the grammar
ATTR_KEYS = frozenset("model graph redact input output agent tool skill when status policy test fact "
                      "steering instruction user".split())
DECLS = frozenset("agent tool skill graph fact steering instruction redact policy test".split())


# Nested expressions/types the fast path takes on. Each level adds at most 5 tree levels below
# at most 4 for the declaration, so its trees stay under `lower.MAX_DEPTH` (200); deeper input
# goes to Lark, and `lower` reports it.
MAX_NESTING = 38


class Bail(Exception):
    """The fast path cannot decide; Lark re-parses."""


class Token(str):
    """A leaf, shaped like lark's `Token` as far as `lower` looks: the text, `type` and offsets."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str(self)!r})"


class _Node:
    """A node, shaped like lark's `Tree` as far as `lower` looks (`data`, `children`, `meta`). It is
    its own `meta`: the span `propagate_positions` would set, plus the span of its outermost
    container (wider when the node came out of `( ... )`), which a parent's span is built from."""

    __slots__ = ("data", "children", "start_pos", "end_pos", "cs", "ce")
    empty = False  # lark's Meta.empty
    nesting_checked = True  # see MAX_NESTING: `lower` need not walk the tree for its depth

    def __init__(self, data: str, children: list, start: int, end: int):
        self.data = data
        self.children = children
        self.start_pos = self.cs = start
        self.end_pos = self.ce = end

    @property
    def meta(self) -> "_Node":
        return self

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class _EmptyNode(_Node):
    """A node without tokens (an empty file): lark leaves its meta empty."""

    __slots__ = ()
    empty = True


_new_str = str.__new__


def _cs(node) -> int:
    return node.start_pos if type(node) is Token else node.cs


def _ce(node) -> int:
    return node.end_pos if type(node) is Token else node.ce


def parse_tree(text: str) -> tuple[_Node, list[Token]] | None:
    """(tree, comment tokens), or None when Lark must decide (any error or doubt)."""
    try:
        return _Parser(text).start()
    except (Bail, IndexError, RecursionError):
        return None


class _Parser:
    def __init__(self, text: str):
        pairs = _LEX.findall(text)
        vals = [tok for _, tok in pairs]
        ends = list(accumulate([len(ws) + len(tok) for ws, tok in pairs]))
        starts = [end - len(tok) for end, tok in zip(ends, vals)]
        kinds = [_KINDS.get(tok) or _FIRST.get(tok[0]) or _kind(tok) for tok in vals]
        self.comments = []
        if "#" in kinds:
            keep = [j for j, k in enumerate(kinds) if k != "#"]
            self.comments = [self.token("COMMENT", vals[j], starts[j], ends[j])
                             for j, k in enumerate(kinds) if k == "#"]
            kinds, vals = [kinds[j] for j in keep], [vals[j] for j in keep]
            starts, ends = [starts[j] for j in keep], [ends[j] for j in keep]
        end = ends[-1] if ends else 0
        kinds.append("$")
        vals.append("")
        starts.append(end)
        ends.append(end)
        self.k, self.v, self.s, self.e = kinds, vals, starts, ends
        self.i = 0
        self.depth = 0

    # -------------------------------------------------------------- tokens
    @staticmethod
    def token(type_: str, value: str, start: int, end: int) -> Token:
        t = _new_str(Token, value)
        t.type = type_
        t.value = value
        t.start_pos = start
        t.end_pos = end
        return t

    def take(self, type_: str) -> Token:
        i = self.i
        self.i = i + 1
        return self.token(type_, self.v[i], self.s[i], self.e[i])

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

    def seg(self, pure: bool = True) -> Token:
        """`NAME | _kw` (a path segment, map key or field name)."""
        i = self.i
        if self.k[i] != "W":
            raise Bail
        w = self.v[i]
        if w in KW_ANY:
            return self.take(w.upper())
        if not pure and w in KEYWORDS:
            raise Bail
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
        return self.take("STRING") if self.k[self.i] == "S" else None

    # -------------------------------------------------------------- file and declarations
    def start(self) -> tuple[_Node, list[Token]]:
        items = []
        while self.k[self.i] != "$":
            w = self.word()
            if w == "import":
                items.append(self.import_decl())
            elif w in DECLS:
                items.append(self.decl(w))
            else:
                raise Bail
        tree = _Node("start", items, _cs(items[0]), _ce(items[-1])) if items else _EmptyNode("start", [], 0, 0)
        return tree, self.comments

    def import_decl(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        path = self.take("STRING")
        self.keyword("as")
        alias = self.name()
        return _Node("import_decl", [path, alias], start, alias.end_pos)

    def decl(self, kind: str) -> _Node:
        start = self.s[self.i]
        self.i += 1
        children = [self.name()]
        self.expect("{")
        item = _ITEMS[kind]
        while self.k[self.i] != "}":
            children.append(item(self))
        end = self.expect("}")
        return _Node(kind + "_decl", children, start, end)

    def attr_item(self) -> _Node:
        w = self.word()
        if w is None:
            raise Bail
        if w in ATTR_KEYS:
            return self.attr(w.upper())
        if w in KEYWORDS:
            raise Bail
        return self.attr("NAME")

    def attr(self, key_type: str) -> _Node:
        key = self.take(key_type)
        self.expect("=")
        value = self.expr()
        end = self.comma(_ce(value))
        return _Node("attr", [_Node("attr_key", [key], key.start_pos, key.end_pos), value], key.start_pos, end)

    def next_is(self, kind: str) -> bool:
        return self.k[self.i + 1] == kind

    def tool_item(self) -> _Node:
        w = self.word()
        if w in ("input", "output") and self.next_is("{"):
            key = self.take(w.upper())
            block = self.schema_block()
            end = self.comma(_ce(block))
            return _Node("schema_attr", [_Node("schema_key", [key], key.start_pos, key.end_pos), block],
                         key.start_pos, end)
        return self.attr_item()

    def skill_item(self) -> _Node:
        if self.word() != "steps":
            return self.attr_item()
        start = self.s[self.i]
        self.i += 1
        self.expect("{")
        steps = []
        while self.k[self.i] != "}":
            q = self.qname(pure=self.after_open())
            children = [q]
            end = _ce(q)
            lab = self.label()
            if lab is not None:
                children.append(lab)
                end = lab.end_pos
            steps.append(_Node("step", children, _cs(q), self.comma(end)))
        end = self.comma(self.expect("}"))
        return _Node("steps_block", steps, start, end)

    def graph_item(self) -> _Node:
        w = self.word()
        if w == "entry":
            return self.entry()
        if w == "route":
            return self.route()
        if w is None or w in KEYWORDS:
            raise Bail
        key = self.take("NAME")
        self.expect("=")
        value = self.expr()
        return _Node("attr_graph", [key, value], key.start_pos, self.comma(_ce(value)))

    def entry(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        children = [q]
        end = _ce(q)
        if self.word() == "when":
            self.i += 1
            cond = self.expr()
            children.append(cond)
            end = _ce(cond)
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return _Node("entry_stmt", children, start, self.comma(end))

    def route(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        src = self.qname()
        if self.k[self.i] != "->" and self.k[self.i] != "=>":
            raise Bail
        arrow = self.take("ARROW")
        dst = self.qname()
        children = [src, arrow, dst]
        end = _ce(dst)
        w = self.word()
        if w == "on":
            s = self.s[self.i]
            self.i += 1
            q = self.qname()
            end = _ce(q)
            children.append(_Node("route_on", [q], s, end))
            w = self.word()
        if w == "status":
            s = self.s[self.i]
            self.i += 1
            if self.k[self.i] == "[":
                node = self.name_list()
                end = _ce(node)
            else:
                node = self.name()
                end = node.end_pos
            children.append(_Node("route_status", [node], s, end))
            w = self.word()
        if w == "when":
            s = self.s[self.i]
            self.i += 1
            cond = self.expr()
            end = _ce(cond)
            children.append(_Node("route_when", [cond], s, end))
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return _Node("route_stmt", children, start, self.comma(end))

    def name_list(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        names = []
        if self.k[self.i] != "]":
            names.append(self.name())
            while self.k[self.i] == "," and self.k[self.i + 1] != "]":
                self.i += 1
                names.append(self.name())
            self.comma(0)
        return _Node("name_list", names, start, self.expect("]"))

    def qname(self, pure: bool = True) -> _Node:
        first = self.name(pure)
        if self.k[self.i] == ".":
            self.i += 1
            second = self.name()
            return _Node("qname", [first, second], first.start_pos, second.end_pos)
        return _Node("qname", [first], first.start_pos, first.end_pos)

    # -------------------------------------------------------------- policies
    def policy_item(self) -> _Node:
        w = self.word()
        if w in ("before", "after") or (w in ("input", "output") and not self.next_is("=")):
            return self.policy_block(w)
        return self.attr_item()

    def policy_block(self, w: str) -> _Node:
        mt = self.take(w.upper())
        children = [_Node("moment", [mt], mt.start_pos, mt.end_pos)]
        if self.k[self.i] == "*":
            children.append(self.take("STAR"))
        elif self.k[self.i] == "W":
            children.append(self.qname())
        self.expect("{")
        while self.k[self.i] != "}":
            children.append(self.rule())
        end = self.comma(self.expect("}"))
        return _Node("policy_block", children, mt.start_pos, end)

    def rule(self) -> _Node:
        w = self.word()
        if w not in ("allow", "deny", "ask"):
            raise Bail
        at = self.take(w.upper())
        self.keyword("when")
        cond = self.expr()
        children = [_Node("action", [at], at.start_pos, at.end_pos), cond]
        end = _ce(cond)
        if self.word() == "because":
            self.i += 1
            if self.k[self.i] != "S":
                raise Bail
            why = self.take("STRING")
            children.append(why)
            end = why.end_pos
        return _Node("rule", children, at.start_pos, self.comma(end))

    # -------------------------------------------------------------- tests
    def test_item(self) -> _Node:
        w = self.word()
        if w in ("user", "model", "tool") and self.next_is("="):
            return self.attr(w.upper())
        handler = _TEST_STMTS.get(w)
        return handler(self) if handler is not None else self.attr_item()

    def string_stmt(self, data: str) -> _Node:
        start = self.s[self.i]
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        text = self.take("STRING")
        return _Node(data, [text], start, text.end_pos)

    def user_stmt(self) -> _Node:
        return self.string_stmt("user_stmt")

    def model_stmt(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        w = self.word()
        if w == "says":
            return self.string_stmt_at("says_stmt", start)
        self.keyword("calls")
        calls = [self.scripted_call()]
        while self.k[self.i] == ",":
            self.i += 1
            calls.append(self.scripted_call())
        return _Node("calls_stmt", calls, start, _ce(calls[-1]))

    def string_stmt_at(self, data: str, start: int) -> _Node:
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        text = self.take("STRING")
        return _Node(data, [text], start, text.end_pos)

    def scripted_call(self) -> _Node:
        q = self.qname()
        if self.k[self.i] == "{":
            m = self.map_()
            return _Node("scripted_call", [q, m], _cs(q), _ce(m))
        return _Node("scripted_call", [q], _cs(q), _ce(q))

    def tool_stmt(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        w = self.word()
        if w == "returns":
            self.i += 1
            value = self.expr()
            return _Node("returns_stmt", [q, value], start, _ce(value))
        self.keyword("fails")
        if self.k[self.i] != "S":
            raise Bail
        msg = self.take("STRING")
        return _Node("fails_stmt", [q, msg], start, msg.end_pos)

    def decide_stmt(self) -> _Node:
        dt = self.take(self.v[self.i].upper())
        children = [_Node("decision", [dt], dt.start_pos, dt.end_pos)]
        end = dt.end_pos
        for clause in ("by", "note"):
            if self.word() == clause:
                node = self.string_stmt(clause + "_clause")
                children.append(node)
                end = node.ce
        return _Node("decide_stmt", children, dt.start_pos, end)

    def expect_stmt(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        w = self.word()
        self.i += 1
        if w == "answer":
            if self.word() == "matches":
                self.i += 1
                if self.k[self.i] != "R":
                    raise Bail
                rx = self.take("REGEX")
                return _Node("expect_answer_matches", [rx], start, rx.end_pos)
            self.expect("==")
            if self.k[self.i] != "S":
                raise Bail
            text = self.take("STRING")
            return _Node("expect_answer_equals", [text], start, text.end_pos)
        if w == "called":
            q = self.qname()
            if self.k[self.i] != "N":
                raise Bail
            count = self.take("NUMBER")
            return _Node("expect_called", [q, count], start, count.end_pos)
        if w == "not":
            self.keyword("called")
            q = self.qname()
            return _Node("expect_not_called", [q], start, _ce(q))
        if w == "route":
            src = self.qname()
            if self.k[self.i] != "->" and self.k[self.i] != "=>":
                raise Bail
            arrow = self.take("ARROW")
            dst = self.qname()
            return _Node("expect_route", [src, arrow, dst], start, _ce(dst))
        if w == "cursor":
            q = self.qname()
            return _Node("expect_cursor", [q], start, _ce(q))
        if w == "outcome":
            n = self.name()
            return _Node("expect_outcome", [n], start, n.end_pos)
        if w == "trace":
            segs = [self.seg()]
            while self.k[self.i] == ".":
                self.i += 1
                segs.append(self.seg())
            dotted = _Node("dotted", segs, segs[0].start_pos, segs[-1].end_pos)
            return _Node("expect_trace", [dotted], start, segs[-1].end_pos)
        raise Bail

    # -------------------------------------------------------------- schema blocks
    def schema_block(self) -> _Node:
        start = self.expect("{") - 1
        items = []
        while self.k[self.i] != "}":
            if self.k[self.i] == "...":
                s, e = self.s[self.i], self.e[self.i]
                self.i += 1
                items.append(_Node("rest", [], s, e))
            else:
                items.append(self.field())
            self.comma(0)
        return _Node("schema_block", items, start, self.expect("}"))

    def field(self) -> _Node:
        key = self.seg(pure=self.after_open())
        children = [_Node("field_name", [key], key.start_pos, key.end_pos)]
        if self.k[self.i] == "?":
            children.append(self.take("OPTIONAL"))
        self.expect(":")
        t = self.stype()
        children.append(t)
        end = _ce(t)
        if self.k[self.i] == "(":
            c = self.constraints()
            children.append(c)
            end = _ce(c)
        if self.k[self.i] == "=":
            s = self.s[self.i]
            self.i += 1
            value = self.operand()
            end = _ce(value)
            children.append(_Node("default", [value], s, end))
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return _Node("field", children, key.start_pos, end)

    def stype(self) -> _Node:
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Bail
        node = self.stype_()
        self.depth = depth - 1
        return node

    def stype_(self) -> _Node:
        i = self.i
        k = self.k[i]
        if k == "W":
            w = self.v[i]
            if w == "null":
                self.i += 1
                return _Node("type_null", [], self.s[i], self.e[i])
            if w not in ("true", "false"):
                n = self.take("NAME")
                return _Node("type_name", [n], n.start_pos, n.end_pos)
        elif k == "[":
            self.i += 1
            inner = self.stype()
            return _Node("type_list", [inner], self.s[i], self.expect("]"))
        elif k == "{":
            block = self.schema_block()
            return _Node("type_object", [block], self.s[i], _ce(block))
        lits = [self.type_lit()]
        while self.k[self.i] == "|":
            self.i += 1
            lits.append(self.type_lit())
        return _Node("literal_union", lits, self.s[i], _ce(lits[-1]))

    def type_lit(self) -> _Node:
        i = self.i
        k = self.k[i]
        if k == "S":
            t = self.take("STRING")
        elif k == "N":
            t = self.take("NUMBER")
        elif k == "W" and self.v[i] in ("true", "false"):
            t = self.take(self.v[i].upper())
        else:
            raise Bail
        return _Node("type_lit", [t], t.start_pos, t.end_pos)

    def constraints(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        items = []
        if self.k[self.i] != ")":
            items.append(self.constraint())
            while self.k[self.i] == "," and self.k[self.i + 1] != ")":
                self.i += 1
                items.append(self.constraint())
            self.comma(0)
        return _Node("constraints", items, start, self.expect(")"))

    def constraint(self) -> _Node:
        n = self.name()
        self.expect(":")
        value = self.operand()
        return _Node("constraint", [n, value], n.start_pos, _ce(value))

    # -------------------------------------------------------------- expressions
    def expr(self):
        depth = self.depth = self.depth + 1
        if depth > MAX_NESTING:
            raise Bail
        node = self.or_expr()
        self.depth = depth - 1
        return node

    def or_expr(self):
        first = self.and_expr()
        if self.k[self.i] != "W" or self.v[self.i] != "or":
            return first
        items = [first]
        while self.k[self.i] == "W" and self.v[self.i] == "or":
            self.i += 1
            items.append(self.and_expr())
        return _Node("or_expr", items, _cs(first), _ce(items[-1]))

    def and_expr(self):
        first = self.not_expr()
        if self.k[self.i] != "W" or self.v[self.i] != "and":
            return first
        items = [first]
        while self.k[self.i] == "W" and self.v[self.i] == "and":
            self.i += 1
            items.append(self.not_expr())
        return _Node("and_expr", items, _cs(first), _ce(items[-1]))

    def not_expr(self):
        i = self.i
        if self.k[i] == "W" and self.v[i] == "not":
            self.i += 1
            depth = self.depth = self.depth + 1
            if depth > MAX_NESTING:
                raise Bail
            inner = self.not_expr()
            self.depth = depth - 1
            return _Node("not_", [inner], self.s[i], _ce(inner))
        return self.compare()

    def compare(self):
        left = self.operand()
        i = self.i
        k = self.k[i]
        if k in _COMP:
            op = self.take("COMP_OP")
            right = self.operand()
            return _Node("cmp", [left, op, right], _cs(left), _ce(right))
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
            return _Node("in_" if w == "in" else "not_in", [left, right], _cs(left), _ce(right))
        if w == "matches":
            self.i += 1
            if self.k[self.i] != "R":
                raise Bail
            rx = self.take("REGEX")
            return _Node("matches", [left, rx], _cs(left), rx.end_pos)
        if w == "mentions":
            self.i += 1
            if self.k[self.i] == "S":
                right = self.take("STRING")
            elif self.k[self.i] == "[":
                right = self.list_()
            else:
                raise Bail
            return _Node("mentions", [left, right], _cs(left), _ce(right))
        return left

    def operand(self):
        i = self.i
        k = self.k[i]
        if k == "W":
            w = self.v[i]
            if w == "true" or w == "false" or w == "null":
                self.i += 1
                return _Node(w + "_lit", [], self.s[i], self.e[i])
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
            if type(inner) is not Token:
                inner.cs = self.s[i]
                inner.ce = end
            return inner
        raise Bail

    def path(self, root_type: str) -> _Node:
        root = self.take(root_type)
        children = [_Node("root", [root], root.start_pos, root.end_pos)]
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
                return _Node("path", children, root.start_pos, end)

    def call(self, callee_type: str) -> _Node:
        name = self.take(callee_type)
        children = [_Node("callee", [name], name.start_pos, name.end_pos)]
        self.i += 1  # "("
        if self.k[self.i] != ")":
            children.append(self.expr())
            while self.k[self.i] == ",":
                self.i += 1
                children.append(self.expr())
        return _Node("call", children, name.start_pos, self.expect(")"))

    def list_(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        items = []
        if self.k[self.i] != "]":
            items.append(self.expr())
            while self.k[self.i] == "," and self.k[self.i + 1] != "]":
                self.i += 1
                items.append(self.expr())
            self.comma(0)
        return _Node("list", items, start, self.expect("]"))

    def map_(self) -> _Node:
        start = self.s[self.i]
        self.i += 1
        pairs = []
        if self.k[self.i] != "}":
            pairs.append(self.pair())
            while self.k[self.i] == "," and self.k[self.i + 1] != "}":
                self.i += 1
                pairs.append(self.pair())
            self.comma(0)
        return _Node("map", pairs, start, self.expect("}"))

    def pair(self) -> _Node:
        key = self.take("STRING") if self.k[self.i] == "S" else self.seg()
        self.expect(":")
        value = self.expr()
        return _Node("pair", [key, value], key.start_pos, _ce(value))


_ITEMS = {k: _Parser.attr_item for k in ("agent", "steering", "fact", "instruction", "redact")}
_ITEMS.update(tool=_Parser.tool_item, skill=_Parser.skill_item, graph=_Parser.graph_item,
              policy=_Parser.policy_item, test=_Parser.test_item)
_TEST_STMTS = {"user": _Parser.user_stmt, "model": _Parser.model_stmt, "tool": _Parser.tool_stmt,
               "approve": _Parser.decide_stmt, "decline": _Parser.decide_stmt,
               "expect": _Parser.expect_stmt}
