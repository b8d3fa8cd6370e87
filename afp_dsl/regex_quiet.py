"""Compiling a spec's regexes without Python's FutureWarning on stderr.

Role:       every compile or parse of a user pattern (lowering, checks, guards at run time,
            redaction, schema patterns) goes through `compile_quietly` or `parse_quietly`, and
            the run-time validation of tool arguments through `quiet`.
Invariants: `re` warns (FutureWarning) about a class a later Python may read otherwise (`[[`,
            `--`, `&&`, `~~`, `||` inside `[...]`); the pattern still means what it means today,
            `future_caveat` gives the warning's text to the AFP004 warning of `checks/regexes`,
            and nothing reaches stderr, or an embedder's `-W error` as an exception.
"""
from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Run a block (a JSON Schema validation, whose `pattern`s jsonschema compiles) without a
    FutureWarning from `re`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def compile_quietly(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile`, without a FutureWarning. Raises `re.error` for every pattern it cannot
    compile: also for the ones `re` refuses with another exception (a repetition count over
    `re`'s limit, `a{99999999999}`, is an OverflowError; nesting too deep a RecursionError), so
    callers that skip or report a bad pattern need catch only `re.error`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern, flags)
        except (OverflowError, RecursionError, ValueError) as e:
            raise re.error(str(e) or type(e).__name__) from None


def parse_quietly(parse: Any, pattern: str, flags: int = 0) -> Any:
    """`parse(pattern, flags)` (the engine's own parser), without a FutureWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return parse(pattern, flags)


@functools.lru_cache(maxsize=512)
def future_caveat(pattern: str, flags: int = 0) -> str | None:
    """The FutureWarning Python gives about `pattern` (e.g. `Possible nested set at position
    1`), or None; also None for a pattern that does not compile (AFP004 reports that).

    Example:
        >>> future_caveat("[[a]")
        'Possible nested set at position 1'
        >>> future_caveat("[a-z]+") is None
        True
    """
    from re import _parser  # type: ignore[attr-defined]  # (uncached: `re.compile` may not warn twice)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FutureWarning)
        try:
            _parser.parse(pattern, flags)
        except (re.error, OverflowError, RecursionError, ValueError):
            return None
    found = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    return found[0] if found else None
