"""`afpc test -k`: pytest's selection rules (case-insensitive words, `not` > `and` > `or`,
parentheses); the command-line behaviour is in test_cli_robust.py."""
from __future__ import annotations

import doctest

import pytest

from afp_dsl import testing_select
from afp_dsl.testing_select import parse_pattern

NAMES = ["s.afp::small_refund", "s.afp::big_refund", "s.afp::Lookup", "t.afp::small_lookup"]


@pytest.mark.parametrize("pattern, picked", [
    ("small", [0, 3]), ("LOOKUP", [2, 3]), ("T.AFP::", [3]),
    ("small or big and lookup", [0, 3]),  # (and binds tighter: small or (big and lookup))
    ("(small or big) and refund", [0, 1]),
    ("not small and refund", [1]), ("not (small and refund)", [1, 2, 3]),
    ("lookup and not (t.afp or big)", [2]),
])
def test_words_match_in_any_case_and_combine_as_in_pytest(pattern: str, picked: list[int]):
    selected = parse_pattern(pattern)
    assert [i for i, n in enumerate(NAMES) if selected(n)] == picked


def test_the_examples_hold() -> None:
    result = doctest.testmod(testing_select)
    assert result.failed == 0 and result.attempted >= 2


def test_nesting_is_bounded_with_a_message() -> None:
    with pytest.raises(ValueError, match="more than 100 deep"):
        parse_pattern("(" * 5000 + "a" + ")" * 5000)
    assert parse_pattern("(" * 50 + "a" + ")" * 50)("x::A")
