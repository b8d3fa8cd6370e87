"""Source text and spans: character offsets, turned into 1-based line:column only on demand.

Role:       the bottom layer; every stage that points at source uses `Span`.
Invariants: spans are half-open `[start, end)` character offsets; a zero-width span at EOF is valid.
"""
from __future__ import annotations

import bisect
import re
from itertools import accumulate
from typing import NamedTuple

from .record import Record, record

_LINE_END = re.compile(r"\r\n|\r|\n")


class _SpanFields(NamedTuple):
    file: str
    start: int
    end: int


class Span(_SpanFields):
    """A half-open range of character offsets in one file (the file's display key).

    A named tuple rather than an attrs class: the front end makes one per token and node, and a
    tuple is several times cheaper to build (see bench/compile.py). An end before the start is
    clamped to the start."""

    __slots__ = ()

    def __new__(cls, file: str, start: int, end: int) -> "Span":
        return _new_tuple(cls, (file, start, end if end >= start else start))

    def __repr__(self) -> str:
        return f"Span(file={self.file!r}, start={self.start!r}, end={self.end!r})"


_new_tuple = tuple.__new__


def line_starts_of(text: str) -> tuple[int, ...]:
    """Offsets at which each line begins. CRLF and lone CR both end a line."""
    if "\r" not in text:
        # Speed: with `\n` the only line end, each start is the running sum of the lengths of the
        # lines before it (a tenth of the cost of a match object per line).
        return (0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1]))
    return (0, *(m.end() for m in _LINE_END.finditer(text)))


@record
class SourceFile(Record):
    """One file's text plus its line table.

    Example:
        >>> SourceFile.of("a.afp", "x\\ny").line_col(2)
        (2, 1)
    """

    name: str
    text: str
    line_starts: tuple[int, ...]

    @classmethod
    def of(cls, name: str, text: str) -> "SourceFile":
        return cls(name, text, line_starts_of(text))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column in code points) of a character offset, clamped to the text."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line + 1, offset - self.line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its line ending."""
        if line < 1 or line > len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")
