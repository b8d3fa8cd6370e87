""""Did you mean ...?": the closest known name to a misspelt one.

Role:       every diagnostic and error that suggests a name asks `closest`.
Invariants: `difflib.get_close_matches(word, candidates, n=1)` (cutoff 0.6) when it finds one;
            else, for a short word that ratio cannot reach (`ab` against `ac` is 0.5), a single
            edit: the first candidate one substitution, insertion, deletion or swap of
            neighbours away, for a word of 2 to 5 characters. difflib is imported only when a
            suggestion is asked for, since most commands (a clean `afpc check`, a run) never
            need one and start faster without it.
"""
from __future__ import annotations

from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `word` (similarity at least 0.6, or one edit away from a short
    word), or None."""
    import difflib
    names = list(candidates)
    found = difflib.get_close_matches(word, names, n=1)
    if found:
        return found[0]
    if 2 <= len(word) <= 5:
        return next((n for n in names if n != word and _one_edit(word, n)), None)
    return None


def _one_edit(a: str, b: str) -> bool:
    """Are `a` and `b` one substitution, insertion, deletion or swap of neighbours apart?"""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
