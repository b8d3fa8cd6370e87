"""Property tests: reachability against brute force; guard verdicts against exhaustive evaluation."""
from __future__ import annotations

import itertools

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import graph as graph_checks
from afp_dsl.checks import graphview
from afp_dsl.checks.solver import Atom, refute, solve
from afp_dsl.evaluate import Env, evaluate

# ---------------------------------------------------------------- reachability
edges_st = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.booleans()), max_size=14)
entries_st = st.lists(st.integers(0, 6), min_size=1, max_size=3)


def _graph(n: int, entries: list[int], edges: list[tuple[int, int, bool]]) -> tuple[Analysis, ir.Graph]:
    skills = tuple(ir.Skill(name=f"s{i}", description="d") for i in range(n))
    routes = tuple(ir.Route(src=ir.Ref(name=f"s{a}"), dst=ir.Ref(name=f"s{b}"),
                            when=ir.Lit(value=True) if det else None) for a, b, det in edges)
    g = ir.Graph(name="g", entries=tuple(ir.Entry(skill=ir.Ref(name=f"s{e}")) for e in entries),
                 routes=routes)
    program = ir.Program(root="m", modules=(ir.Module(key="m", decls=skills + (g,)),))
    return Analysis(program), g


def _brute(entries, edges, deterministic_only: bool) -> set[str]:
    seen = {f"s{e}" for e in entries}
    changed = True
    while changed:
        changed = False
        for a, b, det in edges:
            if f"s{a}" in seen and f"s{b}" not in seen and (det or not deterministic_only):
                seen.add(f"s{b}")
                changed = True
    return seen


@settings(max_examples=200, deadline=None)
@given(entries=entries_st, edges=edges_st)
def test_reachability_matches_brute_force(entries, edges) -> None:
    a, g = _graph(7, entries, edges)
    v = graphview.view(a, "m", g)
    for det in (True, False):
        assert {k[1] for k in v.reach(det)} == _brute(entries, edges, det)
        for key in v.reach(det):  # every witness path is a real path from an entry
            path = v.path_to(key, det)
            assert path[0].dst == v.entries[[e.dst for e in v.entries].index(path[0].dst)].dst
            assert path[-1].dst == key
            for x, y in zip(path, path[1:]):
                assert y.src == x.dst and (y.deterministic or not det)


@settings(max_examples=200, deadline=None)
@given(entries=entries_st, edges=edges_st)
@example(entries=[0], edges=[(2, 1, True), (0, 1, False), (1, 2, True)])  # a cycle behind a bare route
@example(entries=[0], edges=[(0, 3, False), (1, 2, True), (2, 1, True), (3, 2, False)])
def test_every_unreachable_skill_is_reported_once(entries, edges) -> None:
    a, g = _graph(7, entries, edges)
    mentioned = {f"s{e}" for e in entries} | {f"s{x}" for e in edges for x in e[:2]}
    unreached = mentioned - _brute(entries, edges, False)
    model_only = _brute(entries, edges, False) - _brute(entries, edges, True)
    diags = list(graph_checks.check_view(a, graphview.view(a, "m", g)))
    for code, expected in (("AFP202", unreached), ("AFP203", model_only)):
        text = " ".join(d.message + " " + " ".join(d.notes) for d in diags if d.code == code)
        roots = [d.message.split("`")[1] for d in diags if d.code == code]
        assert len(roots) == len(set(roots)) and set(roots) <= expected
        assert all(f"`{s}`" in text for s in expected)


# ---------------------------------------------------------------- guards
VALUES = [0, 1, 2, "a", "b", True, None]
DOMAIN = VALUES + [-1, 0.5, 1.5, 3, "", "c", "ab", False, {}]
KEYS = [("x",), ("y",)]


def _path(k) -> ir.Path:
    return ir.Path(root="result", segments=k)


lit_st = st.sampled_from(VALUES).map(lambda v: ir.Lit(value=v))
compare_st = st.builds(
    lambda k, op, lits: ir.Compare(op=op, left=_path(k), right=(
        ir.ListExpr(items=tuple(lits)) if op in ("in", "not in") else lits[0])),
    st.sampled_from(KEYS), st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
    st.lists(lit_st, min_size=1, max_size=3))
expr_st = st.recursive(
    compare_st,
    lambda inner: st.one_of(
        st.builds(lambda xs: ir.And(items=tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda xs: ir.Or(items=tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda x: ir.Not(item=x), inner)),
    max_leaves=6)
facts_st = st.sampled_from([None, ("a", "b"), (0, 1, 2)])


def _facts(enum):
    def f(key):
        if enum is not None and key == ("path", "result", "x"):
            return (Atom("eq", key, values=enum, level="schema", text="enum"),)
        return ()
    return f


def _holds(expr, x, y) -> bool:
    return evaluate(expr, Env(roots={"result": {"x": x, "y": y}})).holds


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=expr_st, enum=facts_st)
def test_guard_verdicts_agree_with_exhaustive_evaluation(expr, enum) -> None:
    verdict = solve([expr], _facts(enum))
    xs = [v for v in DOMAIN if enum is None or v in enum and type(v) is type(enum[0])]
    some = any(_holds(expr, x, y) for x, y in itertools.product(xs, DOMAIN))
    if verdict.status == "unsat":
        assert not some  # never a false error
    elif verdict.status == "sat":
        assert evaluate(expr, verdict.witness).holds  # the witness really satisfies the guard
        result = verdict.witness.roots.get("result", {})
        assert enum is None or "x" not in result or result["x"] in enum
    else:
        assert verdict.notes  # anything not decided says what was not analysed


# A condition reading into a value another condition fixes as a scalar (`result.kind == "a" and
# result.kind.deep == "x"`) crashed the witness builder with a TypeError (found by fuzzing).
def test_witness_builder_refuses_to_read_into_a_scalar() -> None:
    from afp_dsl.checks.witness import Builder
    b = Builder()
    assert b.put(("path", "result", "kind"), "a")
    assert b.put(("path", "result", "kind", "deep"), "x") is False
    assert b.put(("path", "result", "kind", 0), "x") is False


def test_a_guard_reading_into_a_fixed_string_gets_a_diagnostic(tmp_path) -> None:
    import subprocess
    import sys
    spec = tmp_path / "deep.afp"
    spec.write_text('agent a { graph = g }\n'
                    'tool t { description = "T." output { kind: "a" | "b" } }\n'
                    'skill s { description = "S." tools = [t] }\n'
                    'skill u { description = "U." }\n'
                    'graph g {\n  entry s\n'
                    '  route s -> u on t when result.kind == "a" and result.kind.deep == "x"\n}\n',
                    encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "afp_dsl.cli", "check", str(spec)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "AFP304" in proc.stdout + proc.stderr
    assert "internal error" not in proc.stdout + proc.stderr


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=expr_st, other=expr_st, enum=facts_st)
def test_verdicts_without_reasons_agree(expr, other, enum) -> None:
    """`reasons=False` (callers that read no reasons) changes nothing else of a verdict."""
    full, bare = solve([expr, other], _facts(enum)), solve([expr, other], _facts(enum), reasons=False)
    assert (bare.status, bare.witness, bare.notes, bare.cases, bare.reasons) == (
        full.status, full.witness, full.notes, full.cases, ())
    full, bare = refute([expr, other], _facts(enum)), refute([expr, other], _facts(enum), reasons=False)
    assert (full is None) == (bare is None)
    if full is not None:
        assert (bare.status, bare.cases, bare.reasons) == (full.status, full.cases, ())
