"""Lark's syntax errors → one diagnostic that says what is wrong and names the fix.

Role:       `parser.parse`'s error path (imported only there): turns lark's `UnexpectedInput`
            into AFP001/AFP002 at the offending word: a character no token starts with is
            `parse_chars`' to explain, a token the parser did not expect is first tried as a
            reserved word or operator written as a key, a route's `on` or `status` given two
            values (`on t, u`), an unknown block key or a misplaced word, then as one of `parse_mistakes`' common mistakes, before falling back to
            "expected one of …".
Emits:      AFP001 syntax-error, AFP002 unterminated-string, AFP104 unknown-attribute (a key the
            grammar cannot take: `answer = 1`, `inptu { ... }`).
Invariants: never raises; one diagnostic per error; reads only the error, the source text and
            the collector's open braces.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .codes import diag
from .diagnostics import Diagnostic
from .parse_chars import bad_character, unclosed_triple
from .parse_mistakes import MISTAKES, found_text, operator_typo
from .parser import DECL_KEYWORDS, describe
from .source import SourceFile, Span
from .suggest import closest

if TYPE_CHECKING:
    import lark
    from lark.exceptions import UnexpectedInput, UnexpectedToken

    from .parser import _Collector


def syntax_diagnostic(src: SourceFile, e: UnexpectedInput, col: _Collector) -> Diagnostic:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
    if isinstance(e, UnexpectedCharacters):
        return bad_character(src, e)
    if isinstance(e, UnexpectedToken):
        return _unexpected_token(src, e, col)
    if isinstance(e, UnexpectedEOF):  # pragma: no cover - LALR reports EOF as a token
        return diag("AFP001", "unexpected end of file", Span(src.name, len(src.text), len(src.text)))
    return diag("AFP001", "syntax error", Span(src.name, 0, 0))  # pragma: no cover


def _unexpected_token(src: SourceFile, e: UnexpectedToken, col: _Collector) -> Diagnostic:
    tok = e.token
    expected = set(e.accepts or e.expected or ())
    if tok.type == "$END":
        return _unexpected_eof(src, expected, col)
    start = tok.start_pos if tok.start_pos is not None else len(src.text)
    span = Span(src.name, start, tok.end_pos if tok.end_pos is not None else start)
    if tok.type == "STRING" and str(tok) == '""' and src.text.startswith('"', span.end):
        return unclosed_triple(src, start)  # a closed `"""` would have lexed as one string
    found = found_text(tok)
    keyword_key = _keyword_as_key(src, tok, e)
    if keyword_key is not None:
        return keyword_key
    prev = _prev_token(e)
    operator_key = _operator_as_key(src, tok, prev, e)
    if operator_key is not None:
        return operator_key
    typo = operator_typo(src, tok, prev)
    if typo is not None:
        return typo
    clause_list = _route_clause_list(src, tok, expected, prev, e)
    if clause_list is not None:
        return clause_list
    block_key = _unknown_block_key(src, tok, expected, prev, e) or _misplaced_word(src, tok, expected, prev, e)
    if block_key is not None:
        return block_key
    for rule in MISTAKES:
        hit = rule(tok, expected, prev)
        if hit is not None:
            message, label, help = hit
            return diag("AFP001", message, span, label, help=help,
                        notes=(f"expected {_expected_words(expected)}",))
    return diag("AFP001", f"unexpected {found}", span, f"expected {_expected_words(expected)}")


def _keyword_as_key(src: SourceFile, tok: lark.Token, e: UnexpectedToken) -> Diagnostic | None:
    """AFP104 for a reserved word written as an attribute key (`answer = 1`), or as a block key
    the declaration does not take (`steps { ... }` in a tool), where the parser could not take
    it as one (after a value, the LALR state admits only some keywords): the same diagnostic,
    with the same suggestion, as for any other unknown key."""
    word = str(tok)
    if not word.isidentifier() or tok.type != word.upper():  # (keywords are their own type)
        return None
    rest = src.text[tok.end_pos:tok.end_pos + 64].lstrip(" \t\r\n")
    block = rest.startswith("{")  # (`steps { ... }` in a tool, after an attribute)
    if not block and (not rest.startswith("=") or rest.startswith("==")):
        return None
    kind = _enclosing_kind(e)
    if kind is None:
        return None
    from .attributes import BLOCK_KEYS, SCHEMAS, unknown_attribute  # (the error path only)
    if block and (kind not in SCHEMAS or word in BLOCK_KEYS.get(kind, ())):
        return None  # (a block the kind takes, misplaced: the syntax error says where)
    return unknown_attribute(kind, word, Span(src.name, tok.start_pos, tok.end_pos))


_OPERATORS = frozenset(("and", "or", "in", "not", "matches", "mentions"))
def _operator_as_key(src: SourceFile, tok: lark.Token, prev: lark.Token | None,
                     e: UnexpectedToken) -> Diagnostic | None:
    """AFP104 for an operator word written as an attribute key after a value (`description =
    "x" and = 1`): the parser read it as the operator continuing the value, and stopped only at
    the `=`; as for any other unknown key, not "unexpected `=`"."""
    if tok.type != "EQUAL" or prev is None or prev.end_pos is None or str(prev) not in _OPERATORS:
        return None
    if prev.type != str(prev).upper() or src.text[tok.end_pos:tok.end_pos + 1] == "=":
        return None  # (a name, or `==`)
    kind = _enclosing_kind(e)
    if kind is None:
        return None
    from .attributes import unknown_attribute  # (the error path only)
    return unknown_attribute(kind, str(prev), Span(src.name, prev.start_pos, prev.end_pos))


# `on t, u` / `on t or u` / `status success, failure` at the end of a route: a `,` ends the
# statement (graph statements may be separated by commas) and `or` is no clause, so the next
# name is read as an attribute key and the parser stops at what follows it.
_N = r"[A-Za-z_][A-Za-z0-9_.]*"
_CLAUSE_JOIN = re.compile(rf"(?<![.\w])(on|status)\s+({_N})\s*(,|\bor\b|\band\b)\s*({_N})?\s*$")


def _route_clause_list(src: SourceFile, tok: lark.Token, expected: set[str],
                       prev: lark.Token | None, e: UnexpectedToken) -> Diagnostic | None:
    """A route's `on` or `status` given several values joined by `,`, `or` or `and`: one tool
    per route, and several statuses as a list."""
    if "EQUAL" not in expected or prev is None or tok.start_pos is None \
            or _enclosing_kind(e) != "graph":
        return None
    m = _CLAUSE_JOIN.search(src.text[max(0, tok.start_pos - 400):tok.start_pos])
    if m is None or (m.group(4) is None) != (m.group(3) in ("or", "and")) \
            or (m.group(4) is None and tok.type != "NAME"):
        return None  # (`on t or` then the next name: the parser stops at that name)
    clause, first, join = m.group(1), m.group(2), m.group(3)
    other, other_end = (m.group(4), prev.end_pos) if m.group(4) else (str(tok), tok.end_pos)
    base = max(0, tok.start_pos - 400)
    span = Span(src.name, base + m.start(3), other_end if other_end is not None else tok.start_pos)
    written = f"{first}{join if join == ',' else ' ' + join} {other}"
    if clause == "on":
        return diag("AFP001", f"a route waits for one tool: `on {written}` names two", span,
                    "a second tool", help=f"write one route per tool (`on {first}` and `on "
                    f"{other}`), or leave `on` out to hear every tool of the source skill")
    return diag("AFP001", f"several statuses are written as a list, not `status {written}`", span,
                "a second status", help=f"write `status [{first}, {other}]`")


