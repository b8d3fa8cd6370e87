"""`afpc fmt`'s layout: a file's tokens, with the user's line breaks, → the canonical text.

Role:       pure helper of `fmt.format_source`: indentation, spacing within a line, `=`
            alignment and blank lines, as docs/cli.md (`afpc fmt`) states them.
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
# Words after which `(` or `[` starts an operand (`not (a or b)`, `in ["x"]`), not a call's
# arguments or an index.
_OPERATOR_WORDS = frozenset(("not", "and", "or", "when", "in", "because", "mentions", "matches"))
# Words that are a statement's clause after a name (`tool t returns (1)`, `on t status [failure]`)
# and a callee or path root elsewhere (`returns({...})`, `status[0]`).
_CLAUSE_WORDS = frozenset(("returns", "status"))
# A line starting so continues the statement above (one more indent): `because "..."` under its
# rule, `and x` under a condition, `-> b` under `route a`.
_CONTINUING_WORDS = frozenset(("because", "when", "and", "or", "on", "status", "note", "by", "matches",
                               "mentions", "in"))
_OPERATORS = frozenset(("=", "->", "=>", "==", "!=", "<", "<=", ">", ">=", "|", "."))
# A line ending so is continued by the next one.
_OPEN_ENDS = _OPERATORS | {"and", "or", "not", "when", "because", "matches", "mentions", "in"}


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
    that opened the last of them; a continuation line one more than the statement's."""
    stack: list[int] = []  # the level of the line that opened each open bracket
    out: list[Line] = []
    code: list[Tok] = []  # the last line that holds more than a comment
    for toks, blank in lines:
        level = stack[-1] + 1 if stack else 0
        lead = 0
        while lead < len(toks) and toks[lead].kind in CLOSERS and stack:
            level = stack.pop()
            lead += 1
        if not lead and code and _continues(code, toks):
            level += 1
        if toks[0].kind != "#":
            code = toks
        for t in toks[lead:]:
            if t.kind in OPENERS:
                stack.append(level)
            elif t.kind in CLOSERS and stack:
                stack.pop()
        out.append(Line(toks, blank, level))
    return out


def _continues(prev: list[Tok], toks: list[Tok]) -> bool:
    """Whether the line `toks` continues the statement of the line `prev` (not inside a bracket
    the previous line opened: that content is indented by its bracket)."""
    first = toks[0]
    if first.kind == "#":
        return False
    last = _last_code(prev)
    if last is None or last.kind in OPENERS:
        return False
    attribute = len(toks) > 1 and toks[1].kind in ("=", ":", "?")  # `when = ...`, `{ on: 1 }`
    starts = first.kind in _OPERATORS or (first.kind == "W" and first.text in _CONTINUING_WORDS
                                           and not attribute)
    return starts or (last.kind in _OPERATORS or last.text in _OPEN_ENDS and last.kind == "W")


def _last_code(toks: list[Tok]) -> Tok | None:
    code = [t for t in toks if t.kind != "#"]
    return code[-1] if code else None


def _opens(line: Line) -> bool:
    last = _last_code(line.toks)
    return last is not None and last.kind in OPENERS


def _spaced(toks: list[Tok]) -> str:
    parts = [_text(toks[0])]
    for i in range(1, len(toks)):
        parts.append(_gap(toks[i - 1], toks[i], toks[i - 2] if i > 1 else None))
        parts.append(_text(toks[i]))
    return "".join(parts)


def _text(t: Tok) -> str:
    if t.kind == "#":
        return t.text.rstrip()
    if t.kind == "M":
        return t.text.replace("\r\n", "\n").replace("\r", "\n")
    return t.text


def _gap(a: Tok, b: Tok, before: Tok | None) -> str:
    """The blanks between the tokens `a` and `b` on one line (`before` precedes `a`)."""
    if b.kind == "#":
        return "  "
    if a.kind == "{":
        return "" if b.kind == "}" else " "
    if b.kind == "}":
        return " "
    if b.kind in _TIGHT_BEFORE or a.kind in _TIGHT_AFTER:
        return ""
    if b.kind == "[" and a.kind in ("]", ")"):
        return ""
    if b.kind in ("(", "[") and a.kind == "W":
        return " " if _operator(a, b, before) else ""
    return " "


def _operator(word: Tok, bracket: Tok, before: Tok | None) -> bool:
    """Whether `word` is followed by an operand (`not (`, `in [`, `tool t returns (`), rather
    than by a call's arguments or an index (`returns(`, `args.items[`)."""
    if before is not None and before.kind == ".":
        return False  # a path's segment: `a.in[0]`
    if word.text in _OPERATOR_WORDS:
        return True
    named_before = before is not None and before.kind == "W" and before.text not in _OPERATOR_WORDS
    return word.text in _CLAUSE_WORDS and named_before


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
