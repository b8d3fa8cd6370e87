"""Conformance: the language audit (spec/language.md §2-§7) — findings and their fixes.

Each case quotes the statement of the draft it holds the implementation to.
"""
from __future__ import annotations

import textwrap

import pytest

import afp_dsl
from afp_dsl import ir
from afp_dsl.evaluate import Env, evaluate


def diags(text: str):
    return afp_dsl.check(textwrap.dedent(text))


def codes(text: str) -> list[str]:
    return [d.code for d in diags(text)]


# ---------------------------------------------------------------- §6 comparisons of two paths
# "Ordered comparisons need two numbers or two strings; anything else is false at run time and a
# type error at check time when the types are known." — also when both operands are paths.
ROUTE = """
agent a {{ graph = g }}
tool t {{
  description = "x"
  output {{ items: [string], n: integer, word: "a" | "b", flag: boolean, note?: string, k?: integer }}
}}
skill s1 {{ description = "x" tools = [t] }}
skill s2 {{ description = "x" }}
graph g {{
  entry s1
  route s1 -> s2 on t status success when {cond}
}}
"""


@pytest.mark.parametrize("cond", [
    "result.items > result.n",      # a list is never ordered
    "result.n < result.word",       # a number and a string
    "result.flag <= result.flag",   # booleans are never ordered
    "result.note < result.k",       # a string (or null) and a number (or null)
    "message < iteration",          # a string and a number, with no schema at all
    "result.n == result.word",      # a number never equals a string
    "message == iteration",
    "tool == iteration",
    "not (result.n < result.word)", # the comparison itself, as `not (message < 3)`
])
def test_two_paths_whose_types_cannot_meet_are_a_type_error(cond):
    found = [d for d in diags(ROUTE.format(cond=cond))]
    assert [d.code for d in found] == ["AFP305"], cond
    assert "can never be true" in found[0].message


@pytest.mark.parametrize("cond", [
    "result.n < result.k",          # two numbers
    "result.note == result.k",      # both may be null (absent)
    "result.word == result.note",   # both strings
    "result.n < iteration",
    "message != iteration",         # always true: not a mismatch
    "args.x < iteration",           # `args` untyped (no input schema): not known
])
def test_two_paths_that_can_meet_are_accepted(cond):
    assert codes(ROUTE.format(cond=cond)) == [], cond


def test_a_guard_is_not_also_reported_for_a_case_the_type_error_already_kills():
    # one root cause, one diagnostic (tooling.md §3)
    cond = "message < iteration and iteration > 5 and iteration < 3"
    assert codes(ROUTE.format(cond=cond)) == ["AFP305"]


def test_the_type_error_names_both_types():
    (d,) = diags(ROUTE.format(cond="message < iteration"))
    assert d.notes == ("`message` is a string; `iteration` is a number",)


def test_a_policy_rule_comparing_mismatched_args_is_a_type_error():
    text = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "x" input { n: integer, s: string } }
    policy p { after t { deny when args.n > args.s because "never" } }
    """
    assert [(d.code, d.is_error) for d in diags(text)] == [("AFP305", True)]


def test_before_validation_a_comparison_the_schema_rules_out_is_a_type_error_too():
    # `before` runs ahead of argument validation, and `{n: "b", s: "a"}` makes the rule hold;
    # but validation then refuses that call, so the rule never matches a valid one: provable
    text = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "x" input { n: integer, s: string } }
    policy p { before t { deny when args.n > args.s because "never" } }
    """
    (d,) = diags(text)
    assert (d.code, d.is_error) == ("AFP305", True)
    assert not any("not yet validated" in n for n in d.notes)


def test_such_comparisons_are_false_at_run_time():
    left, right = ir.Path(root="message"), ir.Path(root="iteration")
    for op in ("<", "==", ">="):
        c = ir.Compare(op=op, left=left, right=right)
        assert not evaluate(c, Env(roots={"message": "3", "iteration": 3})).holds


