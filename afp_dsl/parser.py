"""Text → parse tree, or one friendly syntax diagnostic.

Role:       loads lark only when the fast path (`fastparse`) gives up: then it loads
            `grammar/afp.lark` once and re-parses; a syntax error is explained by `parse_errors`.
Emits:      AFP006 invalid-input (a NUL byte), AFP007 (nested too deeply), AFP009 bidi-control
            (warnings); through `parse_errors`, AFP001 syntax-error, AFP002 unterminated-string
            and AFP104.
Invariants: never raises on any input; at most one syntax diagnostic per file; comments are
            collected for the formatter; lark's tables are cached only in a folder no other user
            may write (`cache_file`).
"""
from __future__ import annotations

import functools
import os
import re
import stat
import sys
import threading

from typing import TYPE_CHECKING

from . import ir, resources
from .codes import diag
from .diagnostics import Diagnostic
from .fastlex import Node
from .fastparse import parse_tree
from .record import Record, record
from .source import SourceFile, Span

if TYPE_CHECKING:
    import lark

DECL_KEYWORDS = ("agent", "tool", "skill", "graph", "fact", "steering", "instruction", "redact",
                 "policy", "test")

# What a terminal is called in a message (anonymous punctuation is named by its text).
FRIENDLY = {
    "NAME": "a name", "STRING": "a string", "MLSTRING": "a string", "NUMBER": "a number",
    "REGEX": "a regex", "COMP_OP": "a comparison operator", "ARROW": "`->`", "_COMMA": "`,`",
    "$END": "the end of the file", "STAR": "`*`",
}


@record
class Parsed(Record):
    tree: lark.Tree | None
    diagnostics: tuple[Diagnostic, ...]
    comments: tuple[ir.Comment, ...]


class _Collector:
    """Per-parse state fed by lexer callbacks (comments, open braces); guarded by a lock."""

    def __init__(self) -> None:
        self.comments: list[lark.Token] = []
        self.open_braces: list[lark.Token] = []

    def comment(self, tok: lark.Token) -> lark.Token:
        self.comments.append(tok)
        return tok

    def lbrace(self, tok: lark.Token) -> lark.Token:
        self.open_braces.append(tok)
        return tok

    def rbrace(self, tok: lark.Token) -> lark.Token:
        if self.open_braces:
            self.open_braces.pop()
        return tok


_LOCK = threading.Lock()
_STATE = {"c": _Collector()}


def _cb(method: str):
    return lambda tok: getattr(_STATE["c"], method)(tok)


class _WholeWords:
    """A pass-through post-lexer whose `always_accept` puts NAME in every state of the contextual
    lexer, so a word is always lexed whole (spec §2: an identifier is `[A-Za-z_][A-Za-z0-9_]*`).
    Without it, where the grammar accepts only keywords, a keyword matched the start of a longer
    word: `expect outcomeanswered` read as `expect outcome answered`, `asr` as `as r`. A word
    that is a keyword the state accepts still lexes as that keyword."""

    always_accept = ("NAME",)

    def process(self, stream):
        return stream


@functools.cache
def _parser() -> lark.Lark:
    import lark
    return lark.Lark(
        resources.grammar_text(), parser="lalr", strict=False, propagate_positions=True,
        maybe_placeholders=False, cache=cache_file(), postlex=_WholeWords(),
        lexer_callbacks={"COMMENT": _cb("comment"), "LBRACE": _cb("lbrace"), "RBRACE": _cb("rbrace")},
    )


def cache_file() -> str | bool:
    """Where lark keeps its parse tables between runs: `afp/lark-<python>.cache` in the user's
    cache folder ($XDG_CACHE_HOME, else ~/.cache), a folder only this user may write; False (no
    cache, each process builds the tables) when there is none. Not lark's own default (`cache=
    True`): a name anyone can predict in the shared temporary folder, whose contents lark
    unpickles, so another local user could plant a file there and run code as this one."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "afp")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except (OSError, ValueError):
        return False
    owner = getattr(os, "getuid", lambda: info.st_uid)()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != owner or info.st_mode & 0o022:
        return False
    return os.path.join(folder, f"lark-{sys.version_info[0]}.{sys.version_info[1]}.cache")


def terminal_patterns() -> dict[str, str]:
    """Terminal name → its literal text, for anonymous string terminals."""
    out = {}
    for t in _parser().terminals:
        if t.pattern.type == "str":
            out[t.name] = t.pattern.value
    return out


def describe(term: str) -> str:
    """A terminal's name as words: `a name`, `` `{` ``, `` `model` ``."""
    if term in FRIENDLY:
        return FRIENDLY[term]
    lit = terminal_patterns().get(term)
    return f"`{lit}`" if lit is not None else term.lower()


