"""Redaction: keys at any depth, patterns, remembered secrets, the model view, reports."""
from __future__ import annotations

import doctest
import json

import pytest
from hypothesis import given, settings, strategies as st

from afp_dsl import ir, redaction
from afp_dsl.frozen import FrozenMap, freeze
from afp_dsl.redaction import Redactor, luhn_valid

SECRET = "hunter2-xyz"
SK = "sk-" + "a" * 24
CARD = r"\b(?P<luhn>(?:\d[ -]?){12,18}\d)\b"


def rule(name="secrets", keys=(), patterns=(), placeholder="[REDACTED]", model=False) -> ir.Redact:
    return ir.Redact(name=name, keys=tuple(keys), placeholder=placeholder, model=model,
                     patterns=tuple(ir.Regex(pattern=p[0], flags=p[1]) if isinstance(p, tuple)
                                    else ir.Regex(pattern=p) for p in patterns))


def secrets() -> Redactor:
    return Redactor([rule(keys=["api_key", "password"], patterns=[r"sk-[A-Za-z0-9]{20,}"])])


# ---------------------------------------------------------------- keys
def test_key_at_depth_is_replaced_and_structure_kept():
    r = secrets()
    out = r.scrub({"user": {"profile": [{"password": SECRET, "name": "maya"}]}, "n": 3})
    assert out == {"user": {"profile": [{"password": "[REDACTED]", "name": "maya"}]}, "n": 3}


def test_key_match_is_case_insensitive_and_exact():
    r = secrets()
    out = r.scrub({"PassWord": SECRET, "password_hint": "the cat", "API_KEY": 12345})
    assert out == {"PassWord": "[REDACTED]", "password_hint": "the cat", "API_KEY": "[REDACTED]"}


def test_whole_structure_under_a_key_is_replaced_and_its_leaves_remembered():
    r = secrets()
    assert r.scrub({"password": {"a": SECRET, "b": [987654]}}) == {"password": "[REDACTED]"}
    assert r.scrub_text(f"{SECRET} and 987654") == "[REDACTED] and [REDACTED]"


def test_input_is_not_mutated_and_containers_keep_their_type():
    r = secrets()
    original = {"password": SECRET, "t": (1, "x"), "f": FrozenMap({"password": "zzzz"})}
    out = r.scrub(original)
    assert original["password"] == SECRET
    assert isinstance(out["t"], tuple) and isinstance(out["f"], FrozenMap)
    assert out["f"]["password"] == "[REDACTED]"


# ---------------------------------------------------------------- remembered values
def test_copying_a_secret_into_another_field_does_not_leak_it():
    r = secrets()
    r.scrub({"password": SECRET})
    later = r.scrub({"note": f"the user typed {SECRET} twice", "echo": SECRET, "list": [SECRET]})
    assert SECRET not in json.dumps(later)
    assert later["note"] == "the user typed [REDACTED] twice"


def test_a_copy_before_the_key_in_the_same_value_is_scrubbed_too():
    r = secrets()
    out = r.scrub({"note": f"my password is {SECRET}", "password": SECRET})
    assert SECRET not in json.dumps(out)


def test_short_values_are_not_remembered():
    r = secrets()
    r.scrub({"password": "abc"})
    assert r.scrub_text("abcdef abc") == "abcdef abc"


def test_numbers_are_remembered_as_text_and_scrubbed_as_numbers():
    r = secrets()
    r.scrub({"api_key": 4111222233334444})
    assert r.scrub({"amount": 4111222233334444, "x": 12}) == {"amount": "[REDACTED]", "x": 12}
    assert r.scrub_text("id 4111222233334444.") == "id [REDACTED]."


def test_longest_remembered_value_wins():
    r = Redactor([rule(keys=["k"])])
    r.remember(["abcd", "abcdefgh"], rule="secrets")
    assert r.scrub_text("xabcdefghx abcdz") == "x[REDACTED]x [REDACTED]z"


def test_planted_secrets_are_scrubbed_even_with_no_rules():
    r = Redactor([])
    r.remember("my-api-token-123")
    assert r.scrub({"a": "Bearer my-api-token-123"}) == {"a": "Bearer [REDACTED]"}
    assert r.report().counts == {"(remembered)": 1}


def test_remember_with_an_unknown_rule_is_a_clear_error():
    with pytest.raises(ValueError, match="no redact rule named `nope`"):
        secrets().remember("xxxx", rule="nope")


def test_keys_are_kept_but_their_text_is_scrubbed():
    r = secrets()
    r.scrub({"password": SECRET})
    out = r.scrub({SECRET: 1, f"x{SECRET}": 2, "[REDACTED]": 3})
    assert SECRET not in json.dumps(out)
    assert sorted(out) == ["[REDACTED]", "[REDACTED]#2", "x[REDACTED]"]
    assert all(SECRET not in p for p in r.report().paths)


# ---------------------------------------------------------------- patterns
def test_patterns_inside_nested_strings():
    r = secrets()
    out = r.scrub({"a": [{"b": f"key={SK}; other={SK}!"}], "c": "clean"})
    assert out == {"a": [{"b": "key=[REDACTED]; other=[REDACTED]!"}], "c": "clean"}


def test_pattern_matches_are_not_remembered():
    r = secrets()
    r.scrub({"a": SK})
    assert r.scrub_text(SK[:10]) == SK[:10]


