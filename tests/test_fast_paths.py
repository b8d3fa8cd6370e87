"""The interpreter's speed-ups answer exactly what the slow paths answer.

* `Redactor.is_clean(v)` holds only when scrubbing `v` changes nothing, counts nothing and
  remembers nothing (so recording `v` as it is equals recording its scrubbed copy);
* the plain argument check in `toolcall` says "valid" only when JSON Schema does;
* `parse_result`'s shortcut for text that cannot be JSON returns what the decoder path returns;
* condition texts rendered once per expression equal `render_expr`.
"""
from __future__ import annotations

import json

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl.evaluate import _rendered, parse_result, render_expr
from afp_dsl.redaction import Redactor
from afp_dsl.schema_quick import checker as _plain_checker
from strategies import expressions

SETTINGS = settings(derandomize=True, deadline=None, max_examples=300, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

words = st.sampled_from(["a", "token", "TOKEN", "name", "sk-abcdefgh", "w1", "secret-value", "x y",
                         "Bearer abc", "4111111111111111", "", "note"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), words, st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(words, inner, max_size=3)), max_leaves=10)

RULES = [ir.Redact(name="r", keys=("token",), patterns=(ir.Regex(pattern="sk-[a-z]{6,}", flags=""),
                                                        ir.Regex(pattern=r"(?P<luhn>\d{16})", flags="")))]


@SETTINGS
@given(st.lists(values, min_size=1, max_size=4))
def test_a_clean_value_scrubs_to_itself(seq) -> None:
    fast, slow = Redactor(RULES), Redactor(RULES)
    for v in seq:  # a sequence, so remembered secrets and the clean cache interact
        clean = fast.is_clean(v)
        got = v if clean else fast.scrub(v, at="$")
        assert got == slow.scrub(v, at="$")
        if clean:
            assert slow.report().total == fast.report().total
    assert fast.report() == slow.report()
    assert fast._memory.values == slow._memory.values


def test_a_remembered_secret_makes_a_cached_clean_string_dirty() -> None:
    red = Redactor(RULES)
    assert red.is_clean({"note": "hunter22"})
    red.scrub({"token": "hunter22"}, at="$")
    assert not red.is_clean({"note": "hunter22"})
    assert red.scrub({"note": "hunter22"}, at="$") == {"note": "[REDACTED]"}


SCHEMAS = [
    {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"],
     "additionalProperties": False},
    {"type": "object", "properties": {"id": {"type": "string", "minLength": 1, "description": "x"},
                                      "count": {"type": "integer", "minimum": 0, "maximum": 3}},
     "required": ["id"], "additionalProperties": False},
    {"type": "object", "properties": {"n": {"type": "number", "maximum": 5.5}, "b": {"type": "boolean"}}},
]
arg_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 7), st.floats(), st.text(max_size=3),
                       st.lists(st.integers(), max_size=1), st.just({}))


@SETTINGS
@given(st.sampled_from(SCHEMAS), st.dictionaries(st.sampled_from(["word", "id", "count", "n", "b", "zz"]),
                                                 arg_values, max_size=4))
def test_the_plain_argument_check_never_passes_what_json_schema_rejects(schema, args) -> None:
    check = _plain_checker(schema)
    assert check is not None
    if check(args):
        assert jsonschema.Draft202012Validator(schema).is_valid(args)


def test_schemas_beyond_the_plain_subset_go_to_json_schema() -> None:
    assert _plain_checker({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}) is None
    assert _plain_checker({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}) is None
    assert _plain_checker({"type": "object", "patternProperties": {"^a": {"type": "string"}}}) is None
    assert _plain_checker({"type": "object", "additionalProperties": {"type": "string"}}) is None
    assert _plain_checker({"type": "object", "properties": [1]}) is None  # malformed: jsonschema says why
    assert _plain_checker({"type": "object", "required": [["a"]]}) is None


@SETTINGS
@given(st.one_of(st.text(max_size=12), st.sampled_from(["w1", " {\"a\": 1}", "\n[1]", "-1", "true", "nan",
                                                         "NaN", "Infinity", "tru", "\"s\"", " x"])))
def test_parse_result_shortcut_matches_the_decoder(text: str) -> None:
    try:
        want = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, RecursionError):
        want = text
    assert parse_result(text) == want


@SETTINGS
@given(expressions())
def test_condition_text_is_rendered_once_and_the_same(expr) -> None:
    assert _rendered(expr) == render_expr(expr)
    assert _rendered(expr) == render_expr(expr)
