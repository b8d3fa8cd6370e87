"""The texts of literals, read without a tree: numbers, plain and `\"\"\"` strings, regex flags.

Role:       shared by `lower_values` (which reports AFP004/AFP008 with them), the fast path
            (`fastparse_*`), `printer` and `spec_files`; split from `lower_values`, so they read a
            literal exactly as lowering does without importing it.
Invariants: pure; `number` answers None for a number out of range, and `compile_problem` the
            reason a pattern does not compile (it never raises for one).
"""
from __future__ import annotations

import json
import math
import os
import re
import sys

from .regex_quiet import compile_quietly


REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def plain_string(raw: str) -> str | None:
    """A `"..."` literal's value when it needs no decoding (no escapes, no control characters:
    what `ValueLowerer.string` returns for it, with no diagnostic), else None."""
    return raw[1:-1] if "\\" not in raw and raw.isprintable() else None


def multiline(raw: str) -> str:
    """A `\"\"\"` literal's text: taken verbatim (no escapes), dedented, blank first/last line dropped.

    Lines end only at `\\n`, `\\r\\n` or `\\r` (both read as `\\n`); other characters
    `str.splitlines` would break at (form feed, U+2028, ...) are text. A line of spaces and tabs
    only is blank: it becomes empty and does not count for the common indentation."""
    lines = raw[3:-3].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and _blank(lines[0]):
        lines = lines[1:]
    if len(lines) > 1 and _blank(lines[-1]):
        lines = lines[:-1]
    lines = ["" if _blank(line) else line for line in lines]
    indents = [line[:len(line) - len(line.lstrip(" \t"))] for line in lines if line]
    cut = len(os.path.commonprefix(indents)) if indents else 0
    return "\n".join(line[cut:] for line in lines)


def _blank(line: str) -> bool:
    return not line.strip(" \t")


MAX_NAME = 64  # the longest identifier (language §2: names are what the model sees)
NUMBER_RANGE = "numbers must fit a 64-bit float (at most about 1.8e308)"
_MAX_DIGITS = len(str(int(sys.float_info.max)))  # 309: a longer integer is beyond any float


def number(text: str) -> int | float | None:
    """A JSON number's value (an int without fraction or exponent), or None when it is out of
    range: beyond a 64-bit float, as `1e999` or an integer of over 309 digits (which `int()`
    would also refuse past 4,300 digits)."""
    digits = text[1:] if text[:1] == "-" else text
    if digits.isascii() and digits.isdigit():
        if len(digits) > _MAX_DIGITS:
            return None
        value = int(text)  # what json.loads returns for an integer literal, without the decoder
        return value if abs(value) <= sys.float_info.max else None
    value = json.loads(text)
    return value if math.isfinite(value) else None


def shown_number(text: str) -> str:
    """A number's text in backticks for a message; a long one shortened, with its length."""
    return f"`{text}`" if len(text) <= 24 else f"`{text[:10]}…{text[-4:]}` ({len(text)} characters)"


def compile_problem(pattern: str, flags: str) -> str | None:
    """None when `pattern` compiles with `flags`, else the reason."""
    bits = 0
    for f in flags:
        bits |= REGEX_FLAGS.get(f, 0)
    try:
        compile_quietly(pattern, bits)
    except (re.error, OverflowError, RecursionError, ValueError) as e:
        return str(e)
    return None
