"""Redaction of secrets from everything recorded, and (with `model = true`) from what the model reads.

Role:       one `Redactor` per run, from the agent's joined `redact` rules; the interpreter scrubs
            every value before it reaches a trace event, store row, export or error message.
            This module rewrites and reports; `redaction_match` finds, `redaction_scan` checks.
Invariants: a value under a redacted key (any depth, case-insensitive exact name) becomes the rule's
            placeholder and is remembered (strings of ≥ 4 chars, numbers as their text), so a later
            copy anywhere, even inside a longer string, is scrubbed too; every pattern match inside
            any string is replaced. Keys are kept, but their text is scrubbed like any string (a
            secret used as a key would otherwise leak through the key and the report's paths).
            Nesting too deep to walk is replaced whole (fails closed). Reports never hold values.
Luhn:       a pattern with a named group `luhn` redacts a match only when the group's digits
            (non-digits dropped) pass the Luhn check, e.g. `/\\b(?P<luhn>(?:\\d[ -]?){12,18}\\d)\\b/`.
"""
from __future__ import annotations

import collections
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import ir
from .frozen import FrozenMap
from .redaction_json import key_spans, opening_value, opens_json
from .redaction_match import (DEFAULT_PLACEHOLDER, Matcher, Memory, Rule, key_table, literal_regex,
                              luhn_valid)
from .redaction_paths import RedactionReport, path_text, unique
from .redaction_scan import CACHE_SIZE, CleanCheck

MIN_REMEMBERED = 4
MAX_PATHS = 1000
PLANTED = "(remembered)"
_LEAVES = frozenset((str, int, float, bool, type(None)))  # exact types `_collect` skips at once
_JSON_STARTS = frozenset("{[ \t\n\r")  # how JSON text opens (`json.loads` skips these spaces)


_PLANTED_RULE = Rule(-1, PLANTED, DEFAULT_PLACEHOLDER, False)


class _RuleSet:
    """What one rule set compiles to, shared by every redactor of those rules (and view): rules,
    key table, patterns, and caches of answers that depend on the rules alone: the rules each
    key selects, and, while nothing is remembered, the keys, the payload shapes and the tuples of
    vouched keys found clean (`CleanCheck`; shapes and key tuples hold only the program's texts
    and the code's, never a run's data, so one run's verdicts serve the next)."""

    __slots__ = ("decls", "rules", "active", "keys", "matcher", "placeholders", "key_cache",
                 "clean_keys", "clean_shapes", "vouched_keys")
    _cache: dict[tuple, "_RuleSet"] = {}

    def __init__(self, decls: tuple[ir.Redact, ...], model_only: bool):
        self.decls = decls  # (kept alive: the cache is keyed by the declarations' identity)
        self.rules = tuple(Rule(i, r.name, r.placeholder, r.model) for i, r in enumerate(decls))
        self.active = frozenset([r.index for r in self.rules if r.model or not model_only]
                                + ([] if model_only else [-1]))
        self.keys = key_table(decls)
        self.matcher = Matcher(decls, [r for r in self.rules if r.index in self.active])
        self.placeholders = frozenset({r.placeholder for r in self.rules} | {DEFAULT_PLACEHOLDER})
        self.key_cache: dict[str, tuple[int, ...]] = {}
        self.clean_keys: set[str] = set()
        self.clean_shapes: set = set()
        self.vouched_keys: dict = {}

    @classmethod
    def of(cls, decls: tuple[ir.Redact, ...], model_only: bool) -> "_RuleSet":
        key = (tuple(map(id, decls)), model_only)
        found = cls._cache.get(key)
        if found is None or any(a is not b for a, b in zip(found.decls, decls)):
            if len(cls._cache) >= 256:
                cls._cache.clear()
            found = cls._cache[key] = cls(decls, model_only)
        return found


