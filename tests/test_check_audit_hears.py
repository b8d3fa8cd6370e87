"""Audit regression: a route without `on` hears only the results of its source skill's own
tools (semantics §4; `cursor._check`), so its `when tool == "u"` for a tool `u` the skill does
not have never holds: AFP208. Before, a misspelt or foreign tool name there passed silently.
"""
from __future__ import annotations

from check_support import analyse

SPEC = """agent a {{ graph = g tools = [base] }}
tool t {{ description = "d" }}
tool u {{ description = "d" }}
tool base {{ description = "d" }}
skill s1 {{ description = "d" tools = [t, u] }}
skill s2 {{ description = "d" tools = [t] }}
skill s3 {{ description = "d" }}
graph g {{
  entry s1
  route s1 -> s2 on t
  {route}
}}
"""


def _codes(route: str) -> list[str]:
    return [d.code for d in analyse(SPEC.format(route=route), "t.afp")[1]]


def test_a_tool_the_source_skill_does_not_have_is_unsatisfiable():
    assert _codes('route s2 -> s3 when tool == "u"') == ["AFP208"]
    assert _codes('route s2 -> s3 when tool == "base"') == ["AFP208"]
    assert _codes('route s2 -> s3 status failure when tool in ["lookp", "read_skill"]') == ["AFP208"]


def test_a_tool_of_the_source_skill_is_fine():
    assert _codes('route s2 -> s3 when tool == "t"') == []
    assert _codes('route s1 -> s3 when tool == "u"') == []
    assert _codes('route s2 -> s3 when tool != "u"') == []


def test_no_claim_without_known_tools():
    # no tools: the route is dead already (AFP209), not also AFP208
    assert _codes('route s1 -> s3 on u\n  route s3 -> s1 when tool == "t"') == ["AFP209"]
