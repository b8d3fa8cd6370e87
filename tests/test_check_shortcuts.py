"""The graph checks' early exits answer as the full computation would:

1. `graph._may_be_closed` is never false for a graph with a cycle of two or more skills that no
   route leaves (every graph of up to four skills and its routes, against Tarjan's components);
2. `graph._agent_cycles` still finds a cycle through agent tools (its exit is taken only when
   no tool is run by an agent).
"""
from __future__ import annotations

import itertools
import textwrap

from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import graph
from afp_dsl.checks import graphview as G
from afp_dsl.loader import load_program


def _view(n: int, edges: tuple) -> G.GraphView:
    skills = "\n".join(f'skill s{i} {{ description = "s" }}' for i in range(n))
    routes = "\n".join(f"  route s{a} -> s{b}" for a, b in edges)
    text = f"{skills}\ngraph g {{\n  entry s0\n{routes}\n}}\n"
    program, _ = load_program(text=text, name="t.afp")
    a = Analysis(program)
    m, g = next(a.decls(ir.Graph))
    return G.view(a, m, g)


def _has_closed_cycle(v: G.GraphView) -> bool:
    out = v.out_edges()
    for comp in G.sccs(list(v.nodes), lambda k: [e.dst for e in out[k]]):
        inside = set(comp)
        if len(comp) > 1 and all(e.dst in inside for k in comp for e in out[k]):
            return True
    return False


def test_may_be_closed_is_true_whenever_a_cycle_has_no_way_out():
    for n in (2, 3, 4):
        pairs = [(a, b) for a in range(n) for b in range(n)]
        for size in range(1, 6):
            for edges in itertools.combinations(pairs, size):
                if {0, *range(n)} - {x for e in edges for x in e} - {0}:
                    continue  # (every skill named, so every skill is a node)
                v = _view(n, edges)
                if _has_closed_cycle(v):
                    assert graph._may_be_closed(v), edges


CYCLE = """
agent a { tools = [ask_b] }
agent b { tools = [ask_a] }
tool ask_b { description = "b" impl = agent(b) }
tool ask_a { description = "a" impl = agent(a) }
"""


def test_agent_cycles_are_still_found():
    program, diags = load_program(text=textwrap.dedent(CYCLE), name="t.afp")
    assert program is not None, diags
    found = list(graph._agent_cycles(Analysis(program)))
    assert [d.code for d in found] == ["AFP213"]
