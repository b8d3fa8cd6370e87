"""Conformance: the checker on large guards (tooling §3: no command hangs) and without cascades
(tooling §2: one root cause, one diagnostic).

No timing is asserted: work is measured by counting the solver's value tests (`accepts`) and
evaluations (`evaluate`), which is deterministic. A counter that passes its limit raises at once,
so a quadratic solver fails these tests quickly instead of hanging them.
"""
from __future__ import annotations

import pytest

from afp_dsl.checks import solver
from check_support import analyse


class TooMuchWork(Exception):
    pass


@pytest.fixture
def work(monkeypatch):
    """Counts `accepts` and `evaluate` calls in the solver; raises past `work.limit`."""

    class Counter:
        calls = 0
        limit = 10**9

        def wrap(self, fn):
            def counted(*args):
                self.calls += 1
                if self.calls > self.limit:
                    raise TooMuchWork(f"more than {self.limit} solver calls")
                return fn(*args)
            return counted

    c = Counter()
    monkeypatch.setattr(solver, "accepts", c.wrap(solver.accepts))
    monkeypatch.setattr(solver, "evaluate", c.wrap(solver.evaluate))
    return c


def _guard(conjuncts: list[str]) -> str:
    return ('agent a { system = "x" }\n'
            f'instruction i {{ prompt = "x" when = {" and ".join(conjuncts)} }}\n')


def _codes(text: str) -> list[str]:
    return [d.code for d in analyse(text, "t.afp")[1]]


# ---------------------------------------------------------------- finding #4: no hang
# Before the fix: about 2·n² calls (n = 400: 650,000; n = 4000 ran for minutes).
def test_4000_identical_conjuncts_take_linear_work(work) -> None:
    n = 4000
    work.limit = 20 * n
    assert _codes(_guard(["message matches /a/"] * n)) == []
    assert work.calls <= 20 * n


def test_work_grows_linearly_with_identical_conjuncts(work) -> None:
    counts = []
    work.limit = 40_000  # cumulative: well above linear, far below quadratic
    for n in (500, 1000, 2000):
        work.calls = 0
        assert _codes(_guard(["message matches /a/"] * n)) == []
        counts.append(work.calls)
    assert counts[2] <= 2.5 * counts[1] <= 2.5 * 2.5 * counts[0]


# Before the fix: about n²/2 calls (n = 400: 170,000).
def test_600_distinct_not_mentions_take_linear_work(work) -> None:
    n = 600
    work.limit = 20 * n
    assert _codes(_guard([f'not (message mentions "w{i}")' for i in range(n)])) == []
    assert work.calls <= 20 * n


# Every candidate passes most conditions and fails the last: quadratic without a budget.
def test_the_budget_stops_a_guard_that_defeats_the_candidates(work) -> None:
    n = 1500
    conj = [f'not (message mentions "w{i}")' for i in range(n)] + ["message matches /^b{3}$/"]
    bound = 2 * solver.MAX_WORK + 30 * n  # a text test is one `accepts` and one `evaluate`
    work.limit = bound
    assert _codes(_guard(conj)) == []  # given up: nothing claimed
    assert work.calls <= bound


def test_past_the_budget_the_solver_claims_nothing() -> None:
    n = 1500
    conj = [f'not (message mentions "w{i}")' for i in range(n)] + ["message matches /^b{3}$/"]
    expr = analyse(_guard(conj), "t.afp")[0].modules[0].decls[1].when
    assert solver.refute([expr]) is None
    verdict = solver.solve([expr])
    assert verdict.status == "unknown" and any("value tests" in n for n in verdict.notes)


def test_a_wide_contradiction_is_still_proved_and_shown_once(work) -> None:
    n = 4000
    work.limit = 20 * n
    diags = analyse(_guard(['message == "a"'] * n + ['message == "b"']), "t.afp")[1]
    assert [d.code for d in diags] == ["AFP208"]
    assert diags[0].notes == ('`message == "a"` and `message == "b"` cannot both be true',)


def test_a_long_in_list_is_solved_without_quadratic_deduplication(work) -> None:
    values = ", ".join(f'"v{i}"' for i in range(4000))
    work.limit = 100_000
    assert _codes(_guard([f"message in [{values}]", 'message != "v0"'])) == []


def test_identical_atoms_with_different_literal_types_are_not_merged() -> None:
    # `true` and `1` are equal in Python but not in AFP: merging them would lose a contradiction.
    from afp_dsl.checks.atoms import Atom
    key = ("path", "result", "x")
    a, b = Atom("eq", key, values=(True,), text="t"), Atom("eq", key, values=(1,), text="t")
    assert solver.solve_key((a, b), key).status == "unsat"
    assert solver._unique((a, b)) == (a, b)


# ---------------------------------------------------------------- finding #3: no cascades
ROUTE_CANNOT_FIRE = """
agent a { system = "x" graph = g }
tool t1 { description = "1" impl = returns("ok") }
tool t2 { description = "2" impl = returns("ok") }
skill s1 { description = "1" tools = [t1] }
skill s2 { description = "2" }
skill s3 { description = "3" }
graph g {
  entry s1
  route s1 -> s2 on t2
  route s1 -> s3 status absent
}
"""


def test_a_route_that_can_never_fire_competes_with_nothing() -> None:
    assert _codes(ROUTE_CANNOT_FIRE) == ["AFP209"]


def test_a_route_whose_tool_is_a_baseline_tool_still_competes() -> None:
    text = ROUTE_CANNOT_FIRE.replace('graph = g }', 'graph = g tools = [t2] }')
    assert _codes(text) == ["AFP205"]


def test_a_shadowed_route_is_not_an_earlier_competitor() -> None:
    text = ROUTE_CANNOT_FIRE.replace(
        "route s1 -> s2 on t2\n  route s1 -> s3 status absent",
        "route s1 -> s2 on t1\n  route s1 -> s3 on t1\n  route s1 -> s2 on t1 when status == \"absent\"")
    diags = analyse(text, "t.afp")[1]
    assert [d.code for d in diags] == ["AFP205"], [d.message for d in diags]
    assert "never fires" in diags[0].message


GRAPH_TYPO = """
agent a { system = "x" graph = dsk }
tool lookup { description = "l" input { id: string } output { status: "found" | "missing" } impl = returns({status: "found"}) }
skill triage { description = "t" tools = [lookup] }
skill refunds { description = "r" }
graph desk {
  entry triage
  route triage -> refunds on lookup
}
test t1 {
  user "hi"
  model calls lookup { id: "1" }
  model says "x"
  expect route triage -> refunds
}
"""


def test_a_misspelt_graph_is_reported_once() -> None:
    assert _codes(GRAPH_TYPO) == ["AFP101"]


def test_a_misspelt_graph_does_not_hide_unknown_tools_of_the_test() -> None:
    text = GRAPH_TYPO.replace("model calls lookup", "model calls lokup")
    assert _codes(text) == ["AFP101", "AFP404"]


def test_a_resolved_graph_still_reports_missing_tools_and_edges() -> None:
    text = GRAPH_TYPO.replace("graph = dsk", "graph = desk").replace(
        "expect route triage -> refunds", "expect route refunds -> triage").replace(
        'model says "x"', 'model calls other { }\n  model says "x"') + 'tool other { description = "o" }\n'
    assert sorted(_codes(text)) == ["AFP404", "AFP406"]


def test_a_misspelt_graph_hides_no_builtin_of_the_test() -> None:
    text = GRAPH_TYPO.replace('model says "x"',
                              'model calls read_skill { id: "refunds" }\n  model says "x"')
    assert _codes(text) == ["AFP101"]
