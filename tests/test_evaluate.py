"""Guard expressions at run time: values, comparisons, evidence, errors, canonical text."""
from __future__ import annotations

import doctest

import pytest
from hypothesis import given, strategies as st

from afp_dsl import evaluate as ev_mod
from afp_dsl import ir, rules_compiled
from afp_dsl.evaluate import Env, evaluate, json_equal, parse_result, render_expr
from afp_dsl.frozen import freeze
from afp_dsl.source import Span


def path(text: str) -> ir.Path:
    root, *segs = text.split(".")
    return ir.Path(root=root, segments=tuple(int(s) if s.isdigit() else s for s in segs))


def lit(v) -> ir.Lit:
    return ir.Lit(value=v)


def cmp(left, op, right, span=None) -> ir.Compare:
    left = path(left) if isinstance(left, str) else left
    right = right if isinstance(right, (ir.Regex, ir.ListExpr, ir.Path, ir.Call)) else lit(right)
    return ir.Compare(op=op, left=left, right=right, span=span or ir.NOSPAN)


def lst(*items) -> ir.ListExpr:
    return ir.ListExpr(items=tuple(lit(i) for i in items))


def env(**roots) -> Env:
    return Env(roots=roots)


RESULT = env(result={"status": "found", "amount": 20, "items": [{"sku": "A"}]}, message="hello")


# ---------------------------------------------------------------- paths
def test_path_reads_nested_fields_and_indexes():
    e = cmp("result.items.0.sku", "==", "A")
    assert evaluate(e, RESULT).holds


def test_missing_path_is_null():
    assert evaluate(cmp("result.nope.deeper", "==", None), RESULT).holds
    assert evaluate(cmp("args.x", "==", None), RESULT).holds  # missing root
    assert evaluate(cmp("result.items.5", "==", None), RESULT).holds  # index out of range
    assert not evaluate(cmp("result.status", "==", None), RESULT).holds


def test_path_into_a_string_is_null():
    assert evaluate(cmp("message.length", "==", None), RESULT).holds


def test_frozen_values_are_read_like_plain_ones():
    e = Env(roots={"result": freeze({"items": [{"sku": "A"}]})})
    assert evaluate(cmp("result.items.0.sku", "==", "A"), e).holds


# ---------------------------------------------------------------- equality
@pytest.mark.parametrize("a, b, equal", [
    (1, 1.0, True), (True, 1, False), (False, 0, False), (None, None, True), ("1", 1, False),
    ([1, 2], (1, 2.0), True), ({"a": [1]}, {"a": [1.0]}, True), ({"a": 1}, {"a": 1, "b": 2}, False),
    ([True], [1], False),
])
def test_json_equality(a, b, equal):
    assert json_equal(a, b) is equal


def test_not_equal_is_the_negation():
    assert evaluate(cmp("result.status", "!=", "missing"), RESULT).holds
    assert not evaluate(cmp("result.status", "!=", "found"), RESULT).holds


# ---------------------------------------------------------------- ordered comparisons
@pytest.mark.parametrize("op, right, holds", [
    ("<=", 500, True), ("<", 20, False), (">", 19.5, True), (">=", 20, True),
])
def test_ordered_numbers(op, right, holds):
    assert evaluate(cmp("result.amount", op, right), RESULT).holds is holds


def test_ordered_strings_compare_lexicographically():
    assert evaluate(cmp("result.status", "<", "zzz"), RESULT).holds


@pytest.mark.parametrize("left, right", [("result.status", 5), ("result.amount", "30"),
                                         ("result.missing", 5)])
def test_ordered_mixed_types_are_false_with_a_reason(left, right):
    out = evaluate(cmp(left, ">", right), RESULT)
    assert not out.holds and out.error is None
    assert "needs two numbers or two strings" in out.conditions[0].reason



@pytest.mark.parametrize("value, name", [(None, "null"), (True, "boolean"), ("5", "string"),
                                         ({"a": 1}, "object"), ([1], "list"),
                                         (frozenset({1}), "frozenset")])
def test_a_type_mismatch_s_reason_names_the_types(value, name):
    """A type mismatch is false with a recorded reason that names both types in JSON's words
    (a host value of another Python type by its type's name)."""
    out = evaluate(cmp("v", ">", 0), env(v=value))
    assert not out.holds and out.error is None
    assert out.conditions[0].reason == f"`>` needs two numbers or two strings, got {name} and number"


@pytest.mark.parametrize("left, right", [(float("nan"), 1), (1, float("nan")),
                                         (float("nan"), float("nan"))])
@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_an_ordered_comparison_with_nan_is_false_and_says_why(left, right, op):
    """NaN has no order: a comparison with it on either side is false, and its evidence says why
    (so "why didn't my edge fire" is a lookup)."""
    out = evaluate(ir.Compare(op=op, left=path("v"), right=path("w"), span=ir.NOSPAN),
                   env(v=left, w=right))
    assert not out.holds and out.error is None
    assert out.conditions[0].reason == "NaN is not ordered"

