"""A policy block on a built-in tool (`read_skill`, `skip_step`) is AFP101 saying that the
built-ins are not policed (it said only "unknown tool"); a declared tool of that name is policed."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent a {{ graph = g policies = [p] }}\ntool t {{ description = "d" }}\n'
        'skill s {{ description = "d" tools = [t] steps {{ t "x" }} }}\ngraph g {{ entry s }}\n'
        '{extra}policy p {{ {moment} {tool} {{ deny when true because "x" }} }}\n')


@pytest.mark.parametrize("moment, tool", [("before", "read_skill"), ("after", "skip_step")])
def test_a_block_on_a_built_in_says_built_ins_are_not_policed(moment: str, tool: str) -> None:
    diags = afp_dsl.check(SPEC.format(extra="", moment=moment, tool=tool))
    assert [d.code for d in diags] == ["AFP101"], diags
    d = diags[0]
    assert f"`{tool}` is a built-in tool" in d.message and "do not police" in d.message
    assert d.primary.message == "a built-in tool, not policed"


def test_an_unknown_tool_keeps_its_did_you_mean() -> None:
    diags = afp_dsl.check(SPEC.format(extra="", moment="before", tool="tt"))
    assert [d.code for d in diags] == ["AFP101"]
    assert "built-in" not in diags[0].message and "did you mean `t`" in (diags[0].help or "")