def _unknown_block_key(src: SourceFile, tok: lark.Token, expected: set[str],
                       prev: lark.Token | None, e: UnexpectedToken) -> Diagnostic | None:
    """AFP104 for an unknown key written before a block (`inptu { ... }` in a tool, `step { ... }`
    in a skill, `befor t { ... }` in a policy): an unknown attribute, with the same suggestion as
    `inptu = ...` would get, not "expected `=`". A known key before `{` (`impl { ... }`) stays a
    syntax error."""
    if "EQUAL" not in expected or prev is None or prev.end_pos is None or not str(prev).isidentifier():
        return None
    if str(prev) in DECL_KEYWORDS:  # `tool x {` in an unclosed block: `_unclosed_before_decl`
        return None
    if tok.type == "LBRACE":
        kind = _enclosing_kind(e)
    elif tok.type in ("NAME", "STAR") and src.text[tok.end_pos:].lstrip().startswith("{"):
        kind = _enclosing_kind(e)
        kind = kind if kind == "policy" else None  # (only a policy block names a tool)
    else:
        return None
    word = str(prev)
    from .attributes import BLOCK_KEYS, SCHEMAS, unknown_attribute  # (the error path only)
    if kind is None or word in SCHEMAS[kind].attrs or word in BLOCK_KEYS.get(kind, ()):
        return None
    return unknown_attribute(kind, word, Span(src.name, prev.start_pos, prev.end_pos))