def test_bool_is_not_a_number():
    out = evaluate(cmp("flag", ">", 0), env(flag=True))
    assert not out.holds
    assert "boolean and number" in out.conditions[0].reason


# ---------------------------------------------------------------- in / not in
def test_in_and_not_in():
    assert evaluate(cmp("result.status", "in", lst("found", "missing")), RESULT).holds
    assert not evaluate(cmp("result.status", "not in", lst("found")), RESULT).holds
    assert evaluate(cmp("result.amount", "in", lst(1, 20.0)), RESULT).holds
    assert evaluate(cmp("result.gone", "not in", lst("x")), RESULT).holds


def test_in_needs_a_list():
    out = evaluate(cmp("result.status", "in", path("result.status")), RESULT)
    assert not out.holds and "needs a list" in out.conditions[0].reason


# ---------------------------------------------------------------- matches / mentions
def test_matches_is_a_search_with_flags():
    assert evaluate(cmp("message", "matches", ir.Regex(pattern="URGENT|asap", flags="i")),
                    env(message="this is urgent please")).holds
    assert not evaluate(cmp("message", "matches", ir.Regex(pattern="^urgent")),
                        env(message="this is urgent")).holds


def test_matches_on_a_non_string_is_false():
    out = evaluate(cmp("result.amount", "matches", ir.Regex(pattern="2")), RESULT)
    assert not out.holds and "needs a string" in out.conditions[0].reason


def test_regex_is_compiled_once():
    ev_mod.compile_regex.cache_clear()
    e = cmp("message", "matches", ir.Regex(pattern="a+b", flags="i"))
    for _ in range(3):
        evaluate(e, env(message="aab"))
    info = ev_mod.compile_regex.cache_info()
    assert info.misses == 1 and info.hits == 2


def test_bad_regex_at_run_time_is_an_error_not_a_raise():
    out = evaluate(cmp("message", "matches", ir.Regex(pattern="(unclosed")), env(message="x"))
    assert not out.holds
    assert out.error is not None and "bad regular expression" in out.error


def test_error_anywhere_makes_the_whole_expression_false():
    bad = cmp("message", "matches", ir.Regex(pattern="["))
    out = evaluate(ir.Or(items=(cmp("message", "==", "x"), bad)), env(message="x"))
    assert not out.holds and out.error


@pytest.mark.parametrize("message, holds", [
    ("I want a refund now", True), ("REFUND please", True), ("two refunds", False),
    ("order #12", True), ("reorder", False), ("", False),
])
def test_mentions_whole_word_case_insensitive(message, holds):
    e = cmp("message", "mentions", lst("refund", "order"))
    assert evaluate(e, env(message=message)).holds is holds


def test_mentions_a_single_string_and_keywords_with_punctuation():
    assert evaluate(cmp("message", "mentions", "c++"), env(message="I like C++ a lot")).holds
    assert not evaluate(cmp("message", "mentions", "c++"), env(message="I like c++x")).holds


# Before the fix a combining mark did not count as part of a word (`\w` leaves marks out), so
# `ह` was mentioned in "हिंदी" and `cafe` in "café" spelt e + U+0301; a keyword typed in NFC was
# not found in the same word in NFD; and `strasse` was not found in "Straße" (simple case folding).
@pytest.mark.parametrize("keyword, message, holds", [
    ("ह", "हिंदी में", False), ("हिंदी", "हिंदी में", True),
    ("cafe", "a cafe\u0301 au lait", False), ("café", "a cafe\u0301 au lait", True),
    ("cafe\u0301", "a café au lait", True), ("x", "e\u0301x", False),
    ("strasse", "Die Straße", True), ("STRAßE", "strasse 5", True), ("ﬁne", "FINE", True),
    ("istanbul", "İSTANBUL", True), ("σ", "Σ", True), ("refund", "Refunds", False),
])
def test_mentions_across_unicode_forms_and_cases(keyword, message, holds):
    e = cmp("message", "mentions", keyword)
    assert evaluate(e, env(message=message)).holds is holds
    assert rules_compiled.compiled(e).quick(env(message=message)) is holds  # (the policy path)


def test_mentions_on_null_is_false():
    out = evaluate(cmp("message", "mentions", "x"), env())
    assert not out.holds and "needs a string" in out.conditions[0].reason


# ---------------------------------------------------------------- logic and calls
def test_and_or_not():
    found = cmp("result.status", "==", "found")
    small = cmp("result.amount", "<=", 500)
    assert evaluate(ir.And(items=(found, small)), RESULT).holds
    assert not evaluate(ir.And(items=(found, ir.Not(item=small))), RESULT).holds
    assert evaluate(ir.Or(items=(ir.Not(item=found), small)), RESULT).holds


