"""language §6: an operand is a path, a literal, a list or a call; a condition written where an
operand goes (`(x > 1) == true`, `mentions [x > 1]`) is outside the grammar: AFP001 at the inner
condition, once, and no other claim about the comparison holding it. A bracketed condition joined
by `and`, `or` or `not` is the grammar's own `"(" expr ")"`."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent a {{ context = [i] }}\n'
        'instruction i {{ prompt = "x" when = {cond} }}\n')


@pytest.mark.parametrize("cond, where", [
    ("(iteration >= 1) < 5", "an operand of `<`"),
    ('(iteration > 1) == "yes"', "an operand of `==`"),
    ("(iteration > 1) matches /x/", "an operand of `matches`"),
    ("(iteration > 1 and iteration < 0) == true", "an operand of `==`"),
    ("message mentions [iteration >= 1]", "an item of a list"),
    ("(message matches /x/) == false", "an operand of `==`"),
    ('message in ["a", message matches /x/]', "an item of a list"),
])
def test_a_condition_where_an_operand_goes_is_a_syntax_error(cond: str, where: str) -> None:
    spec = SPEC.format(cond=cond)
    (d,) = afp_dsl.check(spec)
    assert (d.code, d.message) == ("AFP001", f"a condition cannot be {where}")


@pytest.mark.parametrize("cond", [
    "not (iteration > 1 and iteration < 5) or (message == \"a\")",
    "(iteration > 1)",
    "((iteration > 1) or (iteration < 0)) and not (message matches /x/)",
    'message in ["a", "b"]',
])
def test_bracketed_conditions_joined_by_and_or_not_are_fine(cond: str) -> None:
    assert afp_dsl.check(SPEC.format(cond=cond)) == []
