"""Fast path of the parser: one master regex and recursive descent to the same lark tree.

Role:       `parser.parse` tries this first; the Lark grammar (grammar/afp.lark) stays normative.
            Builds exactly the tree Lark builds (rule names, kept tokens and their types, spans
            as `propagate_positions` sets them) so `lower` cannot tell the two apart. This part:
            declarations, graphs, policies, tests; over `fastparse_decl`, `fastparse_route` and
            `fastparse_schema` (which, given the file's name, hand `lower` a plain declaration, a
            graph's route or a tool's schema block already lowered), `fastparse_values` and
            `fastlex`.
Emits:      nothing: on anything it does not fully understand it returns None and the caller
            re-parses with Lark, which also writes the diagnostic.
Invariants: soft keywords: a word is typed as a keyword only where the grammar accepts it; a
            reserved word used as a name is accepted only where the LALR state accepts a name and
            no keyword, otherwise the fast path gives up (Lark decides).
"""
from __future__ import annotations

from .fastlex import ATTR_KEYS, DECLS, KEYWORDS, Bail, EmptyNode, Node, Token, node
from .fastparse_decl import FUSED_KINDS, DeclParser


def parse_tree(text: str, file: str | None = None) -> tuple[Node, list[Token]] | None:
    """(tree, comment tokens), or None when Lark must decide (any error or doubt). Given the
    file's name (its spans' `file`), a tool's schema blocks and a graph's routes may come lowered
    (`fastparse_schema`, `fastparse_route`)."""
    try:
        p = _Parser(text)
        p.file = file
        return p.start()
    except (Bail, IndexError, RecursionError):
        return None


