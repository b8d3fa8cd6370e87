"""The contents of `file(...)` as the front end takes them: which paths it may read, JSON parsed
as the language reads it, and what to say when it is not JSON.

Role:       helpers of `attributes` (the `file(...)` converters); pure functions of text.
Invariants: JSON is read as the language's numbers (`literals.number`: out of range raises
            `OutOfRange`); `NaN` and `Infinity` are not JSON; a path that leaves the spec's folder
            is never read; nothing here touches the file system.
"""
from __future__ import annotations

import json
import posixpath
from typing import Any

from .literals import number


class Unreadable(str):
    """What a file reader returns for a `file(...)` it cannot read: the reason, as `read_text`
    gives it (`no such file`, `it is a folder`, `it is not UTF-8 text (byte 0)`, too large)."""


class OutOfRange(ValueError):
    """A number in a JSON file that `literals.number` finds out of range (its text)."""


def parse_json(text: str) -> Any:
    """The JSON value of `text`; raises `OutOfRange`, `ValueError` or `RecursionError`."""
    return json.loads(text, parse_int=_json_number, parse_float=_json_number,
                      parse_constant=_not_json)


def json_problem(e: Exception) -> str:
    """What is wrong with a JSON text, and where (`Expecting value at line 2, column 7`)."""
    if isinstance(e, json.JSONDecodeError):
        return f"{e.msg} at line {e.lineno}, column {e.colno}"
    return "it is nested too deeply" if isinstance(e, RecursionError) else str(e)


def json_line(text: str, e: Exception) -> tuple[str, ...]:
    """A note quoting the line where the JSON breaks (80 characters of it around the column)."""
    if not isinstance(e, json.JSONDecodeError):
        return ()
    lines = text.splitlines()
    line = lines[e.lineno - 1] if 0 < e.lineno <= len(lines) else ""
    if len(line) > 80:
        line = line[max(0, e.colno - 40):][:80]
    return (f"line {e.lineno} reads: {line.strip()!r}",) if line.strip() else ()


def leaves_folder(rel: str) -> bool:
    """Whether the `file(...)` path `rel` names something outside the folder of its spec: an
    absolute path (`/etc/x`, `C:/x`, `\\\\host\\x`), or one whose `..` climb above the folder.
    Judged on the text alone: a symbolic link inside the folder is followed where it points."""
    path = rel.replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return True
    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")


def _json_number(text: str) -> int | float:
    value = number(text)
    if value is None:
        raise OutOfRange(text)
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"`{name}` is not a JSON value")
