"""`afpc test -k PATTERN`: which tests a pattern selects, as pytest's `-k` does.

Role:       parses the pattern once (`parse_pattern`) into a predicate over a test's
            `file::name`; used by `testing.collect` and, to refuse a malformed pattern before
            any test runs, by `cli_test`.
Invariants: a word matches when it is a substring of `file::name`, ignoring case; `not` binds
            tighter than `and`, `and` tighter than `or`; parentheses group. Every malformed
            pattern is a `ValueError` naming what is wrong, never a pattern read some other way.
"""
from __future__ import annotations

import re
from typing import Callable

Selector = Callable[[str], bool]  # `file::name` → selected
_TOKEN = re.compile(r"\s*(?:([()])|([^\s()]+))")
_DEEPEST = 100  # `not` and `(` nested deeper are refused (a recursion limit is no message)


def parse_pattern(pattern: str) -> Selector:
    """The predicate of a `-k` pattern: words joined by `and`, `or`, `not` and grouped with
    parentheses, each word selecting the tests whose `file::name` contains it, in any case.
    Raises `ValueError` naming what is malformed.

    Example:
        >>> pick = parse_pattern("Refund and not (big or slow)")
        >>> [pick(n) for n in ("s.afp::small_refund", "s.afp::BIG_refund", "s.afp::other")]
        [True, False, False]
    """
    tokens = _tokens(pattern)
    if not tokens:
        raise ValueError("the pattern is empty; leave -k out to run every test")
    parser = _Parser(tokens)
    selector = parser.either()
    if parser.at < len(tokens):
        raise ValueError(parser.stray())
    return selector


def _tokens(pattern: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _TOKEN.finditer(pattern) if m.group(1) or m.group(2)]


class _Parser:
    """Recursive descent over the tokens: `either` ← `both` (`or` `both`)*, `both` ← `one`
    (`and` `one`)*, `one` ← `not` `one` | `(` `either` `)` | word."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.at, self.depth = tokens, 0, 0  # depth: `not` and `(` open here

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def either(self) -> Selector:
        parts = [self.both()]
        while self.peek() == "or":
            self.at += 1
            parts.append(self.both())
        return parts[0] if len(parts) == 1 else (lambda ident: any(p(ident) for p in parts))

    def both(self) -> Selector:
        parts = [self.one()]
        while self.peek() == "and":
            self.at += 1
            parts.append(self.one())
        return parts[0] if len(parts) == 1 else (lambda ident: all(p(ident) for p in parts))

    def one(self) -> Selector:
        tok, prev = self.peek(), self.tokens[self.at - 1] if self.at else None
        self.at += 1
        if tok in ("not", "("):
            return self.nested(tok)
        if tok is None:
            raise ValueError("`(` is not closed; add a `)`" if prev == "(" else
                             f"the pattern ends with `{prev}`; a word must follow it")
        if tok == ")" and prev == "(":
            raise ValueError("`()` holds no word")
        if tok in ("and", "or", ")"):
            raise ValueError(f"`{tok}` needs a word before it")
        word = tok.lower()
        return lambda ident: word in ident.lower()

    def nested(self, tok: str) -> Selector:
        """`not` and its operand, or `(` and the expression up to its `)`."""
        self.depth += 1
        if self.depth > _DEEPEST:
            raise ValueError(f"the pattern nests `not` and `(` more than {_DEEPEST} deep")
        if tok == "not":
            inner = self.one()
            self.depth -= 1
            return lambda ident: not inner(ident)
        inner = self.either()
        if self.peek() != ")":
            raise ValueError("`(` is not closed; add a `)`" if self.peek() is None else self.stray())
        self.at += 1
        self.depth -= 1
        return inner

    def stray(self) -> str:
        """What is wrong with the token after a complete operand that is no `and`/`or`."""
        tok, prev = self.tokens[self.at], self.tokens[self.at - 1]
        if tok == ")":
            return "`)` closes no `(`"
        if tok == "not":
            return f"`not` after `{prev}`: put `and` or `or` between them"
        return f"`{prev}` and `{tok}` need `and` or `or` between them"
