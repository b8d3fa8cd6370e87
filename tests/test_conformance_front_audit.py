"""Conformance audit of the front end (spec/language.md §2–§6, tooling.md §3): cases the
earlier suites did not pin, each a behaviour that was wrong before its fix.
"""
from __future__ import annotations

import pytest

import afp_dsl
from afp_dsl.api import analyse
from afp_dsl.fmt import format_source
from afp_dsl.render import render
from test_fastparse import assert_same


def only(text: str):
    """The one diagnostic `check` reports for `text`."""
    diags = afp_dsl.check(text)
    assert len(diags) == 1, [(d.code, d.message) for d in diags]
    return diags[0]


def column(text: str, d) -> int:
    return d.labels[0].span.start - text.rfind("\n", 0, d.labels[0].span.start)


def _instruction(regex: str) -> str:
    return ("agent a { context = [i] }\n"
            f'instruction i {{ prompt = "p" when = message matches {regex} }}\n')


# ---------------------------------------------------------------- §2 regex literals
@pytest.mark.parametrize("regex, pattern", [
    ("/[^/]+/", "[^/]+"),
    ("/https?:\\/\\/[^\\s/]+\\/[a-z]+/i", "https?:\\/\\/[^\\s/]+\\/[a-z]+"),
    ("/[/]/", "[/]"),
    ("/[]/]x/", "[]/]x"),  # (a `]` first in a class is text, in Python `re`)
    ("/a[\\]/]b/", "a[\\]/]b"),
])
def test_a_slash_inside_a_character_class_does_not_end_the_regex(regex: str, pattern: str) -> None:
    """Python `re` needs no escape for `/`; inside `[...]` it cannot end the literal (as in
    JavaScript), so `/[^/]+/` is one regex, not `/[^/` and a stray `]+/`."""
    text = _instruction(regex)
    program, diags = analyse(text)
    assert diags == [] and program is not None
    when = program.modules[0].get("i").when
    assert when.right.pattern == pattern
    assert assert_same(text) in ("same", "gave up")
    assert format_source(text) == text  # the formatter writes the class as it stands


def test_a_regex_with_a_class_runs_as_written() -> None:
    text = ("agent a { context = [i] }\n"
            'instruction i { prompt = "p" when = message matches /^[^/]+\\/[0-9]+$/ }\n')
    program, diags = analyse(text)
    assert diags == []
    import re
    pattern = program.modules[0].get("i").when.right.pattern
    assert re.search(pattern, "orders/42") and not re.search(pattern, "a/b/42")


def test_an_unclosed_class_is_still_the_invalid_regex_at_the_literal() -> None:
    text = _instruction("/a[b/")
    d = only(text)
    assert d.code == "AFP004" and "character set" in d.message
    assert column(text, d) == text.splitlines()[1].index("/a[") + 1


@pytest.mark.parametrize("regex", ["/abc", "/a\\/", "/a\\"])
def test_an_unterminated_regex_says_so_at_its_slash(regex: str) -> None:
    text = ("agent a { context = [i] }\n"
            f'instruction i {{ prompt = "p" when = message matches {regex}\n}}\n')
    d = only(text)
    assert d.code == "AFP001" and d.message == "unterminated regex"
    assert column(text, d) == text.splitlines()[1].index(regex) + 1
    assert "same line" in d.help


@pytest.mark.parametrize("comment", ["// a note", "/* a note */"])
def test_a_comment_of_another_language_points_to_hash(comment: str) -> None:
    text = f'agent a {{ system = "x" }} {comment}\n'
    d = only(text)
    assert d.code == "AFP001" and d.message == f"unexpected `{comment[:2]}`"
    assert (d.labels[0].span.start, d.labels[0].span.end) == (text.index("/"), text.index("/") + 2)
    assert "comments start with `#`" in d.help


# ---------------------------------------------------------------- AFP001 wording
def test_a_syntax_error_where_a_key_stands_does_not_offer_a_declaration() -> None:
    """Any word can be a key there, so "a declaration (`agent`, ...)" would mislead."""
    text = "fact f { data = { /x/: 1 } }\n"
    d = only(text)
    report = render([d], {"<text>": text}, "text")
    assert d.code == "AFP001" and "declaration" not in report
    top = only("agent a {} }\n")
    assert "a declaration (`agent`" in render([top], {"<text>": "agent a {} }\n"}, "text")