# ---------------------------------------------------------------- §5 unknown block keys
# "An unknown attribute or a missing required one is an error at that attribute (with "did you
# mean" where a close name exists)." — also a misspelt key written before a block.
@pytest.mark.parametrize("text, key, close", [
    ('agent a { tools = [t] }\ntool t { description = "x" inptu { a: string } }', "inptu", "input"),
    ('agent a { tools = [t] }\ntool t { description = "x" outputs { a: string } }', "outputs", "output"),
    ('agent a { skills = [s] }\nskill s { description = "x" tools = [t] step { t } }\n'
     'tool t { description = "x" }', "step", "steps"),
    ('agent a { policies = [p] }\npolicy p { inpt { deny when true because "x" } }', "inpt", "input"),
    ('agent a { tools = [t] policies = [p] }\ntool t { description = "x" }\n'
     'policy p { befor t { deny when true because "x" } }', "befor", "before"),
    ('agent a { policies = [p] }\npolicy p { aftr * { deny when true because "x" } }', "aftr", "after"),
    ('agent a { context = [f] }\nfact f { dta { a: 1 } }', "dta", "data"),
])
def test_an_unknown_key_before_a_block_is_an_unknown_attribute(text, key, close):
    (d,) = diags(text)
    assert d.code == "AFP104"
    assert f"`{key}`" in d.message
    assert d.help == f"did you mean `{close}`?"
    start = d.labels[0].span.start
    assert text[start:start + len(key)] == key  # at that attribute


@pytest.mark.parametrize("text, key, kind", [
    ('agent a { tools = [t] }\ntool t { description = "t" steps { a "x" } }', "steps", "tool"),
    ('agent a { tools = [t] }\ntool t { description = "t" input { x: string }\n  steps { a "x" } }',
     "steps", "tool"),
    ('agent a { tools = [t] steps { t "x" } }\ntool t { description = "t" }', "steps", "agent"),
    ('policy p { impl = python("a:b") steps { x "y" } }', "steps", "policy"),
    ('fact f { prompt = "x" input { a: string } }', "input", "fact"),
])
def test_a_block_key_the_declaration_does_not_take_is_an_unknown_attribute(text, key, kind):
    """`steps { … }` after an attribute of a tool was "unexpected `steps`" (AFP001), though the
    same block first in the body was AFP104: the keyword ends the LALR state's attribute."""
    (d,) = diags(text)
    assert (d.code, d.message) == ("AFP104", f"unknown attribute `{key}` for {kind}")
    start = d.labels[0].span.start
    assert text[start:start + len(key)] == key


@pytest.mark.parametrize("text", [
    'agent a { tools = [t] }\ntool t { description = "x" impl { } }',          # a known key
    'agent a { tools = [t] }\ntool t { description = "x" inptu x { } }',       # not a block key
    'agent a { policies = [p] }\npolicy p { before * { deny when true because "x" }\n'
    'tool x { description = "x" }',                                             # unclosed block
])
def test_other_keys_before_a_brace_stay_syntax_errors(text):
    assert codes(text) == ["AFP001"]


# ---------------------------------------------------------------- §2 identifiers are whole words
# "Identifiers: `[A-Za-z_][A-Za-z0-9_]*`": a word is lexed whole, also where the grammar takes only
# keywords; before, a keyword matched the start of a longer word, and these read silently as
# `expect outcome answered`, `expect not called t`, `as r`, `deny when true`, `model calls t`.
SCRIPT = """
agent a {{ tools = [t] graph = g }}
tool t {{ description = "x" }}
skill s1 {{ description = "x" tools = [t] }}
skill s2 {{ description = "x" }}
graph g {{ entry s1 route s1 -> s2 on t }}
policy p {{ before * {{ deny when true because "x" }} }}
test x {{ user "hi" model says "y" {line} }}
"""


