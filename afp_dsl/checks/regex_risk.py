"""Regex cost: which user patterns the checker may run on a string, and why it won't run others.

Role:       pure; read by `atoms`/`solver` (guards), `policies` (AFP403 probes) and `schemas`
            (AFP302 defaults) before running a user pattern at check time, and by `regexes`.
Invariants: judged on the engine's own parse tree; `backtracking_risk` is conservative (a pattern
            that can backtrack exponentially is never called safe, some safe ones are called
            risky); `runnable` is false for every risky pattern and for every text on which the
            estimated backtracking paths exceed `BUDGET`; nothing here runs a user pattern.
"""
from __future__ import annotations

import functools
import math
import re
from typing import Any

try:  # the engine's own parser and compiler (Python 3.11+), or their older names
    from re import _parser as _sre  # type: ignore[attr-defined]
    from re._compiler import compile as _compile  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_parse as _sre  # type: ignore[no-redef]
    from sre_compile import compile as _compile  # type: ignore[no-redef]

from ..evaluate import regex_flags
from ..regex_quiet import parse_quietly

BUDGET = 10_000_000  # estimated matcher paths one check-time search may take
LARGE = 8  # a repeat of more than this many iterations, over an ambiguous body, is risky
_CAP = 1e30
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_SINGLE = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN", "AT", "GROUPREF", "CATEGORY"})
_CLASS = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN"})
_MAXREPEAT = _sre.MAXREPEAT


@functools.lru_cache(maxsize=1024)
def _parse(pattern: str, flags: str) -> Any:
    try:
        return parse_quietly(_sre.parse, pattern, regex_flags(flags))
    except (re.error, OverflowError, RecursionError, ValueError):  # (AFP004 reports it)
        return None


@functools.lru_cache(maxsize=1024)
def backtracking_risk(pattern: str, flags: str = "") -> str | None:
    """Why `pattern` may backtrack exponentially in the text's length, or None.

    Risky: a repeat of more than `LARGE` iterations whose body contains a repeat of varying
    count, or alternatives that can start alike (so one text splits many ways).

    Example:
        >>> backtracking_risk("^(a|aa)+$")
        'a repeated group whose alternatives can match the same text'
        >>> backtracking_risk("^[a-z]+\\\\d*$") is None
        True
    """
    tree = _parse(pattern, flags)
    return None if tree is None else _risk(_items(tree))


def _items(sub: Any) -> list:
    return list(getattr(sub, "data", sub))


def _risk(items: list) -> str | None:
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            _, hi, body = av
            why = _ambiguity(_items(body), wrap=True)
            if why is not None and (hi is _MAXREPEAT or hi > LARGE):
                return f"a repeated group {why}"
        for sub in _children(name, av):
            found = _risk(sub)
            if found is not None:
                return found
    return None


def _ambiguity(items: list, wrap: bool = False) -> str | None:
    """How one text can match `items` in more than one way (None: only one). `wrap`: `items`
    is a repeated body, so its first item also follows its last."""
    for i, (op, av) in enumerate(items):
        name = str(op)
        if name in _REPEATS and av[0] != av[1] and not _delimited(items, i, wrap):
            return "that itself repeats"
        if name == "BRANCH" and _overlap(av[1]):
            return "whose alternatives can match the same text"
        for sub in _children(name, av):
            why = _ambiguity(sub)
            if why is not None:
                return why
    return None


def _delimited(items: list, i: int, wrap: bool) -> bool:
    """A repeat of one character class whose next item (the body's first, for the last item of
    a repeated body) is one mandatory character outside that class: its length is forced."""
    body = _items(items[i][1][2])
    after = items[i + 1] if i + 1 < len(items) else items[0] if wrap and i > 0 else None
    return (after is not None and len(body) == 1 and str(body[0][0]) in _CLASS
            and str(after[0]) in _CLASS and _disjoint(body[0], after))


def _disjoint(x: tuple, y: tuple) -> bool:
    """No character matches both one-character items: decided only when one of them is a few
    characters without case (punctuation, spaces, digits), tested against the other compiled
    with and without `IGNORECASE`; otherwise they may overlap."""
    for finite, other in ((x, y), (y, x)):
        chars = _chars(finite)
        if chars is not None:
            return not any(_member(other, c, f) for c in chars for f in (re.UNICODE, re.UNICODE | re.IGNORECASE))
    return False