# ---------------------------------------------------------------- §2 strings: JSON escapes
@pytest.mark.parametrize("literal, lone, at", [
    ('"\\ud83d\\ude00 \\ud83d"', "\\ud83d", 14),  # a pair, then a high half alone
    ('"a\\ude00b"', "\\ude00", 2),                  # a low half alone
    ('"\\\\ud83d \\udc4d"', "\\udc4d", 9),          # `\\ud83d` is a backslash and text
    ('"\\ud83d\\ud83d\\ude00"', "\\ud83d", 1),       # two high halves: the first is alone
])
def test_a_lone_surrogate_escape_is_reported_at_the_escape(literal: str, lone: str, at: int) -> None:
    """Before: the span covered the whole string, and the message named no escape."""
    text = f"agent a {{ system = {literal} }}\n"
    d = only(text)
    assert d.code == "AFP005" and f"`{lone}`" in d.message
    start = text.index(literal) + at
    assert text[start:start + 6] == lone
    assert (d.labels[0].span.start, d.labels[0].span.end) == (start, start + 6)


# ---------------------------------------------------------------- "did you mean" for every name
@pytest.mark.parametrize("text, meant", [
    ('tool t { description = "d" impl = pyhton("a.b:c") }\n', "python"),
    ('tool t { description = "d" impl = return({ ok: true }) }\n', "returns"),
    ('agent b { }\ntool t { description = "d" impl = agnet(b) }\n', "agent"),
    ('steering s { prompt = fiel("a.md") }\n', "file"),
    ('tool t { description = "d" input = flie("s.json") }\n', "file"),
    ('agent a { context = [i] }\ninstruction i { prompt = "p" when = retruned(t) }\n', "returned"),
    ('agent a { context = [i] }\ninstruction i { prompt = "p" when = actve(s) and iteration > 1 }\n',
     "active"),
])
def test_a_misspelt_call_gets_a_suggestion(text: str, meant: str) -> None:
    """Before: "expected `python(...)` …" with no help for `pyhton(...)`."""
    d = only(text)
    assert d.code == "AFP106" and d.help.startswith(f"did you mean `{meant}(...)`?")


def test_a_call_nothing_like_the_expected_ones_gets_no_suggestion() -> None:
    d = only('tool t { description = "d" impl = zzz(1) }\n')
    assert d.code == "AFP106" and d.help is None


@pytest.mark.parametrize("block", ["before t", "after t", "input", "output"])
def test_a_misspelt_rule_word_gets_a_suggestion(block: str) -> None:
    """Before: "unexpected name `deni`", with no help."""
    text = f'tool t {{ description = "d" }}\npolicy p {{ {block} {{ deni when iteration > 1 because "r" }} }}\n'
    d = only(text)
    assert d.code == "AFP001" and d.message == "`deni` does not start a rule"
    assert d.help.startswith("did you mean `deny`?")
    assert d.labels[0].span.start == text.index("deni")


def test_a_class_left_open_past_the_closing_slash_is_the_invalid_regex() -> None:
    """`/sk-[a-z{20,}/]`: the class swallows the `/`; the fault is the `[` never closed (AFP004
    at the literal, as it reads with `/` ending it), not a generic syntax error."""
    text = "agent a { redact = [r] }\nredact r {\n  patterns = [/sk-[A-Za-z0-9{20,}/]\n}\n"
    d = only(text)
    assert d.code == "AFP004" and "unterminated character set" in d.message
    start = text.index("/sk-")
    assert (d.labels[0].span.start, d.labels[0].span.end) == (start, text.index("]\n}"))
    assert any("inside a character class" in n for n in d.notes)


def test_a_slash_that_starts_no_regex_is_one_stray_to_the_end_of_its_line() -> None:
    """The scan does not restart at each `/` after a failed regex (a long line of unclosed
    classes would otherwise cost time quadratic in its length): the rest of the line is one
    stray token, and the fast path hands the text to Lark."""
    from afp_dsl import fastlex
    kinds, vals, *_ = fastlex.lex("a /[b/][c/][d/]\nz")
    assert kinds == ["W", "~", "W", "$"] and vals[1] == "/[b/][c/][d/]"
    assert fastlex.token_kind("/[b/][c/]") == "~" and fastlex.token_kind("/[b/]c/i") == "R"