_STATEMENTS = {"graph": ("entry", "route"),
               "test": ("user", "model", "tool", "approve", "decline", "expect")}


def _misplaced_word(src: SourceFile, tok: lark.Token, expected: set[str], prev: lark.Token | None,
                    e: UnexpectedToken) -> Diagnostic | None:
    """AFP001 naming the fix for a route clause out of order or given twice (`status s on t`,
    `when … on t`) and for a misspelt statement a graph or test body could only read as an
    attribute key (`rout a -> b`, `users "hi"`: "expected `=`" would mislead)."""
    kind = _enclosing_kind(e)
    word = str(tok) if tok.type in ("ON", "STATUS", "WHEN") else None
    if word is None and "EQUAL" in expected and prev is not None and prev.type == "NAME":
        tok, word = prev, str(prev)
    if word is None or tok.end_pos is None or kind not in _STATEMENTS:
        return None
    span = Span(src.name, tok.start_pos, tok.end_pos)
    if kind == "graph" and word in ("on", "status", "when"):
        return diag("AFP001", f"`{word}` cannot stand here", span, "clause out of place",
                    help="a route takes each clause once, in the order `on TOOL`, `status S`, "
                         "`when EXPR`, then the label; an entry takes `when EXPR`, then the label")
    close = closest(word, _STATEMENTS[kind]) if tok.type == "NAME" else None
    if close is None:
        return None
    return diag("AFP001", f"`{word}` does not start a statement of a {kind}", span,
                "unknown statement", help=f"did you mean `{close}`?")


def _enclosing_kind(e: UnexpectedToken) -> str | None:
    """The kind of the declaration whose body the parser is in (its keyword on the stack)."""
    import lark
    ip = getattr(e, "interactive_parser", None)
    stack = getattr(getattr(ip, "parser_state", None), "value_stack", None) or []
    for v in reversed(stack):
        if isinstance(v, lark.Token) and str(v) in DECL_KEYWORDS and v.type == str(v).upper():
            return str(v)
    return None


def _unexpected_eof(src: SourceFile, expected: set[str], col: _Collector) -> Diagnostic:
    end = Span(src.name, len(src.text), len(src.text))
    if col.open_braces and "RBRACE" in expected:
        b = col.open_braces[-1]
        opener = Span(src.name, b.start_pos, b.end_pos)
        from .diagnostics import Label
        return diag("AFP001", "unexpected end of file: a `{` is never closed", end,
                    "expected `}` here", help="add the missing `}`",
                    secondary=(Label(opener, "this `{` is not closed", False),))
    return diag("AFP001", "unexpected end of file", end, f"expected {_expected_words(expected)}")


def _prev_token(e: UnexpectedToken) -> lark.Token | None:
    import lark
    ip = getattr(e, "interactive_parser", None)
    if ip is None:
        return None
    stack = getattr(ip.parser_state, "value_stack", None) or []
    for v in reversed(stack):
        if isinstance(v, lark.Token):
            return v
        if isinstance(v, lark.Tree):
            toks = list(v.scan_values(lambda x: isinstance(x, lark.Token)))
            if toks:
                return toks[-1]
    return None


def _expected_words(expected: set[str]) -> str:
    decl_terms = {k.upper() for k in DECL_KEYWORDS}
    declaration = decl_terms <= expected and "NAME" not in expected  # (not where any word is a key)
    if declaration:
        expected = (expected - decl_terms - {"IMPORT"})
    words = sorted({describe(t) for t in expected if not t.startswith("__")})
    if declaration:
        words.append("a declaration (`agent`, `tool`, `skill`, ...)")
    keywords = [w for w in words if w.startswith("`") and w[1:-1].isalpha()]
    others = [w for w in words if w not in keywords]
    if len(keywords) > 5:
        others.append("a keyword")
    else:
        others.extend(keywords)
    if not others:
        return "something else"
    if len(others) == 1:
        return others[0]
    return ", ".join(others[:-1]) + " or " + others[-1]
