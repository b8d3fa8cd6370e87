"""Fast path of the parser, part 1: the lexer and the tree's leaves and nodes.

Role:       one master regex turns the text into parallel lists (kind, text, start, end); the
            keyword tables say where a word is a keyword (checked against the grammar by
            tests/test_fastparse.py); `Token` and `Node` are shaped like lark's `Token`/`Tree`
            as far as `lower` looks.
Invariants: no lark import (start-up time); a stray character makes the fast path give up.
"""
from __future__ import annotations

import re
from itertools import accumulate, repeat
from operator import itemgetter, sub

# One match = one token (or one stray character: the fast path gives up). Words, the one-character
# punctuation and strings come first (the most frequent); `"""` must stay before `"`. Speed: every
# alternative starts with a literal character or a character class, which lets the regex engine
# skip it on its first character (an alternative starting with `-?` or a group is entered at every
# token and every blank it tries): so numbers are spelt out by their first character, and the
# operators of one to three characters are each one alternative (`=[=>]?`, `\.(?:\.\.)?`). A
# string is runs of plain characters between escapes (the same strings as `"(?:[^"\\\n\r]|\\.)*"`,
# but a run is one quick repeat instead of one group per character).
#
# A regex literal: `/`, then plain characters, escapes and character classes (a `/` inside
# `[...]` is text, as in JavaScript: `/[^/]+/`; a `[` that is never closed is one plain
# character, so `/a[/` is the pattern `a[`, which the checker reports), `/`, then any letters
# (a flag outside `i m s x` is AFP004 at the literal). The grammar's REGEX is the same regex.
# A `/` that starts no regex is a stray that runs to the end of its line (`/[^\n\r]*`, kind `~`):
# else the scan would retry at each `/` after it, and a line of classes (`/[a/][a/]…` never
# closed) would cost time quadratic in its length.
REGEX = r'/(?![/*])(?:[^/\\\n\r\[]|\\[^\n\r]|\[\^?\]?(?:[^\]\\\n\r\[]|\\[^\n\r])*\]|\[)++/[A-Za-z]*'
_FRACTION = r'(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_])'  # (`8model`: a stray, see NUMBER)
_TOKEN = (r'([A-Za-z_][A-Za-z0-9_]*|[{}()\[\],:?*|]|"""[\s\S]*?"""|"[^"\\\n\r]*(?:\\.[^"\\\n\r]*)*"'
          r'|=[=>]?|\.(?:\.\.)?|[1-9][0-9]*' + _FRACTION + '|0' + _FRACTION + r'|->|-(?:0|[1-9][0-9]*)'
          + _FRACTION + r'|<=?|>=?|!=|#[^\n\r]*|' + REGEX + r'|/[^\n\r]*'
          + r'|-?[0-9][0-9A-Za-z_.]*|[^ \t\f\r\n\ufeff])')  # (that last but one: `8model`, a stray)
_BLANKS = " \t\f\r\n\ufeff"  # what may stand between tokens (anything else is a token or a stray)
# One match = the blanks before a token, and the token. Matches follow each other with no gap (a
# non-blank character always starts a token), so their lengths sum to every token's end.
_PIECE = re.compile(r"[ \t\f\r\n\ufeff]*(?:" + _TOKEN[1:-1] + ")")


def token_pairs() -> re.Pattern[str]:
    """A regex whose `findall` gives (space, token) pairs, for the tests' mutations. Speed:
    compiled on demand (≈ 0.5 ms): the lexer itself scans with `_PIECE`."""
    return re.compile(r'([ \t\f\r\n\ufeff]*)' + _TOKEN)


# A token's kind: the punctuation itself, or W (word), S, M (strings), N, R (regex), # (comment),
# ~ (a stray character: no rule takes it, so the parser gives up there). The first character
# decides it (`_BY_FIRST`, one character per code point below 256), except for the tokens
# `_BY_TEXT` names (operators of two or three characters, and a `"`, `-` or `/` alone, which are
# strays) and for `"""` strings (M, set apart after the fact).
_BY_FIRST = "".join(
    "W" if c.isascii() and (c.isalpha() or c == "_") else "N" if c in "0123456789-" else
    c if c in "{}()[],:?*|#=.<>" else "S" if c == '"' else "R" if c == "/" else "~"
    for c in map(chr, range(256)))