# ---------------------------------------------------------------- one root cause, one diagnostic
_TWICE = {
    "test arguments": ('tool t { description = "d" input { a: string } }\n'
                       'tool t { description = "e" input { b: string } }\n'
                       'agent x { tools = [t] }\n'
                       'test s { user "hi" model calls t { b: "1" } model says "ok" }\n'),
    "route guard": ('tool t { description = "d" output { a: string } }\n'
                    'tool t { description = "e" output { b: string } }\n'
                    'skill s { description = "d" tools = [t] }\nskill s2 { description = "d" }\n'
                    'graph g { entry s route s -> s2 on t when result.b == "x" }\n'
                    'agent x { graph = g }\n'),
    "policy rule": ('tool t { description = "d" input { a: string } }\n'
                    'tool t { description = "e" input { b: integer } }\n'
                    'policy p { before t { deny when args.b > 1 because "r" } }\n'
                    'agent x { tools = [t] policies = [p] }\n'),
    "expect route": ('skill s { description = "d" tools = [t] }\nskill s2 { description = "d" }\n'
                     'skill s3 { description = "d" }\n'
                     'graph g { entry s route s -> s2 on t }\ngraph g { entry s route s -> s3 on t }\n'
                     'tool t { description = "d" }\n'
                     'agent x { graph = g }\n'
                     'test u { user "hi" model says "ok" expect route s -> s3 }\n'),
}


@pytest.mark.parametrize("case", sorted(_TWICE))
def test_a_name_declared_twice_is_one_diagnostic(case: str) -> None:
    """Which of the two declarations a guard, rule or script was written against is unknown:
    AFP103 says so, and no check reads the first one's schema or routes against it (before:
    AFP405, AFP304, AFP308 or AFP406 as well)."""
    errors_and_warnings = [d.code for d in afp_dsl.check(_TWICE[case]) if d.code != "AFP203"]
    assert errors_and_warnings == ["AFP103"]


def test_the_first_of_two_tools_still_types_its_own_check_in() -> None:
    text = ('tool t { description = "d" input { a: string } check_in = args.b == 1 }\n'
            'tool t { description = "e" input { b: integer } }\n')
    assert sorted(d.code for d in afp_dsl.check(text)) == ["AFP103", "AFP304"]


def test_an_import_path_with_a_bad_escape_is_that_error_alone() -> None:
    """Before: AFP005 at the escape and AFP107 "module `std\\qredact` not found" as well."""
    text = 'import "std\\qredact" as r\nagent a { redact = [r.cards] }\n'
    d = only(text)
    assert d.code == "AFP005" and d.labels[0].span.start == text.index("\\q")


_BAD_ESCAPE_CASES = {
    "file path": 'steering s { prompt = file("p\\q.md") }\n',
    "python target": 'tool t { description = "d" impl = python("a\\q:b") }\n',
    "choice": 'agent a { continuity = "r\\qun" }\n',
    "status guard": ('tool t { description = "d" }\nskill s { description = "d" tools = [t] }\n'
                     'skill s2 { description = "d" }\n'
                     'graph g { entry s route s -> s2 on t when status == "fa\\qil" }\nagent a { graph = g }\n'),
    "typed guard": ('tool t { description = "d" output { a: "x" | "y" } }\n'
                    'skill s { description = "d" tools = [t] }\nskill s2 { description = "d" }\n'
                    'graph g { entry s route s -> s2 on t when result.a == "\\q" }\nagent a { graph = g }\n'),
    "returns": 'tool t { description = "d" output { a: "x" } impl = returns({ a: "\\q" }) }\n',
    "map keys": 'fact f { data = { "\\q": 1, "\\q": 2 } }\n',
    "schema default": 'tool t { description = "d" input { a: "x" | "y" = "\\q" } }\n',
    "schema pattern": 'tool t { description = "d" input { a: string(pattern: "\\q") } }\n',
    "script key": ('tool t { description = "d" input { a: string } }\nagent a { tools = [t] }\n'
                   'test x { user "hi" model calls t { "\\q": "x" } model says "ok" }\n'),
}


@pytest.mark.parametrize("case", sorted(_BAD_ESCAPE_CASES))
def test_a_string_with_a_bad_escape_is_that_error_alone(case: str) -> None:
    """The string as written is not the text meant, so nothing is looked up, compared or
    validated with it (before: AFP109, AFP106, AFP306, AFP305, AFP302, AFP004 or AFP405 too)."""
    assert [d.code for d in afp_dsl.check(_BAD_ESCAPE_CASES[case])] == ["AFP005"] * (
        2 if case == "map keys" else 1)


