"""`afpc fmt`'s layout: a file's tokens, with the user's line breaks, → the canonical text.

Role:       pure helper of `fmt.format_source`: indentation, spacing within a line, `=`
            alignment and blank lines, as docs/cli.md (`afpc fmt`) states them. It tells a
            keyword from a name by the token's kind (K or W, as the parser read the word), never
            by its spelling: `note` the clause continues a line, `note` the tool does not.
Invariants: emits every token's text unchanged and in order (comments lose trailing blanks
            only); tokens on one line stay on one line, and a line break stays a line break.
"""
from __future__ import annotations

from typing import NamedTuple


class Tok(NamedTuple):
    """One token: its kind (`fastlex.token_kind`), its text, and the line breaks before it."""

    kind: str
    text: str
    breaks: int


OPENERS = {"{": "}", "[": "]", "(": ")"}
CLOSERS = frozenset(OPENERS.values())
_TIGHT_BEFORE = frozenset((",", ":", "?", ")", "]", "."))
_TIGHT_AFTER = frozenset(("(", "[", "."))
# Keywords (kind K: a word the parser read as a keyword, never a name spelt so) that start a line
# continuing the statement above (one more indent): `because "..."` under its rule, `and x`
# under a condition, `on t` under `route a -> b`.
_CONTINUING_WORDS = frozenset(("because", "when", "and", "or", "on", "status", "note", "by", "matches",
                               "mentions", "in"))
# Literals (strings, texts, numbers, regexes) start no statement: one that starts a line, not as
# the next item of a list or map (after `,`), goes on the statement above (a route's label, a
# step's note, a field's description, `model says` / `expect called t` with their values below).
_LITERALS = frozenset(("S", "M", "N", "R"))
_OPERATORS = frozenset(("=", "->", "=>", "==", "!=", "<", "<=", ">", ">=", "|", "."))
# Keywords that, ending a line, are continued by the next one.
_OPEN_ENDS = frozenset(("and", "or", "not", "when", "because", "matches", "mentions", "in",
                        "on", "status", "note", "by"))
BLANKS = " \t\f\r\n\ufeff"  # (the language's blanks: a comment's trailing ones are cut, no other)


class Line(NamedTuple):
    toks: list[Tok]
    blank_before: bool
    level: int


def layout(toks: list[Tok]) -> str:
    """The canonical text of `toks` (a file's tokens, comments included)."""
    lines = _levelled(_split(toks))
    texts = [_spaced(line.toks) for line in lines]
    _align(lines, texts)
    out: list[str] = []
    for i, (line, text) in enumerate(zip(lines, texts)):
        if i and line.blank_before and not _opens(lines[i - 1]) and line.toks[0].kind not in CLOSERS:
            out.append("")
        out.append("  " * line.level + text)
    return "\n".join(out) + "\n" if out else ""


def _split(toks: list[Tok]) -> list[tuple[list[Tok], bool]]:
    """The logical lines: runs of tokens with no line break between them (a multi-line token
    stays within its line), each with whether a blank line stood before it."""
    lines: list[tuple[list[Tok], bool]] = []
    for t in toks:
        if t.breaks or not lines:
            lines.append(([t], t.breaks > 1))
        else:
            lines[-1][0].append(t)
    return lines


def _levelled(lines: list[tuple[list[Tok], bool]]) -> list[Line]:
    """Each line with its indentation level: one more than the line that opened the innermost
    bracket still open; a line starting with closing brackets stands at the level of the line
    that opened the last of them; a continuation line one more than the statement's, and so
    do the comment-only lines just above it (they stand inside the continued statement)."""
    stack: list[int] = []  # the level of the line that opened each open bracket
    heads: list[Tok] = []  # and that line's first token
    out: list[Line] = []
    code: list[Tok] = []  # the last line that holds more than a comment
    comments: list[int] = []  # the comment-only lines since that line (indexes into `out`)
    for toks, blank in lines:
        level = stack[-1] + 1 if stack else 0
        lead = 0
        while lead < len(toks) and toks[lead].kind in CLOSERS and stack:
            level = stack.pop()
            heads.pop()
            lead += 1
        in_test = bool(heads) and heads[-1].kind == "K" and heads[-1].text == "test"
        if not lead and code and (_continues(code, toks) or in_test and _next_call(code, toks)):
            level += 1
            for i in comments:  # (comments inside a continued statement stand with its lines)
                out[i] = out[i]._replace(level=level)
        if toks[0].kind != "#":
            code, comments = toks, []
        else:
            comments.append(len(out))
        for t in toks[lead:]:
            if t.kind in OPENERS:
                stack.append(level)
                heads.append(toks[0])
            elif t.kind in CLOSERS and stack:
                stack.pop()
                heads.pop()
        out.append(Line(toks, blank, level))
    return out


