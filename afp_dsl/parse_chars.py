"""Lark's lexical errors → one diagnostic: a character no token can start with, named with the fix.

Role:       `parse_errors`' path for `UnexpectedCharacters` (imported only there): an unclosed
            string (quoted or triple-quoted), a bad escape, a number run into a word, a `/`
            that starts no regex (unterminated, `//` or `/*` written as a comment, a class
            left open past the closing `/`), and stray characters of other languages (`&&`,
            `!`, `'`, `;`).
Emits:      AFP001 syntax-error, AFP002 unterminated-string, AFP004 invalid-regex (a class left
            open), AFP005 invalid-string.
Invariants: never raises; reads only the source text and the error's position.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .codes import diag
from .diagnostics import Diagnostic
from .fastlex import REGEX
from .literals import REGEX_FLAGS, compile_problem
from .source import SourceFile, Span

if TYPE_CHECKING:
    from lark.exceptions import UnexpectedCharacters


def bad_character(src: SourceFile, e: UnexpectedCharacters) -> Diagnostic:
    pos = e.pos_in_stream
    text = src.text
    ch = text[pos] if pos < len(text) else ""
    span = Span(src.name, pos, pos + 1)
    if ch == '"' and _empty_string_before(e, pos):
        pos -= 2  # the lexer took `""` as an empty string before the third quote
    if text.startswith('"""', pos):
        return unclosed_triple(src, pos)
    if ch == '"':
        return _bad_string(src, pos)
    glued = _GLUED.match(text, pos)
    if glued:  # (NUMBER refuses a letter right after it)
        word = glued.group()
        return diag("AFP001", f"`{word[:40]}` is neither a number nor a name",
                    Span(src.name, pos, glued.end()), "a number runs into a word",
                    help="a name starts with a letter or `_`; to write a number and then a word, "
                         "put a space or a line break between them")
    if ch == "/":
        return _bad_slash(src, pos)
    hints = {"&": "write `and` instead of `&&`", "|": "write `or` instead of `||`",
             "!": "write `not` instead of `!`", "'": "strings use double quotes: `\"...\"`",
             ";": "no semicolons are needed: statements end by themselves"}
    shown = repr(ch)[1:-1] if ch and not ch.isprintable() else ch
    return diag("AFP001", f"unexpected character `{shown}`", span, "not valid here",
                help=hints.get(ch) or _unicode_hint(ch))


def _unicode_hint(ch: str) -> str | None:
    """Help for a character beyond ASCII outside strings and comments."""
    if not ch or ch.isascii():
        return None
    if ch in "\u201c\u201d\u201e\u2018\u2019":
        return 'strings use straight double quotes: `"..."`'
    import unicodedata
    plain = unicodedata.normalize("NFKC", ch)
    if plain != ch and plain.isascii() and plain.strip() and plain.isprintable():  # (`＝`, `（`)
        return f"write the plain `{plain}`"
    if ch.isalnum() or ch == "\u00b7":
        return "names use ASCII letters, digits and `_` only (they are also what the model sees)"
    if ch.isspace() or not ch.isprintable():
        return "an invisible or non-breaking space: replace it with a plain space"
    return None


def _bad_slash(src: SourceFile, pos: int) -> Diagnostic:
    """A `/` that starts no regex literal here: `//` or `/*` (a comment in another language),
    a regex not closed on its line, or one where no value can stand."""
    text = src.text
    after = text[pos + 1:pos + 2]
    if after in ("/", "*"):
        return diag("AFP001", f"unexpected `/{after}`", Span(src.name, pos, pos + 2),
                    f"not a comment, and a regex cannot start with `{after}`",
                    help="comments start with `#` and run to the end of the line; " + (
                        "a regex cannot be empty" if after == "/" else "a regex writes a leading `*` as `\\*`"))
    if _REGEX.match(text, pos) is None:
        unclosed = _unclosed_class(src, pos)
        if unclosed is not None:
            return unclosed
        return diag("AFP001", "unterminated regex", Span(src.name, pos, pos + 1),
                    "this regex is never closed",
                    help="close it with `/` on the same line (a regex stays on one line); write a "
                         "`/` inside it as `\\/`")
    return diag("AFP001", "a regex cannot stand here", Span(src.name, pos, pos + 1), "unexpected regex",
                help="a regex literal `/pattern/flags` stands after `matches`, in a redact rule's "
                     "`patterns` and in `expect answer matches`")


def _unclosed_class(src: SourceFile, pos: int) -> Diagnostic | None:
    """AFP004 for `/sk-[a-z{20,}/`: the `[` is never closed, so the class runs past the `/` meant
    to end the regex. Read as if `/` always ended it, the pattern does not compile: that is the
    fault to report, at that literal."""
    m = _CLASSLESS.match(src.text, pos)
    if m is None:
        return None
    text = m.group()
    end = text.rindex("/")
    problem = compile_problem(text[1:end], "".join(f for f in text[end + 1:] if f in REGEX_FLAGS))
    if problem is None:
        return None
    return diag("AFP004", f"invalid regex: {problem}", Span(src.name, pos, m.end()), "does not compile",
                notes=("a `/` inside a character class `[...]` is text, so a class left open runs "
                       "past the `/` meant to end the regex",),
                help="regexes use Python `re` syntax")


_REGEX = re.compile(REGEX)
_CLASSLESS = re.compile(r"/(?![/*])(?:[^/\\\n\r]|\\[^\n\r])+/[A-Za-z]*")  # (`/` always ends it)
_GLUED = re.compile(r"-?[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[A-Za-z_][A-Za-z0-9_]*")


def unclosed_triple(src: SourceFile, pos: int) -> Diagnostic:
    return diag("AFP002", "unterminated triple-quoted string", Span(src.name, pos, pos + 3),
                "this string is never closed", help='close it with `"""`')


def _empty_string_before(e: UnexpectedCharacters, pos: int) -> bool:
    """Whether the token just before `pos` is an empty string `""`, so a triple quote opens
    there; not when it is a closed triple-quoted string (its closing quotes followed by a
    fourth `"`, which is a string of its own)."""
    last = (getattr(e, "token_history", None) or [None])[-1]
    return last is not None and last.type == "STRING" and str(last) == '""' and last.end_pos == pos


def _bad_string(src: SourceFile, pos: int) -> Diagnostic:
    line_end = len(src.text)
    for stop in ("\n", "\r"):
        i = src.text.find(stop, pos)
        if i != -1:
            line_end = min(line_end, i)
    seg = src.text[pos:line_end]
    if len(seg) > 1 and _closes(seg):
        return diag("AFP005", "invalid string literal", Span(src.name, pos, line_end),
                    "bad escape or control character",
                    help="strings use JSON escapes; write a backslash as `\\\\`")
    return diag("AFP002", "unterminated string", Span(src.name, pos, pos + 1),
                "this string is never closed",
                help='close it with `"` on the same line, or use `"""` for text over several lines')


def _closes(seg: str) -> bool:
    i = 1
    while i < len(seg):
        if seg[i] == "\\":
            i += 2
            continue
        if seg[i] == '"':
            return True
        i += 1
    return False