@pytest.mark.parametrize("line, word", [
    ("expect outcomeanswered", "outcomeanswered"),
    ("expect notcalled t", "notcalled"),
    ("expect cursors1", "cursors1"),
    ("expect calledt 0", "calledt"),
    ("expect routes1 -> s2", "routes1"),
])
def test_a_keyword_does_not_match_the_start_of_a_longer_word(line, word):
    text = SCRIPT.format(line=line)
    (d,) = diags(text)  # (read whole: named as an expectation that does not exist)
    assert (d.code, d.message) == ("AFP001", f"`{word}` is not an expectation")
    at = textwrap.dedent(text).index(word)
    assert (d.labels[0].span.start, d.labels[0].span.end) == (at, at + len(word))


@pytest.mark.parametrize("text, word", [
    ('import "std/redact" asr\nagent a { redact = [r.secrets] }', "asr"),
    ('policy p { before * { deny whentrue because "x" } }', "whentrue"),
    ('policy p { before * { denywhen true because "x" } }', "denywhen"),
])
def test_a_keyword_glued_to_the_next_word_is_a_syntax_error(text, word):
    (d,) = diags(text)
    assert d.code == "AFP001" and f"`{word}`" in d.message


def test_the_same_lines_with_the_words_apart_are_clean():
    for line in ("expect outcome answered", "expect not called t", "expect cursor s1",
                 "expect called t 0", "expect route s1 -> s2"):
        assert codes(SCRIPT.format(line=line)) == [], line


# ---------------------------------------------------------------- §2 where an unclosed string opens
# AFP002 unterminated-string is at the quote that is never closed.
@pytest.mark.parametrize("text, code_at, message", [
    # `"""a"""` is closed; the fourth `"` opens a string of its own (before: a triple-quoted
    # string reported two characters early, inside the closed one)
    ('agent a { system = """a"""" }', 26, "unterminated string"),
    # a `"""` never closed after a value, or where no value stands (before: "unexpected string",
    # as its first two quotes read as an empty string)
    ('agent a { system = """a"""   """ }', 29, "unterminated triple-quoted string"),
    ('agent a {} """x', 11, "unterminated triple-quoted string"),
    ('agent a { system = """abc\n}', 19, "unterminated triple-quoted string"),
])
def test_an_unclosed_quote_is_reported_where_it_opens(text, code_at, message):
    (d,) = diags(text)
    assert (d.code, d.message, d.labels[0].span.start) == ("AFP002", message, code_at)


def test_empty_strings_are_still_strings():
    assert codes('agent a { system = "" }') == []
    assert codes('agent a { system = """""" }') == []
    assert codes('agent a { system = "" "" }') == ["AFP001"]


# ---------------------------------------------------------------- §5.4 / §5.8 statements
# Bad input gets a message naming the fix: a route clause out of the order `on`, `status`, `when`
# (spec §5.4, docs decision 9), or a misspelt statement word, was "expected `=` after the
# attribute name" at the word after it, as if a `key = value` were meant.
GRAPH = """
agent a {{ graph = g }}
tool t {{ description = "x" output {{ n: integer }} }}
skill s1 {{ description = "x" tools = [t] }}
skill s2 {{ description = "x" tools = [t] }}
graph g {{ entry s1 {stmt} }}
"""


@pytest.mark.parametrize("stmt, word", [
    ("route s1 -> s2 status success on t", "on"),
    ("route s1 -> s2 when result.n > 1 on t", "on"),
    ("route s1 -> s2 when result.n > 1 status success", "status"),
    ("route s1 -> s2 on t status success status failure", "status"),
    ('route s1 -> s2 on t "label" on t', "on"),
])
def test_a_route_clause_out_of_order_is_named(stmt, word):
    text = textwrap.dedent(GRAPH.format(stmt=stmt))
    (d,) = afp_dsl.check(text)
    assert (d.code, d.message) == ("AFP001", f"`{word}` cannot stand here")
    assert "`on TOOL`, `status S`, `when EXPR`" in d.help
    at = text.index(stmt) + stmt.rindex(f" {word} ") + 1
    assert d.labels[0].span.start == at


