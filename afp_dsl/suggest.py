""""Did you mean ...?": the closest known name to a misspelt one.

Role:       every diagnostic and error that suggests a name asks `closest`.
Invariants: the same answer as `difflib.get_close_matches(word, candidates, n=1)` (cutoff 0.6);
            difflib is imported only when a suggestion is asked for, since most commands
            (a clean `afpc check`, a run) never need one and start faster without it.
"""
from __future__ import annotations

from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `word` (similarity at least 0.6), or None."""
    import difflib
    found = difflib.get_close_matches(word, list(candidates), n=1)
    return found[0] if found else None