# Bidirectional embedding, override and isolate controls: the "Trojan Source" characters.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_BIDI_NAMES = {0x202A: "LEFT-TO-RIGHT EMBEDDING", 0x202B: "RIGHT-TO-LEFT EMBEDDING",
               0x202C: "POP DIRECTIONAL FORMATTING", 0x202D: "LEFT-TO-RIGHT OVERRIDE",
               0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x2066: "LEFT-TO-RIGHT ISOLATE",
               0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE",
               0x2069: "POP DIRECTIONAL ISOLATE"}


def bidi_warnings(src: SourceFile) -> tuple[Diagnostic, ...]:
    """AFP009 for each bidirectional control character in the text (none in ASCII text: the
    usual case costs one `isascii`)."""
    text = src.text
    if text.isascii():
        return ()
    out = []
    for m in _BIDI.finditer(text):
        code = ord(m.group())
        out.append(diag("AFP009", f"invisible character U+{code:04X} ({_BIDI_NAMES[code]})",
                        Span(src.name, m.start(), m.end()), "reorders how the text around it is shown",
                        help=f"delete it; in a string that needs it, write the escape `\\u{code:04x}`"))
    return tuple(out)


def parse(src: SourceFile) -> Parsed:
    """Parse one file. Returns the tree, or None with exactly one syntax diagnostic; either way
    with an AFP009 warning per bidirectional control character (`bidi_warnings`).

    The hand-written fast path (`fastparse`) builds the same tree as Lark; whenever it is in
    doubt (including every syntax error) Lark parses the file and reports."""
    if "\x00" in src.text:
        at = src.text.index("\x00")
        d = diag("AFP006", "the file contains a NUL byte; is it a binary file?",
                 Span(src.name, at, at + 1), "NUL byte here",
                 help="a spec must be UTF-8 text")
        return Parsed(None, (d,), ())
    fast = parse_tree(src.text, src.name)
    if fast is not None:
        tree, comment_toks = fast
        return Parsed(tree, bidi_warnings(src), tuple(ir.Comment(text=str(t), span=Span(src.name, t.start_pos, t.end_pos))
                                      for t in comment_toks))
    from lark.exceptions import UnexpectedInput
    with _LOCK:
        _STATE["c"] = collector = _Collector()
        try:
            tree = _parser().parse(src.text)
            err = None
        except UnexpectedInput as e:
            tree, err = None, e
        except RecursionError:  # pragma: no cover - lark's LALR parser is iterative
            tree, err = None, None
    comments = tuple(ir.Comment(text=str(t), span=Span(src.name, t.start_pos, t.end_pos))
                     for t in collector.comments)
    if tree is not None:
        return Parsed(tree, bidi_warnings(src), comments)
    from .parse_errors import syntax_diagnostic
    d = syntax_diagnostic(src, err, collector) if err is not None else diag(
        "AFP007", "the file is nested too deeply to parse", Span(src.name, 0, 0))
    return Parsed(None, (d,) + bidi_warnings(src), comments)


# Rules whose words stand in a name's place: a reserved word there is a name (docs/language.md,
# "keywords are soft"), `status[0]`, `returns({...})`, `{ on: 1 }`, `when = ...`, `a.in`.
_NAME_PLACES = frozenset(("root", "callee", "attr_key", "field_name", "path", "dotted", "pair"))


def name_offsets(text: str) -> frozenset[int] | None:
    """Where the words that Lark's parser reads as names start in `text`: its NAME tokens, and
    the reserved words standing in a name's place (`_NAME_PLACES`). Every other word is a
    keyword. None when Lark does not parse the text. For the formatter, which lays out a keyword
    and a name spelt alike differently (`tool t returns (1)`, `returns(1)`). The fast path's
    plain tree (no file name: nothing comes lowered) is Lark's own tree, so Lark parses only
    when the fast path is in doubt (its contextual lexer compiles a regex per parser state on
    first use, ≈ 70 ms a process)."""
    fast = parse_tree(text)
    if fast is not None:
        return _names_in(fast[0], Node)
    import lark
    with _LOCK:
        _STATE["c"] = _Collector()
        try:
            tree = _parser().parse(text)
        except (lark.exceptions.UnexpectedInput, RecursionError):
            return None
    return _names_in(tree, lark.Tree)


def _names_in(tree, node_type: type) -> frozenset[int]:
    out, todo = set(), [tree]
    while todo:  # (no recursion: a tree may be nested deeper than Python's stack)
        node = todo.pop()
        for child in node.children:
            if isinstance(child, node_type):
                todo.append(child)
            elif child.type == "NAME" or node.data in _NAME_PLACES:
                out.add(child.start_pos)
    return frozenset(out)
