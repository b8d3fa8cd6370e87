"""Whether a spec's pattern may be searched over a text at run time without stalling the run.

Role:       read by `evaluate` (a guard's or rule's `matches`) and `redaction_match` (a redact
            pattern) before searching a text. Python's `re` has no time limit, and a pattern that
            can backtrack exponentially (`/^(a+)+$/`, AFP307) stalls a run on a long text that
            almost matches. The cost is judged, as the checker judges it, on the engine's own
            parse tree (`checks.regex_risk`): nothing here runs the pattern.
Invariants: a pattern without exponential risk is always searched (one cached lookup); a risky
            one is searched only when the estimated matcher paths over the text stay within
            `checks.regex_risk.BUDGET`. The caller decides what a refused search means: an
            evaluation error (a guard does not hold, a policy rule denies, a `check_in` pauses);
            a redacted text, whole; a failed `expect answer matches`. Each fails closed.
"""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1024)
def _risky(pattern: str, flags: str) -> bool:
    from .checks.regex_risk import backtracking_risk  # (regex_risk reads `evaluate`: lazily)
    return backtracking_risk(pattern, flags) is not None


def too_costly(pattern: str, flags: str, length: int) -> bool:
    """True when searching `/pattern/flags` over `length` characters may backtrack past the
    budget (only a pattern AFP307 flags can)."""
    if not _risky(pattern, flags):
        return False
    from .checks.regex_risk import BUDGET, paths
    return paths(pattern, flags, length) > BUDGET


def refusal(pattern: str, flags: str, length: int) -> str:
    """Why a search was not made (for a condition's reason)."""
    return (f"`/{pattern}/{flags}` was not searched over {length} characters: it can backtrack "
            f"exponentially (AFP307); rewrite it so each character is matched one way")