@pytest.mark.parametrize("text", [
    'agent a { context = [i] }\ninstruction i { prompt = "p" when = iteration == -1e999 }\n',
    'agent a { context = [i] }\ninstruction i { prompt = "p" when = iteration in [1e999] }\n',
    'tool t { description = "d" input { a: integer(min: 1) = 1e999 } }\n',
])
def test_a_number_out_of_range_is_that_error_alone(text: str) -> None:
    """Before: lowered as 0, it also made the guard unsatisfiable (AFP208) or the default
    invalid (AFP302)."""
    assert [d.code for d in afp_dsl.check(text)] == ["AFP008"]


@pytest.mark.parametrize("written, meant", [
    ("===", "=="), ("!==", "!="), ("<>", "!="), ("=<", "<="), ("=>", ">="),
])
def test_a_comparison_operator_of_another_language_names_the_one_meant(written: str, meant: str) -> None:
    """Before: "unexpected `=`" (or, for `=<`, "did you mean `==`?")."""
    text = f'agent a {{ context = [i] }}\ninstruction i {{ prompt = "p" when = iteration {written} 1 }}\n'
    d = only(text)
    assert d.code == "AFP001" and d.message == f"`{written}` is not an operator"
    assert d.labels[0].message == f"did you mean `{meant}`?"
    start = text.index(f" {written} ") + 1
    assert (d.labels[0].span.start, d.labels[0].span.end) == (start, start + len(written))


def test_a_fat_arrow_in_a_route_still_says_routes_use_the_thin_one() -> None:
    d = only('skill s { description = "d" }\nskill t { description = "d" }\n'
             'graph g { entry s route s => t when iteration > 1 }\nagent a { graph = g }\n')
    assert d.message == "routes use `->`, not `=>`"


# ---------------------------------------------------------------- §5.2 constraints
@pytest.mark.parametrize("written, meant", [
    ("emial", "email"), ("datetime", "date-time"), ("url", "uri"), ("uuid4", "uuid"),
])
def test_a_misspelt_format_is_a_warning_naming_the_one_meant(written: str, meant: str) -> None:
    """Before: taken silently (a format is an annotation, so nothing ever flagged the typo)."""
    text = f'tool t {{ description = "d" input {{ a: string(format: "{written}") }} }}\n'
    d = only(text)
    assert (d.code, d.severity.value) == ("AFP301", "warning") and f'`"{meant}"`' in d.help
    assert d.labels[0].span.start == text.index(f'"{written}"')
    program, _ = analyse(text)  # (the format is kept as written)
    assert program.modules[0].get("t").input.json["properties"]["a"]["format"] == written


@pytest.mark.parametrize("fmt", ["email", "date-time", "phone", "timestamp", "int32"])
def test_a_defined_or_host_format_is_clean(fmt: str) -> None:
    assert afp_dsl.check(f'tool t {{ description = "d" input {{ a: string(format: "{fmt}") }} }}\n') == []


# ---------------------------------------------------------------- §3 references
@pytest.mark.parametrize("ref", ["r.cards.x", "t[0]"])
def test_a_reference_of_the_wrong_shape_says_what_a_reference_is(ref: str) -> None:
    d = only(f'import "std/redact" as r\nagent a {{ redact = [{ref}] }}\n')
    assert d.code == "AFP106" and "`alias.name`" in d.help


@pytest.mark.parametrize("text", [
    'skill s { description = "d" }\ngraph g { entry s when = iteration > 1 }\nagent a { graph = g }\n',
    'policy p { input { deny when = iteration > 1 because "r" } }\n',
])
def test_when_written_as_an_attribute_in_a_clause_says_to_drop_the_equals(text: str) -> None:
    """Before: "unexpected `=`"."""
    d = only(text)
    assert d.code == "AFP001" and "without `=`" in d.message
    assert text[d.labels[0].span.start] == "="


@pytest.mark.parametrize("guard, meant", [('tool == "lokup"', "lookup"), ('skill == "triag"', "triage"),
                                          ('tool in ["lokup"]', "lookup")])
def test_a_misspelt_tool_or_skill_name_in_a_guard_gets_a_suggestion(guard: str, meant: str) -> None:
    """Before: AFP208 with the generic "fix the contradiction" help."""
    text = ('tool lookup { description = "d" }\nskill triage { description = "d" tools = [lookup] }\n'
            f'skill s2 {{ description = "d" }}\ngraph g {{ entry triage route triage -> s2 when {guard} }}\n'
            'agent a { graph = g }\n')
    d = only(text)
    assert d.code == "AFP208" and d.help.startswith(f'did you mean `"{meant}"`?')


