"""`mentions`: a case-insensitive whole-word keyword match (language.md §6).

Role:       pure; `keywords_matcher(keywords).search(text)` is the test behind `mentions`, for
            `evaluate`, the compiled policy path and (through `evaluate`) the checker.
Invariants: a keyword is mentioned when it occurs with no word character on either side. A word
            character is a letter, a digit or `_` (`\\w`), or a combining mark (category M: the
            `◌́` of `é` written as two characters, the vowel signs of Indic scripts), which
            belongs to the letter before it: `ह` is not mentioned in "हिंदी". Text and keywords
            are compared in NFC, so `café` is mentioned in "café" however either is encoded;
            case-insensitive by simple case folding, and by full case folding (`straße` in
            "STRASSE") when either side is not ASCII.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any


class Keywords:
    """The compiled test of one keyword list; `search(text)` is a match or None."""

    __slots__ = ("_any", "_plain", "_folded", "_ascii")

    def __init__(self, keywords: tuple[str, ...]):
        nfc = tuple(_nfc(k) for k in keywords)
        self._any = _regex(nfc)  # (ASCII text: the regex's own backtracking finds the first)
        # one pattern per keyword: a match refused for a mark glued to it must not hide a
        # shorter keyword at the same place (`a` in "a-b◌̃", where `a-b` is refused)
        self._plain = tuple(_regex((k,)) for k in dict.fromkeys(nfc))
        self._folded = tuple(_regex((k,)) for k in dict.fromkeys(k.casefold() for k in nfc))
        self._ascii = all(k.isascii() for k in keywords)

    def search(self, text: str) -> Any:
        if self._ascii and text.isascii():  # (no marks, NFC and full folding change nothing)
            return self._any.search(text)
        text = _nfc(text)
        found = _first(_whole(rx, text) for rx in self._plain)
        if found is None and not (self._ascii and text.isascii()):
            folded = text.casefold()
            found = _first(_whole(rx, folded) for rx in self._folded)
        return found


@functools.lru_cache(maxsize=512)
def keywords_matcher(keywords: tuple[str, ...]) -> Keywords:
    """The `mentions` test of `keywords` (non-empty strings), built once per list."""
    return Keywords(keywords)


def _regex(keywords: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _first(matches: Any) -> Any:
    """The earliest of some matches (None when there is none)."""
    best = None
    for m in matches:
        if m is not None and (best is None or m.start() < best.start()):
            best = m
    return best


def _whole(rx: re.Pattern[str], text: str) -> Any:
    """The first match with no combining mark glued to either end (`\\w` does not count marks)."""
    m = rx.search(text)
    while m is not None and (_mark(text, m.end()) or _mark(text, m.start() - 1)):
        m = rx.search(text, m.start() + 1)
    return m


def _mark(text: str, i: int) -> bool:
    return 0 <= i < len(text) and not text[i].isascii() and unicodedata.category(text[i])[0] == "M"


def _nfc(text: str) -> str:
    return text if text.isascii() or unicodedata.is_normalized("NFC", text) else \
        unicodedata.normalize("NFC", text)
