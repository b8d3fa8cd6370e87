"""Fast path of the parser: one master regex and recursive descent to the same lark tree.

Role:       `parser.parse` tries this first; the Lark grammar (grammar/afp.lark) stays normative.
            Builds exactly the tree Lark builds (rule names, kept tokens and their types, spans
            as `propagate_positions` sets them) so `lower` cannot tell the two apart. This part:
            declarations, graphs, policies, tests; over `fastparse_values` and `fastlex`.
Emits:      nothing: on anything it does not fully understand it returns None and the caller
            re-parses with Lark, which also writes the diagnostic.
Invariants: soft keywords: a word is typed as a keyword only where the grammar accepts it; a
            reserved word used as a name is accepted only where the LALR state accepts a name and
            no keyword, otherwise the fast path gives up (Lark decides).
"""
from __future__ import annotations

from .fastlex import (AFTER_QNAME, ATTR_KEYS, DECLS, KEYWORDS, Bail, EmptyNode, Node, Token, outer_end,
                      outer_start)
from .fastparse_values import ValueParser


def parse_tree(text: str) -> tuple[Node, list[Token]] | None:
    """(tree, comment tokens), or None when Lark must decide (any error or doubt)."""
    try:
        return _Parser(text).start()
    except (Bail, IndexError, RecursionError):
        return None


