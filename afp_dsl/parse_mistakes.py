"""The common mistakes a syntax error is recognised as, each with its own message and fix.

Role:       `parse_errors`' rules (imported only there): each rule looks at the token the parser
            met, what it expected and the token before, and names the mistake (a missing `=` or
            `,`, `:` for `=`, a misspelt declaration kind, expectation or rule word, `when =` in
            a clause, `.0` for `[0]`, a quoted schema field) or returns None; `operator_typo`
            names the comparison operator meant for one of another language (`===`, `<>`).
Emits:      (through `parse_errors`) AFP001 syntax-error.
Invariants: pure; never raises; a rule returns (message, label, help) or None.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .codes import diag
from .diagnostics import Diagnostic
from .parser import DECL_KEYWORDS
from .source import SourceFile, Span
from .suggest import closest

if TYPE_CHECKING:
    import lark


# Comparison operators of other languages, as the lexer cuts them (`===` is `==` then `=`), and
# the operator meant.
_OPERATOR_TYPOS = {("==", "="): ("===", "=="), ("!=", "="): ("!==", "!="), ("<", ">"): ("<>", "!="),
                   ("=", "<"): ("=<", "<="), ("=>", None): ("=>", ">=")}


def operator_typo(src: SourceFile, tok: lark.Token, prev: lark.Token | None) -> Diagnostic | None:
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



def found_text(tok: lark.Token) -> str:
    """How the token an error met is named in a message (`name `x``, `string`, ...)."""
    if tok.type in ("NAME",):
        return f"name `{tok}`"
    if tok.type in ("STRING", "MLSTRING"):
        return "string"
    if tok.type == "NUMBER":
        return f"number `{tok}`"
    if tok.type == "REGEX":
        return "regex"
    return f"`{tok}`"



# ---------------------------------------------------------------- common mistakes
def _missing_equals(tok, expected, prev):
    if "EQUAL" in expected and tok.type in ("STRING", "MLSTRING", "NUMBER", "LSQB", "NAME", "TRUE",
                                            "FALSE", "LBRACE"):
        word = getattr(prev, "value", None)
        if "STRING" in expected and tok.type != "STRING":  # a statement that takes a string
            return (f"`{word}` takes a string, found {found_text(tok)}", "expected a string here",
                    f'write `{word} "..."`')
        if word == "by" and tok.type == "STRING":  # (`approve note "…" by "…"`: `by` read as a key)
            return ("`by` cannot stand here: in `approve`/`decline`, `by` comes before `note`",
                    "`by` out of place", 'write `approve by "name" note "..."` (each part optional)')
        return (f"expected `=` after the attribute name, found {found_text(tok)}", "expected `=` before this",
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
            return (f"expected `,` before {found_text(tok)}", "missing `,` before this",
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


MISTAKES = (_unknown_decl_kind, _missing_name, _unclosed_before_decl, _colon_for_equals, _equals_for_colon, _single_equals,
             _missing_equals, _missing_comma, _empty_status, _unknown_expectation,
             _because_without_condition, _unknown_rule_word, _when_equals,
             _dot_index, _schema_field)
