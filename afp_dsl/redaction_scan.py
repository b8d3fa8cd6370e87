"""Is there anything to scrub in a value? The check every recorded payload passes first.

Role:       `CleanCheck`, the half of `Redactor` that only looks: `is_clean(value)` is True when
            scrubbing would change, count and remember nothing, so the recorder keeps the payload
            as it is (exactly what it records with no rules at all). Split from `redaction`.
Invariants: answers exactly what the plain walk answers (`_clean_walk_plain` in
            tests/test_redaction_prefilter.py): plain JSON shapes of exact types, every key an
            exact str with no match and selected by no rule, every string and number text without
            a match; it only caches verdicts, and forgets them when a secret is remembered (the
            keys, shapes and key tuples found clean while nothing is remembered are shared by
            the rule set's redactors).
Contract:   the class using it provides `_memory` (`redaction_match.Memory`), `_matcher`,
            `_ruleset.clean_keys`, `_key_rules(key)`, `_find(text)` and `_memory_regex()`, and
            calls `_init_clean()`.
"""
from __future__ import annotations

import re
from typing import Any

from .frozen import FrozenMap

CACHE_SIZE = 4096  # entries in each per-run speed cache (verdicts, key lookups)
CACHE_TEXT = 256  # longest string remembered as clean
INT_BLOCK = 64  # small ints found clean together (`_clean_int`)
_NOTHING = object()  # vouched for when nothing is (equal to no token)