def _chars(item: tuple) -> list[str] | None:
    op, av = str(item[0]), item[1]
    codes = [av] if op == "LITERAL" else [] if op == "IN" else None
    if op == "IN":
        for sop, sav in av:
            if str(sop) == "LITERAL":
                codes.append(sav)
            elif str(sop) == "RANGE" and sav[1] - sav[0] < 64:
                codes.extend(range(sav[0], sav[1] + 1))
            else:
                return None
    chars = [chr(c) for c in codes or ()]
    return chars if codes and all(c.lower() == c.upper() == c.casefold() for c in chars) else None


def _member(item: tuple, ch: str, flags: int) -> bool:
    try:
        return _compile(_sre.SubPattern(_sre.State(), [item]), flags).fullmatch(ch) is not None
    except Exception:  # noqa: BLE001 (an item the engine will not compile alone: may match)
        return True


def _overlap(alternatives: list) -> bool:
    """Conservative: alternatives are disjoint only when each starts with a run of ASCII
    literals and every two runs differ at a position both have, even ignoring case (whatever
    the flags; a non-ASCII letter can fold to an ASCII one, so it ends the run)."""
    runs = [_literal_run(_items(alt)) for alt in alternatives]
    for i, a in enumerate(runs):
        for b in runs[:i]:
            if a.startswith(b) or b.startswith(a):  # (an empty run starts every other)
                return True
    return False


def _literal_run(items: list) -> str:
    run = []
    for op, av in items:
        if str(op) != "LITERAL" or av > 127:
            break
        run.append(chr(av).casefold())
    return "".join(run)


def _children(name: str, av: Any) -> list[list]:
    if name in _REPEATS:
        return [_items(av[2])]
    if name == "SUBPATTERN":
        return [_items(av[-1])]
    if name == "BRANCH":
        return [_items(a) for a in av[1]]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [_items(av[1])]
    if name == "ATOMIC_GROUP":
        return [_items(av)]
    if name == "GROUPREF_EXISTS":
        return [_items(x) for x in av[1:] if x is not None]
    return []


@functools.lru_cache(maxsize=4096)
def paths(pattern: str, flags: str, length: int) -> float:
    """An upper estimate of the matcher paths a search of `pattern` takes over `length` chars."""
    tree = _parse(pattern, flags)
    return 0.0 if tree is None else min((length + 1) * _ways(_items(tree), length), _CAP)


def _ways(items: list, n: int, wrap: bool = False) -> float:
    total = 1.0
    for i, (op, av) in enumerate(items):
        if not (str(op) in _REPEATS and _delimited(items, i, wrap)):  # (forced: one way)
            total = min(total * _ways_of(str(op), av, n), _CAP)
    return total


def _ways_of(name: str, av: Any, n: int) -> float:
    if name in _SINGLE:
        return 1.0
    if name in _REPEATS:
        lo, hi, body = av
        top = min(hi, n)
        counts = top - min(lo, top) + 1
        b = _ways(_items(body), n, wrap=True)
        return min(counts * math.exp(min(top * math.log(b), 80.0)), _CAP)
    if name == "BRANCH":  # (disjoint alternatives: past its first character only one goes on)
        ways = [_ways(_items(a), n) for a in av[1]]
        return min(sum(ways) if _overlap(av[1]) else max(ways), _CAP)
    if name == "GROUPREF_EXISTS":  # (either arm; a missing one matches the empty string)
        return min(sum(_ways(sub, n) for sub in _children(name, av)) + 1, _CAP)
    return min(sum(_ways(sub, n) for sub in _children(name, av)), _CAP) or 1.0


def runnable(pattern: str, flags: str, text: str) -> bool:
    """Whether the checker may search `text` with the pattern: not risky, and within `BUDGET`."""
    return backtracking_risk(pattern, flags) is None and paths(pattern, flags, len(text)) <= BUDGET


def unrun_note(pattern: str, flags: str, text: str) -> str:
    """What a note says about a pattern the checker did not run on `text`."""
    shown = f"`/{pattern}/{flags}`"
    why = backtracking_risk(pattern, flags)
    if why is not None:
        return (f"{shown} was not run: {why} can backtrack exponentially (rewrite it so each "
                "character is matched one way, e.g. `/^(a|aa)+$/` as `/^a+$/`)")
    return f"{shown} was not run on a value of {len(text)} characters (too costly to test)"
