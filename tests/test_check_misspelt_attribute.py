"""One root cause, one diagnostic (tooling §3): a declaration with a misspelt attribute
(`tols = [t]`, AFP104) is not also reported for what the attribute would have said: a route
waiting for a tool of the skill (AFP209), a step tool outside it (AFP211), a test's tool the
agent lacks (AFP404) or a cursor off its graph (AFP406)."""
from __future__ import annotations

import pytest

import afp_dsl

SKILL_TOLS = '''agent a { system = "x" graph = g }
tool t { description = "x" impl = returns({ v: 1 }) }
skill s1 { description = "e" tols = [t] }
skill s2 { description = "f" }
graph g {
  entry s1
  route s1 -> s2 on t
}
'''
AGENT_TOLS = '''agent a { system = "x" tols = [u] }
tool u { description = "y" impl = returns({ v: 1 }) }
test x {
  user "hi"
  model calls u {}
  model says "ok"
  expect called u 1
}
'''
AGENT_GRAHP = '''agent a { system = "x" grahp = g }
tool t { description = "x" impl = returns({ v: 1 }) }
skill s1 { description = "e" tols = [t] steps { t "do" } }
skill s2 { description = "f" }
graph g {
  entry s1
  route s1 -> s2 on t
}
test x {
  user "hi"
  model calls t {}
  model says "ok"
  expect cursor s2
  expect route s1 -> s2
}
'''


@pytest.mark.parametrize("spec, count", [(SKILL_TOLS, 1), (AGENT_TOLS, 1), (AGENT_GRAHP, 2)])
def test_a_misspelt_attribute_is_the_only_diagnostic(spec: str, count: int) -> None:
    codes = [d.code for d in afp_dsl.check(spec)]
    assert codes == ["AFP104"] * count


@pytest.mark.parametrize("spec, code", [
    (SKILL_TOLS.replace(" tols = [t]", ""), "AFP209"),
    (AGENT_TOLS.replace(" tols = [u]", ""), "AFP404"),
])
def test_the_same_mistake_without_the_misspelling_is_reported(spec: str, code: str) -> None:
    """The rules still speak for a declaration whose attributes are all known."""
    found = [d.code for d in afp_dsl.check(spec)]
    assert code in found, found


def test_a_tool_the_agent_lacks_is_one_diagnostic_across_the_tests() -> None:
    """The agent's missing tool is one root cause however often the tests use it."""
    spec = ('agent a { system = "x" }\ntool u { description = "y" impl = returns({ v: 1 }) }\n'
            'test x {\n  user "hi"\n  model calls u {}\n  model says "ok"\n  expect called u 1\n}\n'
            'test y {\n  user "hi"\n  model calls u {}\n  model says "ok"\n}\n')
    (d,) = afp_dsl.check(spec)
    assert (d.code, d.message) == ("AFP404", "agent `a` has no tool `u`")
    assert [(label.span.start, label.message) for label in d.labels[1:]] == [
        (spec.index("called u") + 7, "also named here"), (spec.rindex("calls u") + 6, "also named here")]


def test_a_misspelt_attribute_that_refers_to_nothing_leaves_the_rest_judged() -> None:
    """`sytem` is no reference: the agent's graph and tools are known, so their mistakes stand."""
    spec = SKILL_TOLS.replace('system = "x"', 'sytem = "x"').replace(" tols = [t]", "")
    assert [d.code for d in afp_dsl.check(spec)] == ["AFP104", "AFP209"]


def test_a_policy_of_an_agent_with_misspelt_tools_is_not_judged_for_them() -> None:
    spec = ('agent a { tols = [t] policies = [p] }\ntool t { description = "t" }\n'
            'policy p { before t { deny when true because "no" } }\n')
    assert [d.code for d in afp_dsl.check(spec)] == ["AFP104"]


def test_extra_fields_in_scripted_built_in_calls_are_fine_as_at_run_time() -> None:
    spec = ('agent a { skills = [s] }\nskill s { description = "s" }\n'
            'test t {\n  user "hi"\n  model calls read_skill { id: "s", why: "need" }\n'
            '  model says "done"\n}\n')
    assert afp_dsl.check(spec) == []
