"""A policy block on a built-in tool (`read_skill`, `skip_step`) is valid: policies see the
built-ins' calls (semantics §7); an unknown tool keeps its AFP101 and suggestion."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent a {{ graph = g policies = [p] }}\ntool t {{ description = "d" }}\n'
        'skill s {{ description = "d" tools = [t] steps {{ t "x" }} }}\ngraph g {{ entry s }}\n'
        '{extra}policy p {{ {moment} {tool} {{ deny when true because "x" }} }}\n')


@pytest.mark.parametrize("moment, tool", [("before", "read_skill"), ("after", "skip_step")])
def test_a_block_on_a_built_in_is_valid(moment: str, tool: str) -> None:
    assert afp_dsl.check(SPEC.format(extra="", moment=moment, tool=tool)) == []


def test_an_aliased_built_in_name_is_still_unknown() -> None:
    spec = 'import "std/redact" as lib\n' + SPEC.format(extra="", moment="before", tool="lib.read_skill")
    assert [d.code for d in afp_dsl.check(spec)] == ["AFP101"]


def test_an_unknown_tool_keeps_its_did_you_mean() -> None:
    diags = afp_dsl.check(SPEC.format(extra="", moment="before", tool="tt"))
    assert [d.code for d in diags] == ["AFP101"]
    assert "built-in" not in diags[0].message and "did you mean `t`" in (diags[0].help or "")


@pytest.mark.parametrize("agent, tool, fires", [
    ('agent a { tools = [t] policies = [p] }', "read_skill", True),       # no skills
    ('agent a { skills = [s] policies = [p] }', "read_skill", False),     # an open skill
    ('agent a { skills = [s] policies = [p] }', "skip_step", True),       # no steps
    ('agent a { skills = [st] policies = [p] }', "skip_step", False),     # a skill with steps
    ('agent a { skills = [sx] policies = [p] }', "read_skill", False),    # a misspelt skill: AFP101
])
def test_a_block_on_a_built_in_no_user_is_offered_never_matches(agent, tool, fires) -> None:
    spec = (agent + '\ntool t { description = "d" }\nskill s { description = "d" }\n'
            'skill st { description = "d" tools = [t] steps { t "x" } }\n'
            f'policy p {{ before {tool} {{ deny when true because "x" }} }}\n')
    found = [d for d in afp_dsl.check(spec) if d.code == "AFP401"]
    assert bool(found) is fires, found
    if fires:
        assert found[0].message == f"the `before {tool}` rules can never match"
