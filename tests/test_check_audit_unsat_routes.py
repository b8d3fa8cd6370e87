"""Audit regression: a route whose own guard never holds (AFP208) never fires, like a shadowed
or dead route: `--explain-reach` marks a hop over it instead of showing it as a way in, and
AFP207 (rule 3: a route onward inside the cycle that can fire) does not count it. Before, the
witness path went through the impossible route unmarked.
"""
from __future__ import annotations

from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import reach
from afp_dsl.loader import load_program

from check_support import analyse

HEAD = """agent a { graph = g }
tool t { description = "d" output { v: number } }
skill s1 { description = "d" tools = [t] }
skill s2 { description = "d" tools = [t] }
skill s3 { description = "d" tools = [t] }
"""


def test_witness_path_marks_a_route_whose_guard_never_holds():
    text = HEAD + """graph g {
  entry s1
  route s1 -> s2 on t when result.v > 1 and result.v < 0
  route s2 -> s3 on t
}
"""
    program, _ = load_program(text=text, name="t.afp")
    a = Analysis(program)
    m, g = next(a.decls(ir.Graph))
    hops = reach.explain_reach(a, m, g, "s3")
    assert hops[1].startswith("→ s2 on t when result.v > 1 and result.v < 0 (never fires: its "
                              "condition can never hold; only when the model picks it)")
    assert hops[2] == "→ s3 on t"


def test_no_way_out_does_not_count_a_route_whose_guard_never_holds():
    text = HEAD + """graph g {
  entry s1
  route s1 -> s2 on t
  route s2 -> s3 on t when result.v > 1 and result.v < 0
  route s2 -> s3
  route s3 -> s2 on t
}
"""
    assert [d.code for d in analyse(text, "t.afp")[1]] == ["AFP208"]


def test_a_route_guard_reading_the_first_iteration_never_holds():
    """A route is decided at the iteration after its tool ran (at least 2): `iteration == 1`
    or `iteration < 2` in a route guard never holds (AFP208); in an entry it can."""
    from check_support import codes
    for guard in ("iteration == 1", "iteration < 2", "iteration <= 1 and result.v > 0"):
        text = HEAD + f"graph g {{\n  entry s1\n  route s1 -> s2 on t when {guard}\n}}\n"
        assert "AFP208" in codes(text), guard
    for guard in ("iteration == 2", "iteration > 1", "iteration < 3"):
        text = HEAD + f"graph g {{\n  entry s1\n  route s1 -> s2 on t when {guard}\n}}\n"
        assert "AFP208" not in codes(text), guard
    entry = HEAD + "graph g {\n  entry s1 when iteration == 1\n  route s1 -> s2 on t\n}\n"
    assert "AFP208" not in codes(entry)
