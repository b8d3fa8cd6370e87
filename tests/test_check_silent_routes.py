"""Routes AFP205 proves never to fire (shadowed, or duplicating an earlier route) are treated
like routes AFP209 proves dead (spec/semantics.md §4: the first deterministic route whose
conditions hold fires, so a later route an earlier one covers never does):

1. `--explain-reach` prefers a path over routes that can fire, and marks a hop over a shadowed
   route (``(never fires: shadowed by the earlier route `s -> f`; only when the model picks
   it)``) instead of showing it as if it fired;
2. AFP207 (rule 3: every skill of the cycle has a route onward inside it that can fire) does not
   count a shadowed route as one that can fire;
3. like any edge they still widen what `read_skill` accepts, so AFP202/AFP203 are unchanged;
4. the pairs of routes are analysed once per graph, shared by AFP205 and the graph checks.
"""
from __future__ import annotations

import textwrap

import afp_dsl
from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import reach
from afp_dsl.checks import graphview as G
from afp_dsl.checks import routes, run_checks
from afp_dsl.loader import load_program

HEAD = """
agent a { graph = g }
tool t { description = "t" output { v: number } }
tool u { description = "u" }
"""

SHADOWED = HEAD + """
skill start { description = "s" tools = [t, u] }
skill first { description = "f" }
skill hidden { description = "h" tools = [t] }
skill behind { description = "b" }
graph g {
  entry start
  route start -> first on t
  route start -> hidden on t when result.v > 1
  route hidden -> behind on t
}
"""

MARK = ("→ hidden on t when result.v > 1 (never fires: shadowed by the earlier route "
        "`start -> first`; only when the model picks it)")


def _analysis(text: str) -> Analysis:
    program, _ = load_program(text=textwrap.dedent(text), name="t.afp")
    assert program is not None
    return Analysis(program)


def _reach(text: str, skill: str):
    a = _analysis(text)
    m, g = next(a.decls(ir.Graph))
    return reach.explain_reach(a, m, g, skill)


def codes(text: str) -> list[str]:
    return [d.code for d in afp_dsl.check(textwrap.dedent(text))]


# ---------------------------------------------------------------- #1 witness paths
def test_explain_reach_marks_a_hop_over_a_shadowed_route():
    assert _reach(SHADOWED, "hidden") == ["entry start", MARK]
    assert _reach(SHADOWED, "behind") == ["entry start", MARK, "→ behind on t"]


def test_the_report_marks_it_too():
    report = reach.reach_report(_analysis(SHADOWED), "hidden")
    assert report.endswith("reached by:\n  entry start\n  " + MARK)


def test_explain_reach_prefers_a_longer_path_over_routes_that_can_fire():
    text = SHADOWED.replace("  route hidden -> behind on t\n",
                            "  route start -> behind on u\n  route behind -> hidden on u\n")
    text = text.replace('skill behind { description = "b" }',
                        'skill behind { description = "b" tools = [u] }')
    assert _reach(text, "hidden") == ["entry start", "→ behind on u", "→ hidden on u"]


def test_a_hop_over_a_duplicate_says_so():
    text = SHADOWED.replace("  route hidden -> behind on t\n",
                            "  route hidden -> behind on t\n  route hidden -> behind on t\n")
    a = _analysis(text)
    v = next(G.views(a))
    never = routes.never_fires(a, v)
    assert sorted(never) == [1, 3]  # (by route index: the shadowed route, then the copy)
    assert reach.hop_text(v, v.routes[3], never) == (
        "→ behind on t (never fires: duplicates the earlier route `hidden -> behind`; "
        "only when the model picks it)")


def test_a_route_that_only_competes_is_not_marked():
    """An ambiguous pair (AFP205 "can fire on the same result") proves nothing: both can fire."""
    text = SHADOWED.replace("route start -> first on t\n", "route start -> first on t when result.v < 5\n")
    assert codes(text) == ["AFP210"]
    assert _reach(text, "hidden") == ["entry start", "→ hidden on t when result.v > 1"]


# ---------------------------------------------------------------- #2 AFP207
CYCLE = HEAD + """
skill s { description = "s" tools = [t] }
skill b { description = "b" tools = [t] }
graph g {
  entry s
  route s -> s on t
  route s -> b on t when result.v > 1
  route b -> s on t
}
"""


def test_a_shadowed_route_is_no_route_onward_for_afp207():
    assert codes(CYCLE) == ["AFP206", "AFP205"]


def test_afp207_still_holds_when_the_route_onward_can_fire():
    text = CYCLE.replace("  route s -> s on t\n  route s -> b on t when result.v > 1\n",
                         "  route s -> b on t when result.v > 1\n  route s -> s on t\n")
    assert "AFP207" in codes(text)


def test_afp207_counts_the_original_of_a_duplicate():
    text = CYCLE.replace("  route s -> s on t\n  route s -> b on t when result.v > 1\n",
                         "  route s -> b on t\n  route s -> b on t\n")
    assert sorted(codes(text)) == ["AFP205", "AFP207"]


# ---------------------------------------------------------------- #3 AFP202/AFP203 unchanged
def test_the_target_of_a_shadowed_route_is_neither_unreachable_nor_model_only():
    assert codes(SHADOWED) == ["AFP205"]  # (`behind` too: reached only through `hidden`)
    text = SHADOWED.replace("route hidden -> behind on t", "route hidden -> behind")
    assert codes(text) == ["AFP205", "AFP203"]  # (a bare route into `behind`, as before)


# ---------------------------------------------------------------- #4 computed once
def test_the_pairs_are_analysed_once_per_graph(monkeypatch):
    calls = []
    real = routes._pair
    monkeypatch.setattr(routes, "_pair", lambda *args: calls.append(args) or real(*args))
    a = _analysis(CYCLE)
    found = run_checks(a)
    m, g = next(a.decls(ir.Graph))
    reach.explain_reach(a, m, g, "b")
    assert [d.code for d in found].count("AFP205") == 1
    assert len(calls) == 1  # (one pair: `s -> s` and `s -> b`; the self-loop is a route too)
