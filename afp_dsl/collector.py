"""The cyclic collector paused around the front end and checker (`gc_paused`).

Role:       `api.analyse` runs a check paused; `afpc check` also imports the checker paused.
Invariants: the host's settings are kept: a disabled collector stays disabled, objects the host
            froze stay frozen; nested pauses settle only at the outermost.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing allocates millions of short-lived acyclic objects; the cyclic collector's repeated
    full scans over them made checking grow faster than linearly, so it is paused meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            _settle_young()
            gc.enable()


def _settle_young() -> None:
    """Move every tracked object to the collector's oldest generation without scanning it.

    Speed: what a check keeps is a large, long-lived, acyclic IR (about 60 objects per line), and
    the first collection after the pause would scan all of it as young objects (5–10 % of a
    check, and again at the next middle-generation collection) only to promote it. `freeze` +
    `unfreeze` moves the young generations to the oldest one in O(1) and resets the young count,
    as `gc.freeze` users do; full collections still scan it, and the few cycles a check leaves
    are freed then. Skipped when the host keeps objects frozen itself (`unfreeze` would release
    them)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
