"""What counts as a secret inside one string: rule patterns, remembered values, redacted keys.

Role:       the matching half of redaction, split from `redaction` (which walks values, rewrites
            them and keeps the report): compiles a run's rules into patterns and a key table,
            keeps the remembered secrets, and finds the spans to replace in a string.
Invariants: every pattern's matches are found even where they overlap another's; a `luhn` group
            must pass the Luhn check; remembered secrets match as literals, longest first;
            overlapping spans merge and empty ones drop, so "no spans" means "nothing to scrub".
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from . import ir
from .evaluate import regex_flags
from .regex_budget import too_costly
from .regex_quiet import compile_quietly, parse_quietly

DEFAULT_PLACEHOLDER = "[REDACTED]"
_PLAIN_JSON = re.compile(r'[^"\\\x00-\x1f\x7f-\U0010ffff]*\Z').match  # JSON writes it as it is
_NON_DIGITS = re.compile(r"\D")


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a digit string (card numbers); non-digits make it invalid.

    Example:
        >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
        (True, False)
    """
    if not digits or not digits.isascii() or not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@attrs.frozen
class Rule:
    index: int
    name: str
    placeholder: str
    model: bool


@attrs.frozen
class Pattern:
    regex: re.Pattern[str]
    rule: Rule
    luhn: bool
    risky: tuple[str, str] | None = None  # (pattern, flags) of one that can backtrack (AFP307)


Span = tuple[int, int, Rule]


class Memory:
    """Remembered secret strings, shared by a redactor and its views; `version` counts changes.

    The rules that selected a secret are named by the memory's own numbering (`ref`), the same
    for every redactor sharing it: an agent run as a tool shares its outer run's memory, and a
    secret its own rules found must still be known to the outer run's redactor, which does not
    hold those rules (nor do sibling inner agents, whose own rules would share local indexes).
    A rule is known here by what scrubbing a remembered secret needs of it: its name (for the
    counts), placeholder and `model` setting. -1 is a planted secret (`Redactor.remember`
    without a rule). `state`/`restore` carry the memory in a resume checkpoint (raw values:
    the checkpoint is the one record allowed to hold them)."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[int, ...]] = {}  # secret -> `ref`s of the rules selecting it
        self.version = 0
        self.rules: list[tuple[str, str, bool]] = []  # `ref` -> (name, placeholder, model)
        self._refs: dict[tuple[str, str, bool], int] = {}

    def ref(self, decl: ir.Redact) -> int:
        """This memory's number for a rule declaration, given on first sight."""
        return self._ref((decl.name, decl.placeholder, bool(decl.model)))

    def _ref(self, sig: tuple[str, str, bool]) -> int:
        found = self._refs.get(sig)
        if found is None:
            found = self._refs[sig] = len(self.rules)
            self.rules.append(sig)
        return found

    def add(self, text: str, rules: tuple[int, ...]) -> None:
        """Remember `text`, and the forms it takes quoted inside JSON text (`"` and `\\`
        escaped, non-ASCII as `\\uXXXX` or not) and inside a Python `repr` (an exception's
        message, a host's `f"{args}"`): a tool result written as `json.dumps(...)` holds its
        copy of a secret so, and that copy is the same string (semantics §9)."""
        if not self._add(text, rules):
            return  # (known already, with these rules: so are its forms)
        if not _PLAIN_JSON(text):  # (else every form is `text` itself)
            for form in (json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1],
                         repr(text)[1:-1]):
                self._add(form, rules)  # (a form equal to one added adds nothing)

    def _add(self, text: str, rules: tuple[int, ...]) -> bool:
        old = self.values.get(text, ())
        merged = old + tuple(r for r in rules if r not in old)
        if merged == old:
            return False
        self.values[text] = merged
        self.version += 1
        return True

    def state(self) -> dict:
        """The remembered secrets as JSON data (for a resume checkpoint only)."""
        return {"rules": [list(r) for r in self.rules],
                "values": [[text, list(refs)] for text, refs in self.values.items()]}

    def restore(self, data: Any) -> None:
        """Remember again what `state` wrote (another run's numbering is mapped onto this one);
        anything malformed is skipped: a checkpoint without it still resumes."""
        if not isinstance(data, dict):
            return
        try:
            refs = [self._ref((str(n), str(p), bool(m))) for n, p, m in data.get("rules", ())]
            for text, old in data.get("values", ()):
                if isinstance(text, str):
                    self.add(text, tuple(-1 if r == -1 else refs[r] for r in old))
        except (TypeError, ValueError, IndexError):
            return


