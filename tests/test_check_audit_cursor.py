"""Audit regression: `expect cursor X` for a skill outside the agent's graph is AFP406. The
cursor moves only to the graph's skills (entries and route targets, semantics §4); an open skill
or any other skill never becomes it, and an agent without a graph has no cursor, so `afpc test`
would always fail the expectation. Before, `afpc check` passed it silently.
"""
from __future__ import annotations

from check_support import analyse

SPEC = """agent a {{ graph = g skills = [open_one] }}
agent b {{ }}
skill s {{ description = "d" }}
skill open_one {{ description = "d" }}
skill other {{ description = "d" }}
graph g {{ entry s }}
test x {{ agent = {agent} user "hi" model says "k" expect cursor {skill} }}
"""


def _found(agent: str, skill: str) -> list:
    return [(d.code, d.message) for d in analyse(SPEC.format(agent=agent, skill=skill), "t.afp")[1]]


def test_a_skill_outside_the_graph_is_never_the_cursor():
    assert _found("a", "other") == [("AFP406", "the cursor of agent `a` is never on `other`")]
    assert _found("a", "open_one") == [("AFP406", "the cursor of agent `a` is never on `open_one`")]
    assert _found("b", "s") == [("AFP406", "the cursor of agent `b` is never on `s`")]


def test_a_skill_of_the_graph_is_fine_and_misspelt_graphs_decide_nothing():
    assert _found("a", "s") == []
    text = SPEC.format(agent="a", skill="other").replace("graph = g ", "graph = gg ")
    assert [d.code for d in analyse(text, "t.afp")[1]] == ["AFP101"]