@pytest.mark.parametrize("text, word, close", [
    (GRAPH.format(stmt="rout s1 -> s2 on t"), "rout", "route"),
    (GRAPH.format(stmt="entri s2"), "entri", "entry"),
    ('agent a {}\ntest x { users "hi" model says "y" }', "users", "user"),
    ('agent a {}\ntest x { user "hi" model says "y" expct outcome answered }', "expct", "expect"),
])
def test_a_misspelt_statement_gets_a_did_you_mean(text, word, close):
    text = textwrap.dedent(text)
    (d,) = afp_dsl.check(text)
    assert (d.code, d.message) == ("AFP001", f"`{word}` does not start a statement of a "
                                             f"{'graph' if 'graph g' in text else 'test'}")
    assert d.help == f"did you mean `{close}`?"
    assert d.labels[0].span.start == text.index(word)


def test_the_same_statements_written_right_are_clean():
    assert codes(GRAPH.format(stmt="route s1 -> s2 on t status success when result.n > 1")) == []


# ---------------------------------------------------------------- §2 a number glued to a word
# Identifiers start with a letter or `_`; a number is followed by something that is not a word
# character. Before, `8model` read silently as the number 8, then the attribute `model`.
@pytest.mark.parametrize("text, word", [
    ('agent a {\n  max_iterations = 8model = "x"\n}', "8model"),
    ('skill 3d_model { description = "x" }', "3d_model"),
    ('tool t { description = "t" input { x: number(min: -1e3x) } }', "-1e3x"),
    ('agent a { max_iterations = 0x10 }', "0x10"),
])
def test_a_number_glued_to_a_word_is_a_syntax_error(text, word):
    (d,) = diags(text)
    start = text.index(word)
    assert (d.code, d.labels[0].span.start, d.labels[0].span.end) == ("AFP001", start,
                                                                        start + len(word))
    assert f"`{word}`" in d.message


def test_numbers_next_to_punctuation_and_words_apart_are_clean():
    assert codes('agent a { max_iterations = 8 model = "x" }') == []
    assert codes('tool t { description = "t" input { x: number(min: -1.5e3, max: 2) } }') == []
    assert codes('agent a {\n  max_iterations = 8\n  model = "x"\n}') == []


@pytest.mark.parametrize("word", ["and", "or", "in", "not", "matches", "mentions"])
def test_an_operator_word_as_a_key_after_a_value_is_an_unknown_attribute(word):
    """The parser read `"x" and` as the value going on and stopped at `=` (AFP001)."""
    text = f'skill s {{ description = "x" {word} = 1 }}'
    (d,) = diags(text)
    assert (d.code, d.message) == ("AFP104", f"unknown attribute `{word}` for skill")
    assert text[d.labels[0].span.start:].startswith(word)


def test_an_unknown_expectation_names_the_expectations():
    text = 'agent a { }\ntest t {\n  user "x"\n  model says "y"\n  expect answr == "y"\n}\n'
    (d,) = diags(text)
    assert (d.code, d.message) == ("AFP001", "`answr` is not an expectation")
    assert d.help.startswith("did you mean `answer`? expectations are: `expect answer`")


def test_because_after_a_dangling_operator_says_the_condition_is_unfinished():
    (d,) = diags('policy p { input { deny when message == "a" and because "hit" } }')
    assert (d.code, d.message) == ("AFP001", "the condition ends with an operator before `because`")


def test_an_entry_s_when_is_read_across_a_comment_or_a_ufeff_blank():
    """`entry a when "x"` is a condition, `entry a "x"` a label: told apart by the source between
    them. A comment before `when` (everything after the first `#` was dropped) or a U+FEFF blank
    (which `str.strip` keeps) made the condition a label, and `afpc fmt` then flipped it back."""
    import afp_dsl
    from afp_dsl.api import analyse
    for gap in ("\ufeff", "  # start\n    "):
        spec = 'skill a { description = "d" }\ngraph g {\n  entry a' + gap + 'when "x"\n}\n'
        program, _ = analyse(spec)
        graph = next(d for d in program.modules[0].decls if type(d).__name__ == "Graph")
        assert (graph.entries[0].when is not None, graph.entries[0].label) == (True, None), gap
    assert afp_dsl.check('skill a { description = "d" }\ngraph g { entry a "x" }\n') == []