def test_calls_read_returned_and_active():
    e = Env(roots={}, returned=frozenset({"lookup"}), active=frozenset({"triage"}))
    returned = ir.Call(func="returned", arg=ir.Ref(name="lookup"))
    active = ir.Call(func="active", arg=ir.Ref(name="refunds"))
    assert evaluate(returned, e).holds
    assert not evaluate(active, e).holds
    assert evaluate(cmp(returned, "==", True), e).holds


def test_bare_path_holds_only_for_true():
    assert evaluate(path("r.flag"), env(r={"flag": True})).holds
    out = evaluate(path("r.flag"), env(r={"flag": "yes"}))
    assert not out.holds and out.conditions[0].reason == "not a boolean: string"


def test_literal_true_holds():
    assert evaluate(lit(True), env()).holds
    assert not evaluate(lit(1), env()).holds


# ---------------------------------------------------------------- evidence
def test_every_condition_is_recorded_without_short_circuit():
    span = Span("a.afp", 3, 9)
    found = cmp("result.status", "==", "missing", span)
    small = cmp("result.amount", "<=", 500)
    out = evaluate(ir.And(items=(found, small)), RESULT)
    assert not out.holds
    assert [(c.text, c.actual, c.passed) for c in out.conditions] == [
        ('result.status == "missing"', "found", False), ("result.amount <= 500", 20, True)]
    assert out.conditions[0].span == span


def test_actual_values_are_shortened_to_80_chars():
    out = evaluate(cmp("message", "==", "x"), env(message="y" * 200))
    assert len(out.conditions[0].actual) == 80 and out.conditions[0].actual.endswith("…")
    out = evaluate(cmp("result", "==", None), env(result={"a": "b" * 100}))
    assert isinstance(out.conditions[0].actual, str) and len(out.conditions[0].actual) == 80
    out = evaluate(cmp("result", "==", None), env(result={"a": 1}))
    assert out.conditions[0].actual == '{"a":1}'


# ---------------------------------------------------------------- parse_result
@pytest.mark.parametrize("raw, parsed", [
    ('{"a": 1}', {"a": 1}), ("[1, 2]", [1, 2]), ("plain text", "plain text"), ("42", 42),
    ("NaN", "NaN"), ({"a": 1}, {"a": 1}), (None, None),
])
def test_parse_result(raw, parsed):
    assert parse_result(raw) == parsed


# ---------------------------------------------------------------- rendering
def test_render_canonical_text():
    e = ir.Or(items=(
        ir.And(items=(cmp("result.status", "==", "found"), cmp("result.amount", "<=", 500))),
        ir.Not(item=cmp("message", "matches", ir.Regex(pattern="urgent|asap", flags="i"))),
        cmp("args.tags.0", "not in", lst("a", 1, None, True)),
        ir.Call(func="returned", arg=ir.Ref(name="lookup", alias="std")),
    ))
    assert render_expr(e) == (
        'result.status == "found" and result.amount <= 500 or not message matches /urgent|asap/i'
        ' or args.tags[0] not in ["a", 1, null, true] or returned(std.lookup)')



def test_render_keeps_non_ascii_literals_as_written():
    """The canonical text reads like the source: a literal's characters are kept, not escaped,
    in the rendering and in the evidence's condition text."""
    e = cmp("message", "==", "café ✓")
    assert render_expr(e) == 'message == "café ✓"'
    assert evaluate(e, env(message="x")).conditions[0].text == 'message == "café ✓"'

def test_render_parenthesises_lower_precedence():
    a, b, c = (cmp(x, "==", 1) for x in ("a", "b", "c"))
    assert render_expr(ir.And(items=(ir.Or(items=(a, b)), c))) == "(a == 1 or b == 1) and c == 1"
    assert render_expr(ir.Not(item=ir.And(items=(a, b)))) == "not (a == 1 and b == 1)"


def test_doctests():
    assert doctest.testmod(ev_mod).failed == 0


# ---------------------------------------------------------------- properties
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10)


@given(json_values, st.lists(st.text(max_size=3) | st.integers(0, 3), max_size=4))
def test_evaluate_never_raises_on_any_data(value, segments):
    e = ir.Compare(op=">", left=ir.Path(root="result", segments=tuple(segments)), right=lit(1))
    out = evaluate(e, env(result=value))
    assert out.error is None and len(out.conditions) == 1


@given(json_values)
def test_equality_is_reflexive(value):
    assert json_equal(value, value)



class _Boom:
    """A host value whose comparison raises."""

    def __eq__(self, other):
        raise ValueError("no comparing this")

    __hash__ = object.__hash__


def test_an_evaluation_that_fails_does_not_hold_even_under_not():
    """Semantics §8 (expression errors are denials) and the invariant above: a run-time failure
    makes the whole evaluation false, with the error, never a pass (`not` does not turn it)."""
    roots = env(v=_Boom(), w=_Boom())
    for expr, text in ((cmp("v", "==", path("w")), "v == w"),
                       (ir.Not(item=cmp("v", "==", path("w"))), "not v == w")):
        out = evaluate(expr, roots)
        assert out.holds is False
        assert out.error == f"cannot evaluate `{text}`: no comparing this"