class _Parser(ValueParser):
    # -------------------------------------------------------------- file and declarations
    def start(self) -> tuple[Node, list[Token]]:
        items = []
        while self.k[self.i] != "$":
            w = self.word()
            if w == "import":
                items.append(self.import_decl())
            elif w in DECLS:
                items.append(self.decl(w))
            else:
                raise Bail
        tree = Node("start", items, outer_start(items[0]), outer_end(items[-1])) if items else EmptyNode("start", [], 0, 0)
        return tree, self.comments

    def import_decl(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        path = self.take("STRING")
        self.keyword("as")
        alias = self.name()
        return Node("import_decl", [path, alias], start, alias.end_pos)

    def decl(self, kind: str) -> Node:
        start = self.s[self.i]
        self.i += 1
        children = [self.name()]
        self.expect("{")
        item = _ITEMS[kind]
        while self.k[self.i] != "}":
            children.append(item(self))
        end = self.expect("}")
        return Node(kind + "_decl", children, start, end)

    def attr_item(self) -> Node:
        w = self.word()
        if w is None:
            raise Bail
        if w in ATTR_KEYS:
            return self.attr(w.upper())
        if w in KEYWORDS:
            raise Bail
        return self.attr("NAME")

    def attr(self, key_type: str) -> Node:
        key = self.take(key_type)
        self.expect("=")
        value = self.expr()
        end = self.comma(outer_end(value))
        return Node("attr", [Node("attr_key", [key], key.start_pos, key.end_pos), value], key.start_pos, end)

    def next_is(self, kind: str) -> bool:
        return self.k[self.i + 1] == kind

    def tool_item(self) -> Node:
        w = self.word()
        if w in ("input", "output") and self.next_is("{"):
            key = self.take(w.upper())
            block = self.schema_block()
            end = self.comma(outer_end(block))
            return Node("schema_attr", [Node("schema_key", [key], key.start_pos, key.end_pos), block],
                         key.start_pos, end)
        return self.attr_item()

    def skill_item(self) -> Node:
        if self.word() != "steps":
            return self.attr_item()
        start = self.s[self.i]
        self.i += 1
        self.expect("{")
        steps = []
        while self.k[self.i] != "}":
            if self.k[self.i - 1] == "W" and self.v[self.i] in AFTER_QNAME:
                raise Bail  # right after a step's name the LALR state takes these as keywords
            q = self.qname()
            children = [q]
            end = outer_end(q)
            lab = self.label()
            if lab is not None:
                children.append(lab)
                end = lab.end_pos
            steps.append(Node("step", children, outer_start(q), self.comma(end)))
        end = self.comma(self.expect("}"))
        return Node("steps_block", steps, start, end)

    def graph_item(self) -> Node:
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
        return Node("attr_graph", [key, value], key.start_pos, self.comma(outer_end(value)))

    def entry(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        children = [q]
        end = outer_end(q)
        if self.word() == "when":
            self.i += 1
            cond = self.expr()
            children.append(cond)
            end = outer_end(cond)
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return Node("entry_stmt", children, start, self.comma(end))

    def route(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        src = self.qname()
        if self.k[self.i] != "->" and self.k[self.i] != "=>":
            raise Bail
        arrow = self.take("ARROW")
        dst = self.qname()
        children = [src, arrow, dst]
        end = outer_end(dst)
        w = self.word()
        if w == "on":
            s = self.s[self.i]
            self.i += 1
            q = self.qname()
            end = outer_end(q)
            children.append(Node("route_on", [q], s, end))
            w = self.word()
        if w == "status":
            s = self.s[self.i]
            self.i += 1
            if self.k[self.i] == "[":
                node = self.name_list()
                end = outer_end(node)
            else:
                node = self.name()
                end = node.end_pos
            children.append(Node("route_status", [node], s, end))
            w = self.word()
        if w == "when":
            s = self.s[self.i]
            self.i += 1
            cond = self.expr()
            end = outer_end(cond)
            children.append(Node("route_when", [cond], s, end))
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return Node("route_stmt", children, start, self.comma(end))

    def name_list(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        names = []
        if self.k[self.i] != "]":
            names.append(self.name())
            while self.k[self.i] == "," and self.k[self.i + 1] != "]":
                self.i += 1
                names.append(self.name())
            self.comma(0)
        return Node("name_list", names, start, self.expect("]"))

    def qname(self, pure: bool = True) -> Node:
        first = self.name(pure)
        if self.k[self.i] == ".":
            self.i += 1
            second = self.name()
            return Node("qname", [first, second], first.start_pos, second.end_pos)
        return Node("qname", [first], first.start_pos, first.end_pos)

    # -------------------------------------------------------------- policies
    def policy_item(self) -> Node:
        w = self.word()
        if w in ("before", "after") or (w in ("input", "output") and not self.next_is("=")):
            return self.policy_block(w)
        return self.attr_item()

    def policy_block(self, w: str) -> Node:
        mt = self.take(w.upper())
        children = [Node("moment", [mt], mt.start_pos, mt.end_pos)]
        if self.k[self.i] == "*":
            children.append(self.take("STAR"))
        elif self.k[self.i] == "W":
            children.append(self.qname())
        self.expect("{")
        while self.k[self.i] != "}":
            children.append(self.rule())
        end = self.comma(self.expect("}"))
        return Node("policy_block", children, mt.start_pos, end)

    def rule(self) -> Node:
        w = self.word()
        if w not in ("allow", "deny", "ask"):
            raise Bail
        at = self.take(w.upper())
        self.keyword("when")
        cond = self.expr()
        children = [Node("action", [at], at.start_pos, at.end_pos), cond]
        end = outer_end(cond)
        if self.word() == "because":
            self.i += 1
            if self.k[self.i] != "S":
                raise Bail
            why = self.take("STRING")
            children.append(why)
            end = why.end_pos
        return Node("rule", children, at.start_pos, self.comma(end))

    # -------------------------------------------------------------- tests
    def test_item(self) -> Node:
        w = self.word()
        if w in ("user", "model", "tool") and self.next_is("="):
            return self.attr(w.upper())
        handler = _TEST_STMTS.get(w)
        return handler(self) if handler is not None else self.attr_item()

    def string_stmt(self, data: str) -> Node:
        start = self.s[self.i]
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        text = self.take("STRING")
        return Node(data, [text], start, text.end_pos)

    def user_stmt(self) -> Node:
        return self.string_stmt("user_stmt")

    def model_stmt(self) -> Node:
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
        return Node("calls_stmt", calls, start, outer_end(calls[-1]))

    def string_stmt_at(self, data: str, start: int) -> Node:
        self.i += 1
        if self.k[self.i] != "S":
            raise Bail
        text = self.take("STRING")
        return Node(data, [text], start, text.end_pos)

    def scripted_call(self) -> Node:
        q = self.qname()
        if self.k[self.i] == "{":
            m = self.map_()
            return Node("scripted_call", [q, m], outer_start(q), outer_end(m))
        return Node("scripted_call", [q], outer_start(q), outer_end(q))

    def tool_stmt(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        w = self.word()
        if w == "returns":
            self.i += 1
            value = self.expr()
            return Node("returns_stmt", [q, value], start, outer_end(value))
        self.keyword("fails")
        if self.k[self.i] != "S":
            raise Bail
        msg = self.take("STRING")
        return Node("fails_stmt", [q, msg], start, msg.end_pos)

    def decide_stmt(self) -> Node:
        dt = self.take(self.v[self.i].upper())
        children = [Node("decision", [dt], dt.start_pos, dt.end_pos)]
        end = dt.end_pos
        for clause in ("by", "note"):
            if self.word() == clause:
                node = self.string_stmt(clause + "_clause")
                children.append(node)
                end = node.ce
        return Node("decide_stmt", children, dt.start_pos, end)

    def expect_stmt(self) -> Node:
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
                return Node("expect_answer_matches", [rx], start, rx.end_pos)
            self.expect("==")
            if self.k[self.i] != "S":
                raise Bail
            text = self.take("STRING")
            return Node("expect_answer_equals", [text], start, text.end_pos)
        if w == "called":
            q = self.qname()
            if self.k[self.i] != "N":
                raise Bail
            count = self.take("NUMBER")
            return Node("expect_called", [q, count], start, count.end_pos)
        if w == "not":
            self.keyword("called")
            q = self.qname()
            return Node("expect_not_called", [q], start, outer_end(q))
        if w == "route":
            src = self.qname()
            if self.k[self.i] != "->" and self.k[self.i] != "=>":
                raise Bail
            arrow = self.take("ARROW")
            dst = self.qname()
            return Node("expect_route", [src, arrow, dst], start, outer_end(dst))
        if w == "cursor":
            q = self.qname()
            return Node("expect_cursor", [q], start, outer_end(q))
        if w == "outcome":
            n = self.name()
            return Node("expect_outcome", [n], start, n.end_pos)
        if w == "trace":
            segs = [self.seg()]
            while self.k[self.i] == ".":
                self.i += 1
                segs.append(self.seg())
            dotted = Node("dotted", segs, segs[0].start_pos, segs[-1].end_pos)
            return Node("expect_trace", [dotted], start, segs[-1].end_pos)
        raise Bail


_ITEMS = {k: _Parser.attr_item for k in ("agent", "steering", "fact", "instruction", "redact")}
_ITEMS.update(tool=_Parser.tool_item, skill=_Parser.skill_item, graph=_Parser.graph_item,
              policy=_Parser.policy_item, test=_Parser.test_item)
_TEST_STMTS = {"user": _Parser.user_stmt, "model": _Parser.model_stmt, "tool": _Parser.tool_stmt,
               "approve": _Parser.decide_stmt, "decline": _Parser.decide_stmt,
               "expect": _Parser.expect_stmt}