class _Parser(DeclParser):
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
        if not items:
            return node("start", [], 0, 0, EmptyNode), self.comments
        tree = node("start", items, items[0].cs, items[-1].ce)
        return tree, self.comments

    def import_decl(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        path = self.string()
        self.keyword("as")
        alias = self.name()
        return node("import_decl", [path, alias], start, alias.end_pos)

    def decl(self, kind: str) -> Node:
        if self.file is not None and kind in FUSED_KINDS:
            fused = self.lowered_decl(kind)
            if fused is not None:
                return fused
        start = self.s[self.i]
        self.i += 1
        children = [self.name()]
        self.expect("{")
        item = _ITEMS[kind]
        while self.k[self.i] != "}":
            children.append(item(self))
        end = self.expect("}")
        return node(kind + "_decl", children, start, end)

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
        end = self.comma(value.ce)
        return node("attr", [node("attr_key", [key], key.start_pos, key.end_pos), value], key.start_pos, end)

    def next_is(self, kind: str) -> bool:
        return self.k[self.i + 1] == kind

    def tool_item(self) -> Node:
        w = self.word()
        if w in ("input", "output") and self.next_is("{"):
            key = self.take(w.upper())
            block = self.schema_value()
            end = self.comma(block.ce)
            return node("schema_attr", [node("schema_key", [key], key.start_pos, key.end_pos), block],
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
            q = self.qname()
            children = [q]
            end = q.ce
            lab = self.label()
            if lab is not None:
                children.append(lab)
                end = lab.end_pos
            steps.append(node("step", children, q.cs, self.comma(end)))
        end = self.comma(self.expect("}"))
        return node("steps_block", steps, start, end)

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
        return node("attr_graph", [key, value], key.start_pos, self.comma(value.ce))

    def entry(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        children = [q]
        end = q.ce
        if self.word() == "when":
            self.i += 1
            cond = self.expr()
            children.append(cond)
            end = cond.ce
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return node("entry_stmt", children, start, self.comma(end))

    def route(self) -> Node:
        if self.file is not None:
            fused = self.lowered_route()
            if fused is not None:
                return fused
        start = self.s[self.i]
        self.i += 1
        src = self.qname()
        if self.k[self.i] != "->" and self.k[self.i] != "=>":
            raise Bail
        arrow = self.take("ARROW")
        dst = self.qname()
        children = [src, arrow, dst]
        end = dst.ce
        w = self.word()
        if w == "on":
            s = self.s[self.i]
            self.i += 1
            q = self.qname()
            end = q.ce
            children.append(node("route_on", [q], s, end))
            w = self.word()
        if w == "status":
            s = self.s[self.i]
            self.i += 1
            status = self.name_list() if self.k[self.i] == "[" else self.name()
            end = status.ce
            children.append(node("route_status", [status], s, end))
            w = self.word()
        if w == "when":
            s = self.s[self.i]
            self.i += 1
            cond = self.expr()
            end = cond.ce
            children.append(node("route_when", [cond], s, end))
        lab = self.label()
        if lab is not None:
            children.append(lab)
            end = lab.end_pos
        return node("route_stmt", children, start, self.comma(end))

    def name_list(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        names = [self.name()]  # `status []` is a syntax error: Lark reports it
        while self.k[self.i] == "," and self.k[self.i + 1] != "]":
            self.i += 1
            names.append(self.name())
        self.comma(0)
        return node("name_list", names, start, self.expect("]"))

    def qname(self, pure: bool = True) -> Node:
        first = self.name(pure)
        if self.k[self.i] == ".":
            self.i += 1
            second = self.name()
            return node("qname", [first, second], first.start_pos, second.end_pos)
        return node("qname", [first], first.start_pos, first.end_pos)

    # -------------------------------------------------------------- policies
    def policy_item(self) -> Node:
        w = self.word()
        if w in ("before", "after") or (w in ("input", "output") and not self.next_is("=")):
            return self.policy_block(w)
        return self.attr_item()

    def policy_block(self, w: str) -> Node:
        mt = self.take(w.upper())
        children = [node("moment", [mt], mt.start_pos, mt.end_pos)]
        if self.k[self.i] == "*":
            children.append(self.take("STAR"))
        elif self.k[self.i] == "W":
            children.append(self.qname())
        self.expect("{")
        while self.k[self.i] != "}":
            children.append(self.rule())
        end = self.comma(self.expect("}"))
        return node("policy_block", children, mt.start_pos, end)

    def rule(self) -> Node:
        w = self.word()
        if w not in ("allow", "deny", "ask"):
            raise Bail
        at = self.take(w.upper())
        self.keyword("when")
        cond = self.expr()
        children = [node("action", [at], at.start_pos, at.end_pos), cond]
        end = cond.ce
        if self.word() == "because":
            self.i += 1
            why = self.string()
            children.append(why)
            end = why.end_pos
        return node("rule", children, at.start_pos, self.comma(end))

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
        text = self.string()
        return node(data, [text], start, text.end_pos)

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
        return node("calls_stmt", calls, start, calls[-1].ce)

    def string_stmt_at(self, data: str, start: int) -> Node:
        self.i += 1
        text = self.string()
        return node(data, [text], start, text.end_pos)

    def scripted_call(self) -> Node:
        q = self.qname()
        if self.k[self.i] == "{":
            m = self.map_()
            return node("scripted_call", [q, m], q.cs, m.ce)
        return node("scripted_call", [q], q.cs, q.ce)

    def tool_stmt(self) -> Node:
        start = self.s[self.i]
        self.i += 1
        q = self.qname()
        w = self.word()
        if w == "returns":
            self.i += 1
            value = self.expr()
            return node("returns_stmt", [q, value], start, value.ce)
        self.keyword("fails")
        msg = self.string()
        return node("fails_stmt", [q, msg], start, msg.end_pos)

    def decide_stmt(self) -> Node:
        dt = self.take(self.v[self.i].upper())
        children = [node("decision", [dt], dt.start_pos, dt.end_pos)]
        end = dt.end_pos
        for clause in ("by", "note"):
            if self.word() == clause:
                stmt = self.string_stmt(clause + "_clause")
                children.append(stmt)
                end = stmt.ce
        return node("decide_stmt", children, dt.start_pos, end)

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
                return node("expect_answer_matches", [rx], start, rx.end_pos)
            self.expect("==")
            text = self.string()
            return node("expect_answer_equals", [text], start, text.end_pos)
        if w == "called":
            q = self.qname()
            if self.k[self.i] != "N":
                raise Bail
            count = self.take("NUMBER")
            return node("expect_called", [q, count], start, count.end_pos)
        if w == "not":
            self.keyword("called")
            q = self.qname()
            return node("expect_not_called", [q], start, q.ce)
        if w == "route":
            src = self.qname()
            if self.k[self.i] != "->" and self.k[self.i] != "=>":
                raise Bail
            arrow = self.take("ARROW")
            dst = self.qname()
            return node("expect_route", [src, arrow, dst], start, dst.ce)
        if w == "cursor":
            q = self.qname()
            return node("expect_cursor", [q], start, q.ce)
        if w == "outcome":
            n = self.name()
            return node("expect_outcome", [n], start, n.end_pos)
        if w == "trace":
            segs = [self.seg()]
            while self.k[self.i] == ".":
                self.i += 1
                segs.append(self.seg())
            dotted = node("dotted", segs, segs[0].start_pos, segs[-1].end_pos)
            return node("expect_trace", [dotted], start, segs[-1].end_pos)
        raise Bail


_ITEMS = {k: _Parser.attr_item for k in ("agent", "steering", "fact", "instruction", "redact")}
_ITEMS.update(tool=_Parser.tool_item, skill=_Parser.skill_item, graph=_Parser.graph_item,
              policy=_Parser.policy_item, test=_Parser.test_item)
_TEST_STMTS = {"user": _Parser.user_stmt, "model": _Parser.model_stmt, "tool": _Parser.tool_stmt,
               "approve": _Parser.decide_stmt, "decline": _Parser.decide_stmt,
               "expect": _Parser.expect_stmt}
