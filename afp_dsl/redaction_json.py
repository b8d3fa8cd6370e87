"""Values under redacted keys inside JSON *text* (a tool result written as `json.dumps(...)`).

Role:       `key_spans(text, rule_of)` finds, in a text that opens with a JSON object or array,
            the span of every value under a key `rule_of` selects, with its JSON path, so that
            `Redactor.scrub_json_keys` replaces exactly those values and keeps the rest of the
            text as it was written (spacing, order, anything after the JSON value). Split from
            `redaction`.
Invariants: pure; the text is parsed as `json.loads` parses it (NaN and infinities allowed);
            text that is not JSON from its first value on gives no spans (nothing is guessed);
            a value under a selected key is one span however long or nested (it is replaced
            whole, as `Redactor.scrub` replaces a structured value), whatever its length.
"""
from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Any, Callable

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")

# (start, end, rule, path): path in `Redactor`'s lazy form, (parent, key or index, is_index)
KeySpan = tuple[int, int, Any, Any]


def opens_json(text: Any) -> bool:
    """Does `text` open, after JSON spaces, with an object or array (the quick test)?"""
    return (type(text) is str and text[:1] in "{[ \t\n\r"
            and text.lstrip(" \t\n\r")[:1] in ("{", "["))


def opening_value(text: str) -> Any:
    """The JSON value that opens `text` (after JSON spaces), whatever follows it (a step's note,
    a remark the tool added); a `ValueError` when the text is not JSON there."""
    return _DECODER.raw_decode(text, _SPACE.match(text).end())[0]


def key_spans(text: str, rule_of: Callable[[str], Any], at: Any = "$") -> list[KeySpan]:
    """The spans of the values under selected keys (`rule_of(key)` not None: the rule) in the
    JSON value that opens `text`; [] when there is none or the text is not JSON there."""
    out: list[KeySpan] = []
    try:
        _value(text, _SPACE.match(text).end(), rule_of, at, out)
    except (ValueError, IndexError, RecursionError):
        return []  # (not JSON: a guard reads it as a string, so does redaction)
    return out


def _value(text: str, i: int, rule_of: Callable, path: Any, out: list) -> int:
    c = text[i:i + 1]
    if c == "{":
        return _object(text, _SPACE.match(text, i + 1).end(), rule_of, path, out)
    if c == "[":
        return _array(text, _SPACE.match(text, i + 1).end(), rule_of, path, out)
    return _DECODER.raw_decode(text, i)[1]


def _object(text: str, i: int, rule_of: Callable, path: Any, out: list) -> int:
    if text[i:i + 1] == "}":
        return i + 1
    while True:
        if text[i:i + 1] != '"':
            raise ValueError("a key expected")
        key, i = scanstring(text, i + 1)
        i = _SPACE.match(text, i).end()
        if text[i:i + 1] != ":":
            raise ValueError("':' expected")
        i = _SPACE.match(text, i + 1).end()
        rule, sub = rule_of(key), (path, key, False)
        if rule is not None:
            end = _DECODER.raw_decode(text, i)[1]
            out.append((i, end, rule, sub))
        else:
            end = _value(text, i, rule_of, sub, out)
        i = _SPACE.match(text, end).end()
        if text[i:i + 1] == "}":
            return i + 1
        if text[i:i + 1] != ",":
            raise ValueError("',' or '}' expected")
        i = _SPACE.match(text, i + 1).end()


def _array(text: str, i: int, rule_of: Callable, path: Any, out: list) -> int:
    if text[i:i + 1] == "]":
        return i + 1
    n = 0
    while True:
        i = _SPACE.match(text, _value(text, i, rule_of, (path, n, True), out)).end()
        if text[i:i + 1] == "]":
            return i + 1
        if text[i:i + 1] != ",":
            raise ValueError("',' or ']' expected")
        i, n = _SPACE.match(text, i + 1).end(), n + 1
