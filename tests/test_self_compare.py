"""A path compared with itself by an operator that then never holds (`message != message`,
`args.x < args.x`) is AFP305 at the comparison (it passed silently); its guard is not also
AFP208. `==`, `<=`, `>=` with itself, and `!=` on a path a NaN may reach, are not judged."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent a {{ graph = g }}\n'
        'tool t {{ description = "d" input {{ x: integer }} output {{ y: number }} }}\n'
        'skill s {{ description = "d" tools = [t] }}\nskill s2 {{ description = "d" }}\n'
        'graph g {{ entry s route s -> s2 on t when {cond} }}\n')


@pytest.mark.parametrize("cond", ["message != message", "args.x < args.x", "result.y > result.y",
                                  "iteration != iteration", "message != message and args.x > 1"])
def test_a_path_compared_with_itself_never_holds(cond: str) -> None:
    diags = afp_dsl.check(SPEC.format(cond=cond))
    assert [d.code for d in diags] == ["AFP305"], diags
    assert "can never be true" in diags[0].message
    assert "with itself" in diags[0].notes[0]


@pytest.mark.parametrize("cond", ["message == message", "args.x <= args.x", "result.y != result.y",
                                  "args.x != args.x"])
def test_comparisons_with_itself_that_can_hold_are_not_reported(cond: str) -> None:
    assert afp_dsl.check(SPEC.format(cond=cond)) == []


def test_a_policy_rule_comparing_a_path_with_itself_is_reported() -> None:
    text = ('agent a { tools = [t] policies = [p] }\ntool t { description = "d" input { x: integer } }\n'
            'policy p { before t { deny when args.x > args.x because "x" } }\n')
    assert [d.code for d in afp_dsl.check(text)] == ["AFP305"]