def test_pattern_flags_and_rule_placeholders():
    r = Redactor([rule("emails", patterns=[(r"[a-z]+@example\.com", "i")], placeholder="[email]"),
                  rule("tokens", patterns=[r"tok_\w+"], placeholder="[token]")])
    assert r.scrub_text("Mail MAYA@Example.com tok_abc") == "Mail [email] [token]"
    assert dict(r.report().counts) == {"emails": 1, "tokens": 1}


def test_overlapping_matches_of_two_rules_become_one_placeholder():
    r = Redactor([rule("a", patterns=["abcd"], placeholder="<A>"),
                  rule("b", patterns=["cdef"], placeholder="<B>")])
    assert r.scrub_text("xabcdefx") == "x<A>x"


def test_patterns_with_groups_verbose_mode_or_global_flags_still_work():
    r = Redactor([rule(patterns=[r"(ab)\1", ("a b c  # spaced", "x"), "(?i)zz"])])
    assert r.scrub_text("abab abc ZZ") == "[REDACTED] [REDACTED] [REDACTED]"


def test_bad_pattern_fails_closed_with_a_clear_error():
    with pytest.raises(ValueError, match="redact rule `secrets`: bad pattern"):
        Redactor([rule(patterns=["(unclosed"])])


def test_luhn_group_redacts_only_valid_card_numbers():
    r = Redactor([rule("cards", patterns=[CARD], placeholder="[card]")])
    text = "card 4111 1111 1111 1111, order 1234 5678 9012 3456"
    assert r.scrub_text(text) == "card [card], order 1234 5678 9012 3456"
    assert r.scrub({"n": 4111111111111111}) == {"n": "[card]"}


@pytest.mark.parametrize("digits, valid", [
    ("4111111111111111", True), ("79927398713", True), ("79927398710", False), ("", False),
    ("4111-1111", False), ("0", True),
])
def test_luhn_valid(digits, valid):
    assert luhn_valid(digits) is valid


# ---------------------------------------------------------------- model view
def test_model_view_applies_only_model_rules_and_shares_memory():
    r = Redactor([rule("records", keys=["password"]),
                  rule("both", keys=["ssn"], patterns=[r"\d{3}-\d{2}-\d{4}"], model=True)])
    view = r.for_model()
    assert view is not None and r.for_model() is view
    r.scrub({"password": SECRET, "ssn": "secret-ssn-value"})
    assert view.scrub_text(f"{SECRET} secret-ssn-value 123-45-6789") == \
        f"{SECRET} [REDACTED] [REDACTED]"
    assert view.scrub({"password": "p", "ssn": "q"}) == {"password": "p", "ssn": "[REDACTED]"}


def test_model_view_is_none_without_model_rules():
    assert secrets().for_model() is None


# ---------------------------------------------------------------- report
def test_report_has_counts_and_paths_but_never_values():
    r = secrets()
    r.scrub({"args": {"password": SECRET, "notes": [f"token {SK}"]}}, at="tool.called#1")
    r.scrub({"echo": SECRET, "odd key": SECRET})
    rep = r.report()
    assert dict(rep.counts) == {"secrets": 4}
    assert rep.total == 4
    assert rep.paths == ('$.echo', '$["odd key"]', "tool.called#1.args.notes[0]",
                         "tool.called#1.args.password")
    dumped = json.dumps([dict(rep.counts), rep.paths])
    assert SECRET not in dumped and SK not in dumped


def test_report_paths_are_bounded():
    r = secrets()
    r.scrub({f"k{i}": SK for i in range(redaction.MAX_PATHS + 5)})
    rep = r.report()
    assert len(rep.paths) == redaction.MAX_PATHS and rep.paths_dropped == 5
    assert rep.total == redaction.MAX_PATHS + 5


def test_nesting_too_deep_fails_closed():
    deep: object = SECRET
    for _ in range(5000):
        deep = [deep]
    r = secrets()
    r.remember(SECRET)
    assert r.scrub(deep) == "[REDACTED]"


def test_many_remembered_values_stay_fast_and_correct():
    r = secrets()
    r.remember([f"secret-value-{i:05d}" for i in range(3000)])
    text = " ".join(f"x secret-value-{i:05d}" for i in range(0, 3000, 7))
    assert "secret-value" not in r.scrub_text(text)


def test_doctests():
    assert doctest.testmod(redaction).failed == 0


# ---------------------------------------------------------------- property
json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)
secret_text = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=6, max_size=20).map(
    lambda s: "Zq" + s)


def plant(doc, secret, where: int):
    """Put `{"Password": secret}` somewhere inside `doc`, plus a copy of the secret elsewhere."""
    holder = {"Password": secret}
    if isinstance(doc, dict) and doc and where % 3 == 0:
        doc[next(iter(doc))] = [doc[next(iter(doc))], holder]
        return [f"copy: {secret}!", doc]
    if isinstance(doc, list) and where % 3 == 1:
        return doc + [holder, {"x": [secret]}]
    return {"a": doc, "b": [secret + " again"], "deep": {"c": holder}}


@settings(max_examples=150, deadline=None)
@given(json_value, secret_text, st.integers(0, 10), st.booleans())
def test_planted_secret_never_survives_scrubbing(doc, secret, where, frozen):
    value = plant(doc, secret, where)
    value = freeze(value) if frozen else value
    r = Redactor([rule(keys=["password"])])
    out = r.scrub(value)
    assert secret not in json.dumps(out, default=dict, ensure_ascii=False)
    assert secret not in json.dumps([dict(r.report().counts), r.report().paths])
