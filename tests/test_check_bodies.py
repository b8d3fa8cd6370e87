"""AFP214/AFP215 (the original's body-foreign-tool / body-unknown-tool): a skill's body that
names a tool it will not be offered, or calls a tool that does not exist."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent ag {{ skills = [s, r] tools = [{baseline}] tool_scope = "{scope}" }}\n'
        'tool lookup_orders {{ description = "l" }}\ntool issue_refund {{ description = "i" }}\n'
        'tool notify_user {{ description = "n" }}\n'
        'skill s {{ description = "s" body = "{body}" tools = [{tools}] }}\n'
        'skill r {{ description = "r" tools = [issue_refund] }}\n')


def codes(body: str, tools: str = "lookup_orders", baseline: str = "notify_user",
          scope: str = "active") -> list[str]:
    spec = SPEC.format(body=body, tools=tools, baseline=baseline, scope=scope)
    return [d.code for d in afp_dsl.check(spec)]


@pytest.mark.parametrize("body, found", [
    ("Call lookup_orders(id), then issue_refund.", ["AFP214"]),
    ("Call lookup_orders(id), then notify_user.", []),             # a baseline tool
    ("Refund with issue_refunds when asked.", []),                 # (a whole word only)
    ("Call lookup_order(id).", ["AFP215"]),
    ("Use read_skill(id) to move on.", []),                       # a built-in
    ("Call lookup(id) first.", []),                               # (not snake_case: prose)
])
def test_a_body_is_read_for_tool_names(body: str, found: list[str]) -> None:
    assert codes(body) == found


def test_the_unknown_call_suggests_a_close_tool() -> None:
    (d,) = afp_dsl.check(SPEC.format(body="Call lookup_order(id).", tools="lookup_orders",
                                     baseline="notify_user", scope="active"))
    assert d.severity.value == "warning" and d.help == "did you mean `lookup_orders`?"


def test_a_skill_whose_tools_are_misspelt_is_not_judged() -> None:
    assert codes("then issue_refund", tools="lookup_ordrs") == ["AFP101"]


def test_every_tool_is_offered_by_default_so_naming_another_skills_is_fine() -> None:
    """semantics §2: with `tool_scope = "always"` (the default) every skill's tools are offered."""
    assert codes("Call lookup_orders(id), then issue_refund.", scope="always") == []
    assert codes("Call lookup_order(id).", scope="always") == ["AFP215"]


def test_a_graph_with_scope_tools_scopes_its_skills_bodies_too() -> None:
    """`scope_tools = true` on the graph gives its skills `tool_scope = "active"` (language.md),
    and the run offers a skill's tools only while it is active; before, AFP214 read only the
    agent's `tool_scope` and said nothing (the original's "a genuine cross-skill mention")."""
    spec = ('agent ag {{ graph = g }}\ntool a_tool {{ description = "a" }}\n'
            'tool b_tool {{ description = "b" }}\n'
            'skill a {{ description = "A" body = "Hand off with b_tool." tools = [a_tool] }}\n'
            'skill b {{ description = "B" tools = [b_tool] }}\n'
            'graph g {{ {scope} entry a  route a -> b on a_tool }}\n')
    assert [d.code for d in afp_dsl.check(spec.format(scope="scope_tools = true"))] == ["AFP214"]
    assert [d.code for d in afp_dsl.check(spec.format(scope=""))] == []