def _next_call(prev: list[Tok], toks: list[Tok]) -> bool:
    """Whether `toks`, a line of a `test` body, is the next call of `model calls A { … },` on
    the line `prev`: a name after a line ending in `,` (a step's or attribute's `,` is followed
    by no name in a test body; an attribute's name by `=`)."""
    last = _last_code(prev)
    return last is not None and last.kind == "," and toks[0].kind == "W" \
        and (len(toks) == 1 or toks[1].kind != "=")


def _continues(prev: list[Tok], toks: list[Tok]) -> bool:
    """Whether the line `toks` continues the statement of the line `prev` (not inside a bracket
    the previous line opened: that content is indented by its bracket)."""
    first = toks[0]
    if first.kind == "#":
        return False
    last = _last_code(prev)
    if last is None or last.kind in OPENERS:
        return False
    starts = first.kind in _OPERATORS or (first.kind == "K" and first.text in _CONTINUING_WORDS) \
        or (first.kind in _LITERALS and last.kind != ",")
    return starts or last.kind in _OPERATORS or (last.kind == "K" and last.text in _OPEN_ENDS)


def _last_code(toks: list[Tok]) -> Tok | None:
    code = [t for t in toks if t.kind != "#"]
    return code[-1] if code else None


def _opens(line: Line) -> bool:
    last = _last_code(line.toks)
    return last is not None and last.kind in OPENERS


def _spaced(toks: list[Tok]) -> str:
    parts = [_text(toks[0])]
    for i in range(1, len(toks)):
        parts.append(_gap(toks[i - 1], toks[i]))
        parts.append(_text(toks[i]))
    return "".join(parts)


def _text(t: Tok) -> str:
    if t.kind == "#":
        return t.text.rstrip(BLANKS)
    if t.kind == "M":
        return t.text.replace("\r\n", "\n").replace("\r", "\n")
    return t.text


def _gap(a: Tok, b: Tok) -> str:
    """The blanks between the tokens `a` and `b` on one line."""
    if b.kind == "#":
        return "  "
    if a.kind == "{":
        return "" if b.kind == "}" else " "
    if b.kind == "}":
        return " "
    if b.kind in _TIGHT_BEFORE or a.kind in _TIGHT_AFTER:
        return ""
    if b.kind == "[" and a.kind in ("]", ")") or b.kind == "(" and a.kind == "]":
        return ""  # an index of an index or call, `a[0][1]`; a list type's constraints, `[string](max_items: 5)`
    if b.kind in ("(", "[") and a.kind == "W":
        return ""  # a name's call or index: `returns({`, `status[0]`, `args.items[0]`
    return " "  # after a keyword, `(` or `[` starts an operand: `not (`, `in [`, `status [`


def _align(lines: list[Line], texts: list[str]) -> None:
    """Aligns the `=` of runs of consecutive `NAME = value` lines at one level (in place)."""
    run: list[int] = []
    for i, line in enumerate(lines):
        if run and (line.blank_before or line.level != lines[run[-1]].level
                    or _continued(lines[run[-1]])):
            _pad(run, lines, texts)
            run = []
        if _assignment(line):
            run.append(i)
        else:
            _pad(run, lines, texts)
            run = []
    _pad(run, lines, texts)


def _assignment(line: Line) -> bool:
    toks = line.toks
    return len(toks) > 2 and toks[0].kind == "W" and toks[1].kind == "="


def _continued(line: Line) -> bool:
    """Whether the line's value goes on below it: a bracket left open, or a multi-line token."""
    depth = 0
    for t in line.toks:
        depth += (t.kind in OPENERS) - (t.kind in CLOSERS)
        if t.kind == "M" and ("\n" in t.text or "\r" in t.text):
            return True
    return depth > 0


def _pad(run: list[int], lines: list[Line], texts: list[str]) -> None:
    width = max((len(lines[i].toks[0].text) for i in run), default=0)
    for i in run:
        name = lines[i].toks[0].text
        texts[i] = name.ljust(width) + texts[i][len(name):]
