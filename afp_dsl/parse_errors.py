"""Lark's syntax errors → one diagnostic that says what is wrong and names the fix.

Role:       `parser.parse`'s error path (imported only there): turns lark's `UnexpectedInput`
            into AFP001/AFP002 at the offending word (a character no token starts with:
            `parse_chars`), recognising the common mistakes (a missing `=` or `,`, `:` for `=`,
            a misspelt keyword, statement or rule word, a route clause out of order, an
            operator of another language, an unclosed block) before falling back to
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
    found = _found(tok)
    keyword_key = _keyword_as_key(src, tok, e)
    if keyword_key is not None:
        return keyword_key
    prev = _prev_token(e)
    operator_key = _operator_as_key(src, tok, prev, e)
    if operator_key is not None:
        return operator_key
    typo = _operator_typo(src, tok, prev)
    if typo is not None:
        return typo
    block_key = _unknown_block_key(src, tok, expected, prev, e) or _misplaced_word(src, tok, expected, prev, e)
    if block_key is not None:
        return block_key
    for rule in _MISTAKES:
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
# Comparison operators of other languages, as the lexer cuts them (`===` is `==` then `=`), and
# the operator meant.
_OPERATOR_TYPOS = {("==", "="): ("===", "=="), ("!=", "="): ("!==", "!="), ("<", ">"): ("<>", "!="),
                   ("=", "<"): ("=<", "<="), ("=>", None): ("=>", ">=")}


def _operator_typo(src: SourceFile, tok: lark.Token, prev: lark.Token | None) -> Diagnostic | None:
    """`===`, `!==`, `<>`, `=<`, `=>` in a condition: name the operator meant (`=<` is not `==`)."""
    if tok.start_pos is None:
        return None
    after = src.text[tok.end_pos:tok.end_pos + 1] if tok.end_pos is not None else ""
    glued = prev is not None and prev.end_pos == tok.start_pos
    key = ((str(prev), str(tok)) if glued and prev.type == "COMP_OP" else
           (str(tok), after) if str(tok) == "=" else (str(tok), None))
    if key not in _OPERATOR_TYPOS or (str(tok) == "=>" and not _in_condition(src, tok.start_pos)):
        return None
    written, meant = _OPERATOR_TYPOS[key]
    start = prev.start_pos if key[0] == str(prev) and glued and prev.type == "COMP_OP" else tok.start_pos
    return diag("AFP001", f"`{written}` is not an operator", Span(src.name, start, start + len(written)),
                f"did you mean `{meant}`?", help="comparisons are `==`, `!=`, `<`, `<=`, `>` and `>=`")


def _in_condition(src: SourceFile, pos: int) -> bool:
    """Is `pos` after a `when` on its line (a condition, not a route's arrow)?"""
    line_start = max(src.text.rfind("\n", 0, pos), src.text.rfind("\r", 0, pos)) + 1
    return re.search(r"\bwhen\b", src.text[line_start:pos]) is not None


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


def _found(tok: lark.Token) -> str:
    if tok.type in ("NAME",):
        return f"name `{tok}`"
    if tok.type in ("STRING", "MLSTRING"):
        return "string"
    if tok.type == "NUMBER":
        return f"number `{tok}`"
    if tok.type == "REGEX":
        return "regex"
    return f"`{tok}`"


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


# ---------------------------------------------------------------- common mistakes
def _missing_equals(tok, expected, prev):
    if "EQUAL" in expected and tok.type in ("STRING", "MLSTRING", "NUMBER", "LSQB", "NAME", "TRUE",
                                            "FALSE", "LBRACE"):
        word = getattr(prev, "value", None)
        if "STRING" in expected and tok.type != "STRING":  # a statement that takes a string
            return (f"`{word}` takes a string, found {_found(tok)}", "expected a string here",
                    f'write `{word} "..."`')
        if word == "by" and tok.type == "STRING":  # (`approve note "…" by "…"`: `by` read as a key)
            return ("`by` cannot stand here: in `approve`/`decline`, `by` comes before `note`",
                    "`by` out of place", 'write `approve by "name" note "..."` (each part optional)')
        return (f"expected `=` after the attribute name, found {_found(tok)}", "expected `=` before this",
                "attributes are written `key = value`")
    return None


def _colon_for_equals(tok, expected, prev):
    if tok.type == "COLON" and "EQUAL" in expected:
        return ("attributes use `=`, not `:`", "write `=` here", "attributes are written `key = value`; "
                "`key: value` is for maps and schema fields")
    return None


def _equals_for_colon(tok, expected, prev):
    if tok.type == "EQUAL" and "COLON" in expected:
        return ("map entries and fields use `:`, not `=`", "write `:` here", "write `key: value`")
    return None


def _single_equals(tok, expected, prev):
    if tok.type == "EQUAL" and "COMP_OP" in expected:
        return ("`=` cannot compare values", "did you mean `==`?", "comparisons use `==`")
    return None


def _missing_comma(tok, expected, prev):
    if "_COMMA" in expected and ({"RSQB", "RBRACE", "RPAR"} & expected) and tok.type in (
            "NAME", "STRING", "NUMBER", "LBRACE", "LSQB", "REGEX", "TRUE", "FALSE", "NULL"):
        if "EQUAL" not in expected and "RSQB" in expected | {"RPAR"}:
            return (f"expected `,` before {_found(tok)}", "missing `,` before this",
                    "separate the items of a list, map or call with commas")
    return None


def _unclosed_before_decl(tok, expected, prev):
    if prev is not None and str(prev) in DECL_KEYWORDS and tok.type == "NAME" and "EQUAL" in expected:
        return (f"`{prev} {tok}` starts a declaration, but the previous block is still open",
                "a declaration cannot start inside another",
                "close the previous declaration with `}` first")
    return None


def _unknown_decl_kind(tok, expected, prev):
    if tok.type == "NAME" and "AGENT" in expected and "SKILL" in expected and "IMPORT" in expected:
        close = closest(str(tok), DECL_KEYWORDS + ("import",))
        help = f"did you mean `{close}`?" if close else (
            "a declaration starts with one of: " + ", ".join(f"`{k}`" for k in DECL_KEYWORDS))
        return (f"unknown declaration kind `{tok}`", "expected a declaration", help)
    return None


def _missing_name(tok, expected, prev):
    if expected == {"NAME"} and tok.type == "LBRACE" and prev is not None and str(prev) in DECL_KEYWORDS:
        return (f"this `{prev}` declaration has no name", "expected a name before `{`",
                f"write `{prev} NAME {{ ... }}`")
    return None


def _empty_status(tok, expected, prev):
    if expected == {"NAME"} and tok.type in ("RSQB", "_COMMA") and prev is not None and prev.type == "LSQB":
        return ("a status list names no status", "expected a status name",
                "a route with `status [...]` fires only on the statuses listed; name at least one, "
                "like `status [failure]`, or drop `status`")
    return None


_EXPECTATIONS = ("answer", "called", "not", "route", "cursor", "outcome", "trace")


def _unknown_expectation(tok, expected, prev):
    """`expect answr …`: name the expectations, with the closest one."""
    if prev is None or str(prev) != "expect" or tok.type != "NAME":
        return None
    close = closest(str(tok), list(_EXPECTATIONS))
    return (f"`{tok}` is not an expectation", "unknown expectation",
            (f"did you mean `{close}`? " if close else "") + "expectations are: "
            + ", ".join(f"`expect {w}`" for w in _EXPECTATIONS))


def _because_without_condition(tok, expected, prev):
    """`deny when a and because "r"`: `because` read as a name after a dangling operator."""
    if prev is None or str(prev) != "because" or prev.type != "NAME" or "BECAUSE" not in expected:
        return None
    return ("the condition ends with an operator before `because`", "the reason of an unfinished condition",
            "complete the condition after `and`/`or`/`not` (or remove the operator), then "
            "`because \"reason\"`")


def _dot_index(tok, expected, prev):
    """`result.items.0`: a list is indexed with brackets."""
    if tok.type != "NUMBER" or not str(tok).isdigit() or prev is None or str(prev) != "." \
            or prev.end_pos != tok.start_pos:
        return None
    return (f"a path is indexed with `[{tok}]`, not `.{tok}`", "not a field name",
            f"write `[{tok}]` after the path to read item {tok} of a list")


def _schema_field(tok, expected, prev):
    """In a schema block (where `...` can stand): a quoted field name, or a default written
    after the description."""
    if "__ANON_0" not in expected or "STRING" in expected:  # (`__ANON_0`: the `...` terminal)
        return None
    if tok.type in ("STRING", "MLSTRING") and (prev is None or prev.type in ("LBRACE", "_COMMA")):
        return ("a field name is a name, not a string", "expected a field name",
                "write `name: type`; for a property whose name is no identifier (`first-name`), "
                "give the schema as a raw JSON Schema map: "
                '`input = { type: "object", properties: { "first-name": { type: "string" } } }`')
    if tok.type == "EQUAL" and prev is not None and prev.type in ("STRING", "MLSTRING"):
        return ("the default comes before the description", "default after the description",
                'write `name: type = default "description"`')
    return None


def _when_equals(tok, expected, prev):
    """`entry s when = …`, `deny when = …`: there `when` is a clause, not an attribute key."""
    if tok.type != "EQUAL" or prev is None or prev.type != "WHEN":
        return None
    return ("`when` here takes the condition without `=`", "remove this `=`",
            "write `when CONDITION` in entries, routes and rules; only a fact's or an "
            "instruction's `when` is an attribute (`when = CONDITION`)")


_RULES = ("allow", "deny", "ask")


def _unknown_rule_word(tok, expected, prev):
    """`deni when …` in a policy block: name the rule words, with the closest one."""
    if tok.type != "NAME" or not {"ALLOW", "DENY", "ASK"} <= expected:
        return None
    close = closest(str(tok), _RULES)
    return (f"`{tok}` does not start a rule", "unknown rule",
            (f"did you mean `{close}`? " if close else "") + "a rule is `allow`, `deny` or `ask`, "
            "then `when CONDITION`, then `because \"reason\"`")


_MISTAKES = (_unknown_decl_kind, _missing_name, _unclosed_before_decl, _colon_for_equals, _equals_for_colon, _single_equals,
             _missing_equals, _missing_comma, _empty_status, _unknown_expectation,
             _because_without_condition, _unknown_rule_word, _when_equals,
             _dot_index, _schema_field)