_BY_TEXT = {op: op for op in ("->", "=>", "==", "!=", "<=", ">=", "...")}
_BY_TEXT.update({'"': "~", "-": "~", "/": "~"})

def token_kind(text: str) -> str:
    """The kind `lex` gives the token `text` (one of `token_pairs`' tokens), without bailing: a
    character no rule takes, or a number glued to a word (`8model`), is a stray, `~`."""
    if text.startswith('"""'):
        return "M"
    kind = _BY_TEXT.get(text) or (_BY_FIRST[ord(text[0])] if ord(text[0]) < 256 else "~")
    if kind == "R":
        return "R" if _REGEX.fullmatch(text) else "~"
    return "~" if kind == "N" and not _NUMBER.fullmatch(text) else kind


_FIRST_CHAR = itemgetter(0)
_NUMERIC = re.compile("[-0-9]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_REGEX = re.compile(REGEX)

COMP_OPS = frozenset(("==", "!=", "<=", ">=", "<", ">"))

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
    """A leaf, shaped like lark's `Token` as far as `lower` looks: the text, `type` and offsets.
    `cs`/`ce` read the same offsets: a leaf is its own outermost container (see `Node`), so a
    parent reads either kind of child's outer span as `.cs`/`.ce` without testing which it is."""

    __slots__ = ("type", "start_pos", "end_pos")

    @property
    def value(self) -> str:  # lark's `Token.value`
        return str(self)

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str(self)!r})"


# Speed: `cs`/`ce` are the slots of `start_pos`/`end_pos` under a second name (the same member
# descriptors), so a leaf costs two stores fewer to build and reads them as fast as its own.
Token.cs = Token.start_pos
Token.ce = Token.end_pos


class Node:
    """A node, shaped like lark's `Tree` as far as `lower` looks (`data`, `children`, `meta`). It is
    its own `meta`: the span `propagate_positions` would set, plus the span of its outermost
    container (`cs`/`ce`: the same offsets, read through the slots of `start_pos`/`end_pos` as for
    `Token`, except in a `Wrapped` node, which came out of `( ... )`), which a parent's span is
    built from. Made by `node` (there is no `__init__`)."""

    __slots__ = ("data", "children", "start_pos", "end_pos")
    empty = False  # lark's Meta.empty
    nesting_checked = True  # see MAX_NESTING: `lower` need not walk the tree for its depth

    @property
    def meta(self) -> "Node":
        return self

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


Node.cs = Node.start_pos
Node.ce = Node.end_pos


class Wrapped(Node):
    """A node that came out of `( ... )`: its outermost container, `cs`/`ce`, is wider than it."""

    __slots__ = ("cs", "ce")


def wrapped(inner: Node, start: int, end: int) -> Wrapped:
    """`inner` as the content of parentheses from `start` to `end`."""
    n = Wrapped()
    n.data = inner.data
    n.children = inner.children
    n.start_pos = inner.start_pos
    n.end_pos = inner.end_pos
    n.cs = start
    n.ce = end
    return n


class Lowered(Node):
    """A part the fast parser lowered itself: a tool's schema block (`fastparse_schema`; `value`
    is its `ir.Schema`, which `lower_schema` takes as it is) or a graph's route
    (`fastparse_route`; `value` is its `ir.Route`, which `lower` takes as it is). No children."""

    __slots__ = ("value",)


class EmptyNode(Node):
    """A node without tokens (an empty file): lark leaves its meta empty."""

    __slots__ = ()
    empty = True


def node(data: str, children: list, start: int, end: int, cls: type = Node) -> Node:
    # Speed: calling a class whose `__init__` is Python code costs CPython 3.11 about a quarter
    # more than making the bare object and storing the fields here; the parser makes one per node.
    n = cls()
    n.data = data
    n.children = children
    n.start_pos = start
    n.end_pos = end
    return n