# ---------------------------------------------------------------- tooling §3: the text format
@pytest.mark.parametrize("before", ["x" * 5000, "日" * 3000, "x" * 10])
def test_a_very_long_line_is_drawn_cut_around_the_caret(before: str) -> None:
    """Before: the whole line was printed for each diagnostic on it (a minified spec of one
    16 MiB line: 16 MiB of output per diagnostic), with the caret thousands of columns right."""
    text = f'agent a {{ system = "{before}" sytem = "y" }}\n'
    d = only(text)
    report = render([d], {"<text>": text}, "text").splitlines()
    row = next(r for r in report if r.startswith("1 |"))
    carets = next(r for r in report if "^" in r)
    assert all(len(r) < 260 for r in report)
    import unicodedata
    def width(s: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in s)
    # the caret stands under the `s` of `sytem`, counted in terminal columns
    at = carets.index("^")
    cols, i = 0, 0
    while cols < at:
        cols += width(row[i])
        i += 1
    assert row[i:i + 5] == "sytem"
    assert (len(text) > 300) == ("…" in row)


# ---------------------------------------------------------------- §2 stray characters
@pytest.mark.parametrize("text, hint", [
    ("agent caf\u00e9 { }\n", "ASCII letters"),
    ("agent a {\u00a0}\n", "plain space"),
    ("agent a\u200b { }\n", "plain space"),
    ('agent a { system \uff1d "x" }\n', "plain `=`"),
    ('agent a { system = \u201cx\u201d }\n', "straight double quotes"),
])
def test_a_stray_character_beyond_ascii_says_what_to_write(text: str, hint: str) -> None:
    """Before: "unexpected character" with no help."""
    d = only(text)
    assert d.code == "AFP001" and hint in d.help


@pytest.mark.parametrize("text", [
    'tool lookup { description = "d" }\nagent a { tools = [lookup] context = [i] }\n'
    'instruction i { prompt = "p" when = last.tool == "lokup" }\n',
    'tool lookup { description = "d" }\nagent a { tools = [lookup] policies = [p] }\n'
    'policy p { before * { deny when tool == "lokup" because "r" } }\n',
])
def test_a_tool_name_no_tool_has_is_a_type_mismatch_with_a_suggestion(text: str) -> None:
    """`tool`/`last.tool` is always the name of a declared tool (a host binds only those) or a
    built-in. Before: taken silently, so the instruction or rule never applied."""
    d = only(text)
    assert d.code == "AFP305" and d.help == 'did you mean `"lookup"`?'


def test_tool_names_are_not_judged_when_an_import_failed() -> None:
    text = ('import "./nowhere.afp" as n\nagent a { context = [i] }\n'
            'instruction i { prompt = "p" when = last.tool == "from_there" }\n')
    assert [d.code for d in afp_dsl.check(text)] == ["AFP107"]


def test_a_built_in_or_imported_tool_name_is_fine() -> None:
    text = ('agent a { context = [i] }\n'
            'instruction i { prompt = "p" when = last.tool in ["read_skill", "skip_step"] }\n')
    assert afp_dsl.check(text) == []


def test_a_skill_name_no_skill_has_is_a_type_mismatch_with_a_suggestion() -> None:
    text = ('skill triage { description = "d" }\ngraph g { entry triage }\n'
            'instruction i { prompt = "p" when = skill == "triag" or skill == null }\n'
            'agent a { graph = g context = [i] }\n')
    d = only(text)
    assert d.code == "AFP305" and d.help == 'did you mean `"triage"`?'


def test_a_scripted_value_close_to_a_declared_one_gets_a_suggestion() -> None:
    """Before: "fix the arguments" with no suggestion. The value given is not echoed."""
    text = ('tool t { description = "d" input { unit: "celsius" | "fahrenheit" } }\nagent a { tools = [t] }\n'
            'test x { user "hi" model calls t { unit: "celcius" } model says "ok" }\n')
    d = only(text)
    assert d.code == "AFP405" and d.help == 'did you mean `"celsius"` for `unit`?'
    assert "celcius" not in render([d], {"<text>": text}, "short")


@pytest.mark.parametrize("block, message", [
    ('{ "first-name": string }', "a field name is a name, not a string"),
    ('{ a: string, "and": integer }', "a field name is a name, not a string"),
    ('{ a: string "the a" = "x" }', "the default comes before the description"),
])
def test_a_schema_field_written_out_of_shape_says_how_to_write_it(block: str, message: str) -> None:
    """Before: "unexpected string" / "unexpected `=`"."""
    d = only(f'tool t {{ description = "d" input {block} }}\n')
    assert d.code == "AFP001" and d.message == message
