"""`afpc fmt`'s engine: spec text → the same tokens in the canonical layout, comments kept.

Role:       `format_source` (public API, `afp_dsl.format_source`): tells keywords from names
            as the parser reads them (`parser.name_offsets`, off the fast path's tree or Lark's:
            keywords are soft, so spelling cannot), refuses text with no tree with the parser's
            syntax diagnostic (`parser.parse`), splits the rest into tokens with `fastlex`'s
            regex, lays them out with `fmt_layout`, and checks its own work before answering.
Emits:      `CompileError` carrying the parser's diagnostic (AFP001 syntax-error, AFP002, AFP006...);
            `FormatterBug` when the layout would change the tokens (a bug, never a silent change).
Invariants: only blanks change, and line endings inside `\"\"\"` text (read the same); the output
            lexes to the input's tokens; pure (no file access); idempotent.
"""
from __future__ import annotations

import functools
import re

from .diagnostics import CompileError, Severity
from .fastlex import token_kind, token_pairs
from .fmt_layout import BLANKS, Tok, layout

_BLANKS = " \t\f\r\n\ufeff"  # the language's blanks (fastlex: what may stand between tokens)


class FormatterBug(AssertionError):
    """The layout changed the tokens of a file (an afpc bug): the text is left as it was."""


def format_source(text: str, name: str = "<text>") -> str:
    """`text` in the canonical layout (docs/cli.md, `afpc fmt`): same tokens and comments, same
    line breaks, canonical indentation, spacing, `=` alignment and blank lines. Raises
    `CompileError` (with the syntax diagnostic, its spans in the file `name`) when the text does
    not parse, and `TypeError` for an argument that is not a `str`.

    Example:
        >>> format_source('agent a {\\n      model="m"   # the model\\n\\n\\n}')
        'agent a {\\n  model = "m"  # the model\\n}\\n'
    """
    if not isinstance(text, str):
        raise TypeError(f"`format_source` takes the spec's text (a `str`), not {type(text).__name__}")
    text = text.removeprefix("\ufeff")
    from .parser import name_offsets
    names = None if "\x00" in text else name_offsets(text)  # (None: no tree, so no names)
    if names is None:
        _refuse_syntax_errors(text, name)  # (the one parse that writes a syntax diagnostic)
        raise FormatterBug(f"the parser could not read the words of {name}; it was left as it was")
    toks = tokens(text, names)
    out = layout(toks)
    if canonical(tokens(out)) != canonical(toks):
        raise FormatterBug(f"formatting {name} would change its tokens; it was left as it was")
    return out


def _refuse_syntax_errors(text: str, name: str) -> None:
    from .parser import parse
    from .source import SourceFile
    parsed = parse(SourceFile.of(name, text))
    if parsed.tree is None:
        raise CompileError([d for d in parsed.diagnostics if d.severity is Severity.ERROR]
                           or list(parsed.diagnostics))


@functools.cache
def _pairs() -> re.Pattern[str]:
    return token_pairs()


def tokens(text: str, names: frozenset[int] | None = None) -> list[Tok]:
    """Every token of `text`, comments included, with the line breaks before each. With `names`
    (`parser.name_offsets`: where the words read as names start), a word read as a keyword is
    of kind K (a name stays W): the layout tells `note` the clause from `note` the tool by that."""
    end = len(text.rstrip(_BLANKS))  # (the scan stops at the last token, as `fastlex.lex`'s)
    out, at = [], 0
    for blanks, tok in _pairs().findall(text, 0, end):
        at += len(blanks)
        kind = token_kind(tok)
        if kind == "W" and names is not None and at not in names:
            kind = "K"
        out.append(Tok(kind, tok, _breaks(blanks)))
        at += len(tok)
    return out


def _breaks(blanks: str) -> int:
    """Line breaks in `blanks`: `\\n`, `\\r\\n` or `\\r`, as the language counts lines."""
    return blanks.count("\n") + blanks.count("\r") - blanks.count("\r\n")


def canonical(toks: list[Tok]) -> list[tuple[str, str]]:
    """(kind, text) of each token, as the layout may write it (a keyword as a word, W): a comment
    without its trailing blanks, a `\"\"\"` text with its line endings as `\\n` (the language reads them so)."""
    out = []
    for t in toks:
        text = t.text.rstrip(BLANKS) if t.kind == "#" else t.text
        if t.kind == "M":
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        out.append(("W" if t.kind == "K" else t.kind, text))
    return out