class Matcher:
    """The patterns of the active rules plus the remembered secrets, for one redactor view."""

    def __init__(self, decls: Sequence[ir.Redact], active: list[Rule]):
        self.prefilter, self.plain, self.separate = compile_patterns(list(decls), active)
        self.least = least_width(self.plain + self.separate)

    def find(self, text: str, memory: re.Pattern[str] | None, memory_rule: Any) -> list[Span]:
        """The merged spans to replace in `text`; `memory_rule(secret)` names a memory match."""
        found: list[Span] = []
        patterns = self.separate
        if self.prefilter is not None and self.prefilter.search(text):
            patterns = self.plain + patterns
        for p in patterns:
            if p.risky is not None and too_costly(*p.risky, len(text)):
                found.append((0, len(text), p.rule))  # (not searched: the whole text, fails closed)
                continue
            found += [(m.start(), m.end(), p.rule) for m in p.regex.finditer(text)
                      if not p.luhn or luhn_valid(_NON_DIGITS.sub("", m.group("luhn") or ""))]
        if memory is not None and memory.search(text):
            found += [(m.start(), m.end(), memory_rule(m.group(0))) for m in memory.finditer(text)]
        return merge(found) if found else found


def least_width(patterns: Sequence[Pattern]) -> int | None:
    """The length of the shortest text any of `patterns` can match, as the regex engine itself
    bounds it (a shorter string holds no match); None without patterns, 0 when unknown."""
    if not patterns:
        return None
    try:  # (`re._parser` is the engine's own parser; a Python without it: no bound)
        parse = re._parser.parse  # type: ignore[attr-defined]
        return max(0, min(int(parse_quietly(parse, p.regex.pattern, p.regex.flags).getwidth()[0])
                          for p in patterns))
    except Exception:  # noqa: BLE001
        return 0


def key_table(rules: Sequence[ir.Redact]) -> dict[str, tuple[int, ...]]:
    """Lower-cased key name -> indexes of the rules redacting it."""
    table: dict[str, tuple[int, ...]] = {}
    for i, r in enumerate(rules):
        for k in r.keys:
            key = k.lower()
            if i not in table.get(key, ()):
                table[key] = table.get(key, ()) + (i,)
    return table


def compile_patterns(decls: list[ir.Redact], active: list[Rule]):
    """Each pattern alone (every pattern's matches are found even where they overlap another's),
    plus one alternation of the plain ones as a prefilter: most strings hold no secret at all.
    Patterns with groups (back-references, `luhn`), verbose mode or global flags stay out of it."""
    branches, plain, separate = [], [], []
    for rule in active:
        for rx in decls[rule.index].patterns:
            try:
                compiled = compile_quietly(rx.pattern, regex_flags(rx.flags))
            except re.error as exc:
                raise ValueError(f"redact rule `{rule.name}`: bad pattern `{rx}`: {exc}") from None
            risky = (rx.pattern, rx.flags) if too_costly(rx.pattern, rx.flags, 1 << 20) else None
            pattern = Pattern(compiled, rule, "luhn" in compiled.groupindex, risky)
            flags = "".join(f for f in rx.flags if f in "ims")
            inner = f"(?{flags}:{rx.pattern})" if flags else f"(?:{rx.pattern})"
            if risky or compiled.groups or "x" in rx.flags or not _compiles(inner):
                separate.append(pattern)
            else:
                branches.append(inner)
                plain.append(pattern)
    prefilter = compile_quietly("|".join(branches)) if branches else None
    return prefilter, tuple(plain), tuple(separate)


def _compiles(pattern: str) -> bool:
    try:
        compile_quietly(pattern)
    except re.error:  # e.g. global inline flags `(?i)` that may not stand inside a group
        return False
    return True


def literal_regex(words: list[str]) -> re.Pattern[str]:
    """A trie-shaped regex matching the longest of `words` at each position, in one pass."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}
    try:
        return re.compile(_trie_body(trie))
    except (RecursionError, re.error):
        return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


def _trie_body(node: dict[str, Any]) -> str:
    branches = []
    for ch in sorted(k for k in node if k):
        text, child = re.escape(ch), node[ch]
        while len(child) == 1 and "" not in child:
            ((nxt, child),) = child.items()
            text += re.escape(nxt)
        branches.append(text + _trie_body(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if "" in node else body


def merge(found: list[Span]) -> list[Span]:
    """Union of overlapping spans (the earliest-starting match names the rule); empty ones drop."""
    merged: list[Span] = []
    for start, end, rule in sorted((f for f in found if f[1] > f[0]), key=lambda f: (f[0], -f[1])):
        if merged and start < merged[-1][1]:
            s, e, r = merged[-1]
            merged[-1] = (s, max(e, end), r)
        else:
            merged.append((start, end, rule))
    return merged