class CleanCheck:
    """The cached clean check of a `Redactor` (see the module docstring)."""

    def _init_clean(self) -> None:
        # Speed: a `Redactor` holds 29 instance attributes, the most CPython 3.11 keeps in a
        # shared-key dict with inline values; a 30th turns every attribute read of the clean
        # check into a dict lookup (≈ +2,400 instructions per iteration of `loop:both`, see
        # bench/notes.md). Derive, or drop one, rather than add an attribute.
        self._clean: set[str] = set()
        self._clean_keys: set[str] = set()
        self._clean_ints: set[int] = set()
        self._clean_shapes: set[tuple] = set()
        self._vouched: Any = _NOTHING  # the token last vouched for (`vouch`)
        self._vouched_keys: dict[int, tuple] = {}  # tuples of keys found clean by `vouch`
        self._clean_version = -1
        self._screen: Any = False
        self._short = 0  # strings shorter than this hold no match (`_least_width`)
        self._int_bound = 0  # ints strictly between -bound/10 and bound print shorter

    def is_clean(self, value: Any) -> bool:
        """True when scrubbing `value` would change nothing and remember nothing: no key selected
        by a rule, no match in any string. Plain JSON-like values only (else False)."""
        if self._clean_version != self._memory.version:
            self._check_clean()
        try:
            return self._clean_map(value) if type(value) is dict else self._clean_walk(value)
        except RecursionError:  # too deep to walk: `scrub` replaces it whole
            return False

    def is_clean_shaped(self, payload: dict, shape: tuple, tail: Any, number: Any = 0) -> bool:
        """`is_clean(payload)` for a payload that is a function of `shape` (a hashable tuple of
        its other values, their types included where they could vary, holding no run data: the
        shapes found clean are shared by runs; None: checked in full), one value `tail` and one
        int `number`. Speed: a ledger row's payload repeats its shape at every tool call and
        differs only in the call id and the iteration, so a shape found clean (since the last
        remembered secret) needs only those two checked: lookups instead of a walk of the whole
        payload."""
        if self._clean_version != self._memory.version:
            self._check_clean()
        if shape in self._clean_shapes and type(tail) is str and type(number) is int and (
                tail in self._clean or self._clean_str(tail)) and (
                number in self._clean_ints or self._clean_int(number)):
            return True
        if not self.is_clean(payload):
            return False
        if shape is not None:  # (None: a payload of run data, checked in full every time)
            shapes = self._clean_shapes
            if len(shapes) >= CACHE_SIZE:
                shapes.clear()
            shapes.add(shape)
        return True

    def is_clean_as(self, payload: Any, shaper: Any, source: Any) -> bool:
        """`is_clean(payload)` for a payload that `shaper(source)` describes as (shape, values):
        the payload is a function of `shape` (hashable, its values' exact types told apart: a
        tuple headed by the kind it is made for, with the types of what could vary, holding the
        program's texts and the code's, no run data: the shapes found clean are shared by runs)
        and of the sequence `values`, checked at every call; None: check in full.
        Speed: a shape found clean (since the last remembered secret) needs only its values
        checked (`llm.replied` repeats its keys, `context.composed` most of itself)."""
        if self._clean_version != self._memory.version:
            self._check_clean()
        try:
            found = shaper(source)
            if found is not None and found[0] in self._clean_shapes:
                values = found[1]
                try:
                    return not values or self._clean_items(values)
                except RecursionError:  # too deep to walk: `scrub` replaces it whole
                    return False
        except Exception:  # unhashable, unmarshallable, too deep: the full check decides
            found = None
        if not self.is_clean(payload):
            return False
        if found is not None:
            shapes = self._clean_shapes
            if len(shapes) >= CACHE_SIZE:
                shapes.clear()
            shapes.add(found[0])
        return True

    def vouch(self, token: Any, keys: tuple[str, ...]) -> None:
        """Vouch for the payloads checked under `token` (`is_clean_vouched`) until a secret is
        remembered. The caller calls it right after a payload P was found clean, and passes under
        `token` only dicts whose keys are `keys` (checked here) and whose values all sit in P (or
        are lists of values that do): such a dict holds no match (a string's verdict does not
        depend on where it sits) and no selected key (its own keys are `keys`, those below were
        P's). Nothing is vouched for when a secret was remembered since the last check (P's
        verdict may be stale). One token at a time: a vouch replaces the one before (a payload
        under an older token is checked in full)."""
        if self._clean_version != self._memory.version or (
                self._vouched_keys.get(id(keys)) is not keys and not self._clean_key_tuple(keys)):
            return  # (the tuple's cached verdict inline: one call less per vouch)
        self._vouched = token

    def is_clean_vouched(self, payload: Any, token: Any) -> bool:
        """`is_clean(payload)` for a payload made as `vouch` says: True without a walk when
        `token` is vouched for (and nothing was remembered since). Speed: a tool call's
        `tool.called` repeats the name, id and arguments its reply's `llm.replied` just held."""
        if self._clean_version != self._memory.version:
            self._check_clean()
        return token == self._vouched or self.is_clean(payload)

    def is_clean_vouched_plus(self, payload: dict, token: Any, keys: tuple[str, ...],
                              values: tuple) -> bool:
        """`is_clean(payload)` for a dict whose entries are some made as `vouch` says (keys
        among the vouched ones, values in the vouched payload) and, besides those, exactly the
        entries `keys` → `values`: with `token` vouched for, only those are checked. Speed: a
        tool call's `tool.returned` repeats the call's name and id from its reply, an
        `llm.called` the tool names of its `context.composed`."""
        if self._clean_version != self._memory.version:
            self._check_clean()
        if token != self._vouched or (self._vouched_keys.get(id(keys)) is not keys
                                      and not self._clean_key_tuple(keys)):
            return self.is_clean(payload)
        try:
            return self._clean_items(values)
        except RecursionError:  # too deep to walk: `scrub` replaces it whole
            return False

    def _clean_key_tuple(self, keys: tuple[str, ...]) -> bool:
        """All of `keys` are clean keys; a tuple found so is remembered (by identity: exact
        strs stay so) until a secret is remembered."""
        if self._vouched_keys.get(id(keys)) is keys:
            return True
        known = self._clean_keys
        for k in keys:
            if type(k) is not str or (k not in known and not self._clean_key(k)):
                return False
        if len(self._vouched_keys) >= CACHE_SIZE:
            self._vouched_keys.clear()
        self._vouched_keys[id(keys)] = keys  # (keeps `keys` alive: its id is not reused)
        return True

    # ------------------------------------------------------------ clean check
    # Speed: `is_clean` runs on every recorded payload, so it walks with three per-run caches of
    # verdicts the plain definition would give again: exact strs without a match (`_clean`), keys
    # that are exact strs without a match and selected by no rule (`_clean_keys`), exact ints
    # whose text has no match (`_clean_ints`). Only exact types go in, and the walk looks up only
    # exact types: a str subclass, a bool or a float equal to a cached value never borrows its
    # verdict. All three are emptied when a secret is remembered (`_check_clean`), the only event
    # that can turn a clean verdict dirty. The clean strings and ints of one run are not shared
    # with the next: they are payload texts, and a cache should not keep one run's data alive
    # for another. The walk accepts exactly what `_clean_walk_plain` in
    # tests/test_redaction_prefilter.py accepts.
    def _clean_walk(self, value: Any) -> bool:
        t = type(value)
        if t is dict or t is FrozenMap:
            return self._clean_map(value)
        if t is list or t is tuple:
            return self._clean_items(value)
        if t is str:
            return value in self._clean or self._clean_str(value)
        if value is None or t is bool:
            return True
        if t is int:
            return value in self._clean_ints or self._clean_int(value)
        if t is float:
            return self._clean_str(str(value))
        return False  # anything else is scrubbed (and so converted) by `scrub`

    def _clean_map(self, value: Any) -> bool:
        keys, clean, ints = self._clean_keys, self._clean, self._clean_ints
        for k, v in value.items():
            if type(k) is not str or (k not in keys and not self._clean_key(k)):
                return False  # (the type first: a str subclass may equal a cached key)
            t = type(v)  # the common types inline, the rest as `_clean_walk` decides
            if t is str:
                if v not in clean:
                    if len(v) < self._short and len(clean) < CACHE_SIZE:
                        clean.add(v)  # (`_clean_str` inline for a text too short to match)
                    elif not self._clean_str(v):
                        return False
            elif v is None:
                continue
            elif t is int:
                if v not in ints and not self._clean_int(v):
                    return False
            elif t is dict:
                if not self._clean_map(v):
                    return False
            elif t is list:
                if v and not self._clean_items(v):
                    return False
            elif v is not None and t is not bool and not self._clean_walk(v):
                return False
        return True

    def _clean_items(self, value: Any) -> bool:
        clean, ints = self._clean, self._clean_ints
        for v in value:
            t = type(v)
            if t is str:
                if v not in clean:
                    if len(v) < self._short and len(clean) < CACHE_SIZE:
                        clean.add(v)  # (as in `_clean_map`)
                    elif not self._clean_str(v):
                        return False
            elif t is int:
                if v not in ints and not self._clean_int(v):
                    return False
            elif t is dict:
                if not self._clean_map(v):
                    return False
            elif t is bool or v is None:
                continue
            elif not self._clean_walk(v):
                return False
        return True

    def _clean_key(self, key: str) -> bool:
        if self._key_rules(key) or not self._clean_str(key):
            return False
        if len(key) <= CACHE_TEXT:
            if len(self._clean_keys) >= CACHE_SIZE:
                self._clean_keys.clear()
            self._clean_keys.add(key)
        return True

    def _clean_int(self, value: int) -> bool:
        bound = self._int_bound  # (as `_clean_str`, without caching the text)
        if 0 <= value < bound:
            # Speed: every int in [0, bound) prints shorter than anything could match, so the
            # block of `INT_BLOCK` around `value` goes in at once: a run's counters (call
            # numbers, message counts) then find theirs in the cache instead of calling here.
            ints = self._clean_ints
            if len(ints) >= CACHE_SIZE - INT_BLOCK:
                ints.clear()
            start = value & -INT_BLOCK
            ints.update(range(start, min(start + INT_BLOCK, bound)))
            return True
        if not -(bound // 10) < value < bound:
            text = str(value)
            screen = self._screen
            if screen is False or (screen is not None and screen.search(text) is not None):
                if self._find(text):
                    return False
        if len(self._clean_ints) >= CACHE_SIZE:
            self._clean_ints.clear()
        self._clean_ints.add(value)  # only exact ints go in and are looked up: 1 is never True
        return True

    def _clean_str(self, text: str) -> bool:
        if text in self._clean:
            return True
        screen = self._screen  # one search says "no pattern, no secret" (see `_make_screen`)
        if len(text) >= self._short and (
                screen is False or (screen is not None and screen.search(text) is not None)):
            if self._find(text):
                return False
        if len(text) <= CACHE_TEXT:
            clean = self._clean
            if len(clean) >= CACHE_SIZE:
                clean.clear()
            clean.add(text)
        return True

    def _note_clean(self, text: str) -> None:
        if type(text) is str and len(text) <= CACHE_TEXT:  # (`scrub` also passes subclasses)
            if len(self._clean) >= CACHE_SIZE:
                self._clean.clear()
            self._clean.add(text)

    def _check_clean(self) -> None:
        """Forget the verdicts known clean when a secret was remembered since (by any view).
        While nothing is remembered, the clean keys, shapes and vouched key tuples are those of
        the rule set, shared by its redactors (they depend on the rules alone, and shapes hold
        no run data: a run starts knowing its agent's shapes); after, this redactor keeps its
        own. The clean strs and ints are always the run's own."""
        if self._clean_version != self._memory.version:
            shared = self._memory.version == 0
            rs = self._ruleset
            self._clean = set()
            self._clean_keys = rs.clean_keys if shared else set()
            self._clean_ints = set()
            self._clean_shapes = rs.clean_shapes if shared else set()
            self._vouched = _NOTHING
            self._vouched_keys = rs.vouched_keys if shared else {}
            self._screen = self._make_screen()
            # (at most `CACHE_TEXT` + 1: the walks note shorter texts clean without a call, and
            # only texts of at most `CACHE_TEXT` may be cached; a longer one is searched)
            self._short = short = min(self._least_width(), CACHE_TEXT + 1)
            self._int_bound = 10 ** (short - 1) if short > 1 else 0
            self._clean_version = self._memory.version

    def _least_width(self) -> int:
        """The length of the shortest text anything could match: the least width of the patterns
        (`Matcher.least`, settled once per rule set) and of the remembered secrets. A shorter
        string holds no match; 0 when unknown."""
        widths = [len(secret) for secret in self._memory.values]
        if self._matcher.least is not None:
            widths.append(self._matcher.least)
        return min(widths) if widths else 0

    def _make_screen(self) -> Any:
        """One regex whose search finds nothing only when `_find` would find nothing: the
        alternation of the plain patterns' prefilter and the remembered secrets. None: nothing
        can match at all; False: no such regex (patterns kept apart), ask `_find`."""
        if self._matcher.separate:
            return False
        parts = [r.pattern for r in (self._matcher.prefilter, self._memory_regex()) if r is not None]
        if len(parts) < 2:
            return self._matcher.prefilter or self._memory_regex()
        try:
            return re.compile("|".join(parts))
        except (re.error, RecursionError, OverflowError):
            return False