class Redactor(CleanCheck):
    """Scrubs JSON-like values and text for one run; remembers the secrets it has seen."""

    # Speed: at most 30 instance attributes (this class's and `CleanCheck`'s): CPython 3.11
    # shares one key table among the instances of a class up to 30 keys, and past that every
    # attribute and method lookup on a redactor takes the slow path (tests/test_redaction_vouch.py).
    _planted = _PLANTED_RULE  # (a constant: a class attribute, not one of the 30)

    def __init__(self, rules: Sequence[ir.Redact] = (), *, _memory: Memory | None = None,
                 _model_only: bool = False):
        self._decls = tuple(rules)
        self._model_only = _model_only
        # Speed: what depends on the rules alone is compiled once per rule set (`_RuleSet`);
        # a run builds a redactor, and an agent's rules are the same at every run.
        rs = _RuleSet.of(self._decls, _model_only)
        self._ruleset = rs
        self._rules, self._active, self._keys = rs.rules, rs.active, rs.keys
        self._matcher, self._placeholders = rs.matcher, rs.placeholders
        self._memory = _memory if _memory is not None else Memory()
        # the memory's numbers for this redactor's rules (`Memory.ref`), and back; a secret
        # remembered by a rule this redactor does not hold (an inner agent's own) is "foreign"
        self._refs = tuple(self._memory.ref(d) for d in self._decls)
        self._local: dict[int, int] = {}
        for i, g in enumerate(self._refs):
            self._local.setdefault(g, i)
        self._same_refs = self._refs == tuple(range(len(self._refs)))
        self._foreign: dict[int, Rule | None] = {}
        self._memory_cache: tuple[int, re.Pattern[str] | None] = (-1, None)
        self._counts: collections.Counter[str] = collections.Counter()
        self._paths: set[str] = set()
        self._paths_dropped = 0
        self._model_view: Redactor | None = None
        # Speed: the rules selected by each key (bounded, shared by the rule set's redactors);
        # the clean-check caches (CleanCheck). Paths are rendered only when counted.
        self._key_cache = rs.key_cache
        self._init_clean()

    # ------------------------------------------------------------ public
    def scrub(self, value: Any, *, at: str = "$") -> Any:
        """A redacted deep copy of `value`; `at` prefixes the paths recorded in the report."""
        try:
            if self._keys:
                self._collect(value)
            self._check_clean()
            return self._scrub(value, at)
        except RecursionError:
            self._count(self._fallback_rule(), at)
            return self._fallback_rule().placeholder

    def scrub_text(self, text: str) -> str:
        """`text` with every pattern match and every remembered secret replaced."""
        self._check_clean()
        return self._scrub_str(text)

    def remember(self, value: Any, *, rule: str | None = None) -> None:
        """Plant known secrets (every string/number leaf of `value`); `rule` names a redact rule
        whose placeholder and `model` setting they take (default: records only, `[REDACTED]`)."""
        if rule is None:
            self._remember_leaves(value, (-1,))
            return
        found = [r.index for r in self._rules if r.name == rule]
        if not found:
            raise ValueError(f"no redact rule named `{rule}`")
        self._remember_leaves(value, (found[0],))

    def remember_matches(self, value: Any) -> None:
        """Remember what the patterns match in the strings of `value`, as secrets of their
        rules: an inner run's answer crosses into the outer run, whose rules may lack the inner
        agent's patterns (an agent run as a tool shares its secrets both ways)."""
        if isinstance(value, Mapping):
            for v in value.values():
                self.remember_matches(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self.remember_matches(v)
        elif type(value) is str and value:
            for start, end, rule in self._matcher.find(value, None, None):
                self._remember_leaves(value[start:end], (rule.index,))

    def learn(self, value: Any) -> None:
        """Remember the secrets under redacted keys in `value` without counting a redaction
        (for values already scrubbed once, e.g. history restored from a checkpoint)."""
        Redactor(self._decls, _memory=self._memory).scrub(value)

    def learn_json_text(self, text: Any) -> None:
        """A tool result written as JSON text is data too (guards read it so): remember the
        secrets under redacted keys inside it, so the text itself, and any later copy, is
        scrubbed; text after the JSON value (a remark, a step's note) is no obstacle, as it is
        none for `scrub_json_keys`. Anything else, or text not JSON there, teaches nothing."""
        if not self._keys or type(text) is not str or text[:1] not in _JSON_STARTS or (
                text.lstrip()[:1] not in ("{", "[")):
            return  # (the first test a quick reject: JSON text opens so, after JSON spaces)
        try:
            value = opening_value(text)  # (lenient: NaN and infinities, as results may hold)
        except (ValueError, RecursionError):
            return
        self.learn(value)

    def scrub_json_keys(self, text: Any, *, at: str = "$") -> Any:
        """`text` with every value under a redacted key of the JSON object or array that opens
        it replaced by the rule's placeholder (as JSON text), whatever the value's length, the
        rest kept as written; anything else as it is. Patterns and remembered secrets are left
        to `scrub`/`scrub_text`."""
        if not self._keys or not opens_json(text):
            return text
        spans = key_spans(text, self._json_key_rule, at)
        if not spans:
            return text
        parts, last = [], 0
        for start, end, rule, path in spans:
            parts += [text[last:start], json.dumps(rule.placeholder, ensure_ascii=False)]
            last = end
            self._count(rule, path)
        parts.append(text[last:])
        return "".join(parts)

    @property
    def has_key_rules(self) -> bool:
        return bool(self._keys)

    def key_placeholder(self, names: Any) -> str | None:
        """The placeholder of the first active rule selecting one of the key `names` (a value
        read through them is redacted, counted without a path), or None."""
        for name in names:
            rule = self._json_key_rule(name)
            if rule is not None:
                self._count(rule, None)
                return rule.placeholder
        return None

    def _json_key_rule(self, key: str) -> Rule | None:
        rules = self._key_rules(key)
        return self._first_active(rules) if rules else None

    def memory_state(self) -> dict:
        """The remembered secrets, raw, for a resume checkpoint (never for a record)."""
        return self._memory.state()

    def restore_memory(self, data: Any) -> None:
        """Remember again the secrets of `memory_state` (a resumed run)."""
        self._memory.restore(data)

    @property
    def inert(self) -> bool:
        """True when scrubbing cannot change anything: no rules and nothing remembered."""
        return not self._rules and not self._memory.values

    def joined(self, rules: Sequence[ir.Redact]) -> "Redactor":
        """A redactor for these rules joined with this one's, sharing the remembered secrets
        (an agent run as a tool is covered by the outer agent's rules and its own)."""
        return Redactor(tuple(dict.fromkeys(self._decls + tuple(rules))), _memory=self._memory)

    def for_model(self) -> Redactor | None:
        """The view that scrubs what the model is sent (rules with `model = true`), or None."""
        if self._model_only:
            return self
        if not any(r.model for r in self._rules):
            return None
        if self._model_view is None:
            self._model_view = Redactor(self._decls, _memory=self._memory, _model_only=True)
        return self._model_view

    def report(self) -> RedactionReport:
        counts = FrozenMap(sorted(self._counts.items()))
        return RedactionReport(counts, tuple(sorted(self._paths)), self._paths_dropped)

    # ------------------------------------------------------------ pass 1: remember
    def _collect(self, value: Any) -> None:
        t = type(value)
        if t in _LEAVES:
            return
        if t is dict or isinstance(value, Mapping):
            for k, v in value.items():
                rules = self._key_rules(k)
                if rules:
                    self._remember_leaves(v, rules)
                else:
                    self._collect(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self._collect(v)

    def _remember_leaves(self, value: Any, rules: tuple[int, ...]) -> None:
        if isinstance(value, Mapping):
            for v in value.values():
                self._remember_leaves(v, rules)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self._remember_leaves(v, rules)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = value if isinstance(value, str) else str(value)
            if len(text) >= MIN_REMEMBERED and text not in self._placeholders:
                self._memory.add(text, rules if self._same_refs else
                                 tuple(i if i == -1 else self._refs[i] for i in rules))

    def _key_rules(self, key: Any) -> tuple[int, ...]:
        if type(key) is not str:
            return self._keys.get(str(key).lower(), ())
        rules = self._key_cache.get(key)
        if rules is None:
            rules = self._keys.get(key.lower(), ())
            if len(self._key_cache) < CACHE_SIZE:
                self._key_cache[key] = rules
        return rules

    # ------------------------------------------------------------ pass 2: scrub
    def _scrub(self, value: Any, path: Any) -> Any:
        """`path` is the root's name, or (parent path, key or index, is_index), see `redaction_paths.path_text`."""
        t = type(value)
        if t is str:
            return self._scrub_str(value, path)
        if t is dict or isinstance(value, Mapping):
            return self._scrub_map(value, path)
        if isinstance(value, (list, tuple)):
            items = [self._scrub(v, (path, i, True)) for i, v in enumerate(value)]
            return items if isinstance(value, list) else tuple(items)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            text = str(value)
            scrubbed = self._scrub_str(text, path)
            return value if scrubbed == text else scrubbed
        text = value if isinstance(value, str) else str(value)
        return self._scrub_str(text, path)

    def _scrub_map(self, value: Mapping, path: Any) -> Any:
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = self._scrub_str(k) if type(k) is str or isinstance(k, str) else k
            if key in out:
                key = unique(key, out)
            sub = (path, key, False)
            rules = self._key_rules(k)
            rule = self._first_active(rules) if rules else None
            if rule is not None:
                out[key] = rule.placeholder
                self._count(rule, sub)
            else:
                out[key] = self._scrub(v, sub)
        return FrozenMap(out) if isinstance(value, FrozenMap) else out

    def _scrub_str(self, text: str, path: Any = None) -> str:
        if text in self._clean:
            return text
        spans = self._find(text)
        if not spans:
            self._note_clean(text)
            return text
        parts, last = [], 0
        for start, end, rule in spans:
            parts += [text[last:start], rule.placeholder]
            last = end
            self._count(rule, path)
        parts.append(text[last:])
        return "".join(parts)

    def _find(self, text: str) -> list[tuple[int, int, Rule]]:
        return self._matcher.find(text, self._memory_regex(), self._memory_rule)

    # ------------------------------------------------------------ helpers
    def _memory_regex(self) -> re.Pattern[str] | None:
        version, regex = self._memory_cache
        if version != self._memory.version:
            words = [w for w, refs in self._memory.values.items() if self._memory_first(refs)]
            regex = literal_regex(words) if words else None
            self._memory_cache = (self._memory.version, regex)
        return regex

    def _memory_rule(self, text: str) -> Rule:
        return self._memory_first(self._memory.values.get(text, ())) or self._fallback_rule()

    def _memory_first(self, refs: tuple[int, ...]) -> Rule | None:
        """The rule a remembered secret is scrubbed by here: the first of the rules that
        selected it (`Memory.ref` numbers) active in this view. A rule this redactor does not
        hold (an inner agent's own, whose run shares this memory) still scrubs every record
        (with its own name and placeholder); what the model is sent stays with this
        redactor's own rules."""
        for g in refs:
            if g == -1:
                if -1 in self._active:
                    return self._planted
                continue
            i = self._local.get(g)
            if i is None:
                rule = self._foreign_rule(g)
                if rule is not None:
                    return rule
            elif i in self._active:
                return self._rules[i]
        return None

    def _foreign_rule(self, ref: int) -> Rule | None:
        if ref not in self._foreign:
            name, placeholder, model = self._memory.rules[ref]
            self._foreign[ref] = None if self._model_only else Rule(-2, name, placeholder, model)
        return self._foreign[ref]

    def _first_active(self, indexes: tuple[int, ...]) -> Rule | None:
        for i in indexes:
            if i in self._active:
                return self._planted if i == -1 else self._rules[i]
        return None

    def _fallback_rule(self) -> Rule:
        candidates = [r for r in self._rules if r.index in self._active]
        return candidates[0] if candidates else self._planted

    def _count(self, rule: Rule, path: Any) -> None:
        self._counts[rule.name] += 1
        if path is None:
            return
        path = path_text(path)
        if path in self._paths:
            return
        if len(self._paths) < MAX_PATHS:
            self._paths.add(path)
        else:
            self._paths_dropped += 1


__all__ = ["MAX_PATHS", "MIN_REMEMBERED", "PLANTED", "RedactionReport", "Redactor", "luhn_valid"]