def lex(text: str) -> tuple[list[str], list[str], list[int], list[int], list[Token]]:
    """(kinds, texts, starts, ends, comments); the lists end with an end-of-file sentinel `$`."""
    # Speed: `findall` gives one string per token (its blanks in front), without a Python step
    # per match; the running sum of their lengths is every token's end, summed in C. The scan
    # stops at the last token: blanks at the end would make the search retry at each of them.
    scan_end = len(text.rstrip(_BLANKS))
    pieces = _PIECE.findall(text, 0, scan_end)
    # Memory: one object per distinct token text (a name written fifty times is one string),
    # so the IR's names, references and keys share their strings, and a lookup of one in a
    # table built from another meets the very key (an identity test, no characters read). The
    # blanks are cut off each distinct piece only (most pieces repeat: " =", "\n  tools"), and a
    # token's kind is worked out once per distinct text.
    distinct = list(dict.fromkeys(pieces))
    seen: dict[str, str] = {}
    texts = list(map(str.lstrip, distinct, repeat(_BLANKS)))
    text_of = dict(zip(distinct, map(seen.setdefault, texts, texts)))
    vals = list(map(text_of.__getitem__, pieces))
    ends = list(accumulate(map(len, pieces)))
    del pieces, distinct, texts, text_of
    starts = list(map(sub, ends, map(len, vals)))
    kind_of, firsts = _kinds(list(seen))
    kinds = list(map(kind_of.__getitem__, vals))
    comments = []
    if "#" in firsts:
        keep = [j for j, k in enumerate(kinds) if k != "#"]
        comments = [token("COMMENT", vals[j], starts[j], ends[j]) for j, k in enumerate(kinds) if k == "#"]
        if kinds[-1] == "#":  # (the scan stopped at the last token: a comment there keeps its
            comments[-1] = _to_line_end(text, comments[-1], scan_end)  # trailing blanks, as Lark's)
        kinds, vals = [kinds[j] for j in keep], [vals[j] for j in keep]
        starts, ends = [starts[j] for j in keep], [ends[j] for j in keep]
    end = ends[-1] if ends else 0
    kinds.append("$")
    vals.append("")
    starts.append(end)
    ends.append(end)
    return kinds, vals, starts, ends, comments


def _to_line_end(text: str, comment: Token, end: int) -> Token:
    """The file's last comment, cut at `end` (the last non-blank), as far as its line goes."""
    stop = min((i for i in (text.find("\n", end), text.find("\r", end)) if i >= 0), default=len(text))
    return token("COMMENT", text[comment.start_pos:stop], comment.start_pos, stop)


def _kinds(texts: list[str]) -> tuple[dict[str, str], str]:
    """Each distinct token text's kind, and their first characters. Speed: made in C, without a Python step per token: the
    tokens' first characters translated to their kinds, then corrected by the few token texts
    whose first character does not decide."""
    firsts = "".join(map(_FIRST_CHAR, texts))
    if not firsts.isascii():
        raise Bail  # a stray character (every token of the grammar starts with an ASCII one)
    kinds = dict(zip(texts, map(_BY_TEXT.get, texts, firsts.translate(_BY_FIRST))))
    for m in _NUMERIC.finditer(firsts):  # (few: the distinct numbers)
        if not _NUMBER.fullmatch(texts[m.start()]) and texts[m.start()] not in _BY_TEXT:
            raise Bail  # a number glued to a word (`8model`): Lark reports it
    if '"' in firsts:
        kinds.update((t, "M") for t in texts if t.startswith('"""'))
    if "/" in firsts:  # (a `/` that starts no regex: the rest of its line, a stray)
        kinds.update((t, "~") for t in texts if t[0] == "/" and not _REGEX.fullmatch(t))
    return kinds, firsts


def token(type_: str, value: str, start: int, end: int) -> Token:
    t = Token(value)
    t.type = type_
    t.start_pos = start
    t.end_pos = end
    return t
