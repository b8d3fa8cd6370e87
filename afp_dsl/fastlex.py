"""Fast path of the parser, part 1: the lexer and the tree's leaves and nodes.

Role:       one master regex turns the text into parallel lists (kind, text, start, end); the
            keyword tables say where a word is a keyword (checked against the grammar by
            tests/test_fastparse.py); `Token` and `Node` are shaped like lark's `Token`/`Tree`
            as far as `lower` looks.
Invariants: no lark import (start-up time); a stray character makes the fast path give up.
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
COMP_OPS = frozenset(("==", "!=", "<=", ">=", "<", ">"))

# Keywords usable as map keys, field names and path segments (the grammar's `_kw`).
KW_ANY = frozenset(
    "import as agent tool skill graph fact steering instruction redact policy test entry route on "
    "status when and or not in matches mentions true false null before after input output deny ask "
    "allow because user model calls says returns approve decline by expect called cursor answer".split())
KEYWORDS = KW_ANY | {"steps", "fails", "note", "outcome", "trace"}  # every keyword of the grammar
# The keywords the LALR state right after a qualified name accepts (its lookaheads are merged
# over every place a qname stands); tests/test_fastparse.py checks it against the parse table.
AFTER_QNAME = frozenset("agent approve decline entry expect fact fails graph input instruction model "
                        "on output policy redact returns route skill status steering test tool user "
                        "when".split())
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


class Node:
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
    def meta(self) -> "Node":
        return self

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class EmptyNode(Node):
    """A node without tokens (an empty file): lark leaves its meta empty."""

    __slots__ = ()
    empty = True


_new_str = str.__new__


def outer_start(node) -> int:
    return node.start_pos if type(node) is Token else node.cs


def outer_end(node) -> int:
    return node.end_pos if type(node) is Token else node.ce


def lex(text: str) -> tuple[list[str], list[str], list[int], list[int], list[Token]]:
    """(kinds, texts, starts, ends, comments); the lists end with an end-of-file sentinel `$`."""
    pairs = _LEX.findall(text)
    vals = [tok for _, tok in pairs]
    ends = list(accumulate([len(ws) + len(tok) for ws, tok in pairs]))
    starts = [end - len(tok) for end, tok in zip(ends, vals)]
    kinds = [_KINDS.get(tok) or _FIRST.get(tok[0]) or _kind(tok) for tok in vals]
    comments = []
    if "#" in kinds:
        keep = [j for j, k in enumerate(kinds) if k != "#"]
        comments = [token("COMMENT", vals[j], starts[j], ends[j]) for j, k in enumerate(kinds) if k == "#"]
        kinds, vals = [kinds[j] for j in keep], [vals[j] for j in keep]
        starts, ends = [starts[j] for j in keep], [ends[j] for j in keep]
    end = ends[-1] if ends else 0
    kinds.append("$")
    vals.append("")
    starts.append(end)
    ends.append(end)
    return kinds, vals, starts, ends, comments


def token(type_: str, value: str, start: int, end: int) -> Token:
    t = _new_str(Token, value)
    t.type = type_
    t.value = value
    t.start_pos = start
    t.end_pos = end
    return t
