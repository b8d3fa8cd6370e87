"""Result envelopes: status, what the model reads, validation of the helpers' arguments."""
from __future__ import annotations

import datetime
import doctest
import json

import pytest

from afp_dsl import envelopes
from afp_dsl.envelopes import ABSENT_NOTE, absent, coverage, described, is_envelope


def test_absent_is_an_answer_with_a_short_explanation():
    env = absent("no order AB-99", searched=["orders", "archive"])
    assert env.status == "absent"
    text = env.to_model()
    assert text == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    assert json.loads(text) == {"absent": True, "reason": "no order AB-99",
                                "searched": ["orders", "archive"], "note": ABSENT_NOTE}
    assert "answer, not an error" in ABSENT_NOTE


def test_absent_searched_may_be_one_string_or_omitted():
    assert absent("x", searched="orders").searched == ("orders",)
    assert "searched" not in absent("x").to_json()


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_absent_needs_a_reason(bad):
    with pytest.raises(ValueError, match="`reason` must be a non-empty string"):
        absent(bad)


def test_absent_searched_must_be_strings():
    with pytest.raises(TypeError):
        absent("x", searched=[1])


def test_complete_coverage_is_success():
    env = coverage([{"id": 1}, {"id": 2}], total=2, source="orders db")
    assert env.status == "success" and env.covered == 2
    assert json.loads(env.to_model()) == {
        "rows": [{"id": 1}, {"id": 2}], "coverage": {"covered": 2, "complete": True, "total": 2},
        "source": "orders db"}


def test_incomplete_coverage_is_partial_and_says_so():
    env = coverage([{"id": 1}], total=10)
    assert env.status == "partial"
    cov = json.loads(env.to_model())["coverage"]
    assert cov["complete"] is False and "Only 1 of 10 rows" in cov["note"]


def test_coverage_without_total_is_complete_and_covered_may_be_given():
    assert coverage([]).status == "success"
    assert coverage([1, 2], covered=40, total=50).status == "partial"


@pytest.mark.parametrize("kwargs, message", [
    ({"total": 1}, "larger than `total`"), ({"total": -1}, "non-negative"),
    ({"covered": True}, "non-negative"), ({"source": ""}, "`source`"),
])
def test_coverage_rejects_bad_numbers(kwargs, message):
    with pytest.raises(ValueError, match=message):
        coverage([1, 2], **kwargs)


@pytest.mark.parametrize("rows", ["abc", {"a": 1}, 5])
def test_coverage_rows_must_be_a_list(rows):
    with pytest.raises(TypeError):
        coverage(rows)


def test_envelopes_are_frozen_and_hold_frozen_data():
    rows = [{"id": 1}]
    env = coverage(rows)
    rows[0]["id"] = 99
    assert env.rows[0]["id"] == 1
    with pytest.raises(AttributeError):
        env.total = 3  # type: ignore[misc]
    assert hash(env) == hash(coverage([{"id": 1}]))


def test_described_value():
    env = described({"temp": 21}, description="temperature in Celsius", source="met office")
    assert env.status == "success"
    assert json.loads(env.to_model()) == {"value": {"temp": 21}, "description": "temperature in Celsius",
                                          "source": "met office"}
    with pytest.raises(ValueError):
        described(1, description="")


def test_to_model_never_raises_on_odd_values():
    when = datetime.date(2026, 1, 2)
    assert "2026-01-02" in described(when, description="a date").to_model()


def test_is_envelope():
    assert all(is_envelope(e) for e in (absent("x"), coverage([]), described(1, description="d")))
    assert not is_envelope({"absent": True})


def test_doctests():
    assert doctest.testmod(envelopes).failed == 0
