"""Short strings a regex matches, for the mock's demo arguments (semantics §11).

Role:       `spell_pattern(pattern, length)` spells a string from the plain parts of a `pattern`
            keyword (literals, classes, least repeats, first alternatives), or None; split from
            `mock_args`, which validates whatever it gets.
Invariants: deterministic; never raises (an unreadable or unusual pattern is None).
"""
from __future__ import annotations

from typing import Any

from ..regex_quiet import parse_quietly

_MAX_DEPTH = 20  # nesting of groups and repeats followed


def spell_pattern(pattern: str, length: int = 0) -> str | None:
    """A short string the regex's plain parts spell (literals, classes, least repeats, first
    alternatives; the first repeat that may grow grows until `length` is reached), or None
    for a pattern it cannot spell. Reads the parse tree of Python's own `re` (private, but the
    one parser that reads `re` syntax exactly); any surprise there is None, and the caller
    validates what it gets anyway."""
    try:
        from re import _constants as c, _parser as p  # type: ignore[attr-defined]
        items = parse_quietly(p.parse, pattern)
        short = _spell(items, c, 0, [0])
        return short if len(short) >= length else _spell(items, c, 0, [length - len(short)])
    except Exception:  # noqa: BLE001 - an unreadable or unusual pattern: no guess
        return None


def _spell(items: Any, c: Any, depth: int, grow: list[int]) -> str:
    """`grow[0]`: how many more repeats the first repeats that may grow still add."""
    if depth > _MAX_DEPTH:
        raise ValueError("too deep")
    out = []
    for op, av in items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op is c.ANY:
            out.append("x")
        elif op is c.IN:
            out.append(_one_of(av, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            lo, hi = av[0], av[1]
            more = min(grow[0], hi - lo) if grow[0] > 0 and hi > lo else 0
            grow[0] -= more
            out.append(_spell(av[2], c, depth + 1, [0]) * (lo + more))
        elif op is c.SUBPATTERN:
            out.append(_spell(av[-1], c, depth + 1, grow))
        elif op is c.ATOMIC_GROUP:
            out.append(_spell(av, c, depth + 1, grow))
        elif op is c.BRANCH:
            out.append(_spell(av[1][0], c, depth + 1, grow))
        elif op is not c.AT:
            raise ValueError(f"cannot spell {op}")
    return "".join(out)


_CANDIDATES = "a0A_x- ."


def _one_of(items: Any, c: Any) -> str:
    """A character of a `[...]` class: the first of a few common ones it takes."""
    negate = bool(items) and items[0][0] is c.NEGATE
    parts = items[1:] if negate else items
    for ch in _CANDIDATES:
        if _in_class(ch, parts, c) != negate:
            return ch
    raise ValueError("no common character fits")


def _in_class(ch: str, parts: Any, c: Any) -> bool:
    code = ord(ch)
    tests = {c.CATEGORY_DIGIT: ch.isdigit(), c.CATEGORY_NOT_DIGIT: not ch.isdigit(),
             c.CATEGORY_WORD: ch.isalnum() or ch == "_",
             c.CATEGORY_NOT_WORD: not (ch.isalnum() or ch == "_"),
             c.CATEGORY_SPACE: ch.isspace(), c.CATEGORY_NOT_SPACE: not ch.isspace()}
    for op, av in parts:
        if (op is c.LITERAL and av == code) or (op is c.RANGE and av[0] <= code <= av[1]) or (
                op is c.CATEGORY and tests.get(av, False)):
            return True
    return False
