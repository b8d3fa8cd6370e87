"""What the checker settles once and reuses gives the answers computed fresh would give:

1. an atom's text rendered late (`Atom(render=…)`) reads, compares and hashes like the same
   text given at once, and `solver._unique` still keeps atoms that differ only in their texts;
2. a graph view's `dead` routes, settled when first read, are the same whether the analysis
   that built the view is still alive or not; a graph's resolved nodes and routes are shared by
   the analyses of one program object only, and dropped with it;
3. the per-site caches (`sites.facts`, `exprs.operand_problems`, `sitelist.route_site`) answer
   for the very site (or route and analysis) asked about, never for another that happens to
   be equal or to reuse an id; a site compares, hashes and copies (`_replace`) like the named
   tuple of its fields it used to be, and a copy settles its own facts;
4., 5. the shortcuts (`walk` of a plain comparison, `dnf` of a lone one) give the general path's
   answer; 6. a schema walk reads a FrozenMap, a dict and any other mapping alike.
"""
from __future__ import annotations

import gc
import textwrap

from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import exprs, run_checks
from afp_dsl.checks import graphview as G
from afp_dsl.checks import sitelist
from afp_dsl.checks import sites as S
from afp_dsl.checks.atoms import Atom
from afp_dsl.checks.solver import _unique
from afp_dsl.loader import load_program

KEY = ("path", "result", "status")


def _analysis(text: str) -> Analysis:
    program, _ = load_program(text=textwrap.dedent(text), name="t.afp")
    assert program is not None
    return Analysis(program)


# ---------------------------------------------------------------- 1. texts rendered late
def test_a_late_text_reads_compares_and_hashes_like_an_early_one():
    calls = []

    def render() -> str:
        calls.append(1)
        return "`x` is one of `1`"

    late = Atom("eq", KEY, values=(1,), level="schema", text=None, render=render)
    early = Atom("eq", KEY, values=(1,), level="schema", text="`x` is one of `1`")
    other = Atom("eq", KEY, values=(1,), level="schema", text="`x` is one of `2`")
    assert not calls  # nothing rendered until read
    assert late == early and hash(late) == hash(early) and not late != early
    assert late != other and len({late, early, other}) == 2
    assert late.text == early.text and len(calls) == 1  # rendered once, then kept


def test_unique_keeps_atoms_that_differ_only_in_their_texts():
    a = Atom("eq", KEY, values=(1,), text=None, render=lambda: "a")
    b = Atom("eq", KEY, values=(1,), text=None, render=lambda: "b")
    again = Atom("eq", KEY, values=(1,), text="a")
    assert _unique((a, b)) == (a, b)
    assert _unique((a, b, again)) == (a, b)
    assert len(_unique((a, Atom("eq", KEY, values=(True,), text="a")))) == 2  # `true` is not `1`


def test_unique_keeps_atoms_with_unhashable_values():
    a = Atom("eq", KEY, values=([1],), text="a")
    b = Atom("eq", KEY, values=([2],), text="b")
    assert _unique((a, b)) == (a, b)


def test_rendered_diagnostic_texts_do_not_change():
    a = _analysis("""
    agent a { graph = g }
    tool t { description = "t" output { status: "ok" | "fail" } }
    skill s { description = "s" tools = [t] }
    skill d { description = "d" }
    graph g {
      entry s
      route s -> d on t when result.status == "ok" and result.status == "fail"
    }
    """)
    notes = [n for d in run_checks(a) if d.code == "AFP208" for n in d.notes]
    assert notes == ['`result.status == "ok"` and `result.status == "fail"` cannot both be true']


# ---------------------------------------------------------------- 2. dead routes, settled late
DEAD = """
agent a { graph = g tools = [base] }
tool t { description = "t" }
tool u { description = "u" }
tool base { description = "b" }
skill s { description = "s" tools = [t] }
skill d { description = "d" }
skill quiet { description = "q" }
graph g {
  entry s
  route s -> d on u
  route s -> quiet on base
  route quiet -> d when iteration > 1
}
"""


def test_dead_routes_are_the_same_after_the_analysis_is_gone():
    live = _analysis(DEAD)
    m, g = next(live.decls(ir.Graph))
    expected = G.view(live, m, g).dead
    assert expected == frozenset({0, 2})  # `u` is not `s`'s; `quiet` has no tools
    orphan = G.view(Analysis(live.program), m, g)  # its analysis is dropped at once
    gc.collect()
    assert orphan.dead == expected


def test_resolved_graphs_are_shared_by_program_object_only():
    first = _analysis(DEAD)
    m, g = next(first.decls(ir.Graph))
    v = G.view(first, m, g)
    again = G.view(Analysis(first.program), m, g)  # another analysis of the same program
    assert again is not v and again.nodes is v.nodes and again.routes is v.routes
    twin = _analysis(DEAD)  # an equal program, but another object: resolved on its own
    assert twin.program == first.program and twin.program is not first.program
    m2, g2 = next(twin.decls(ir.Graph))
    w = G.view(twin, m2, g2)
    assert w.nodes is not v.nodes and list(w.nodes) == list(v.nodes)
    assert all(any(n.skill is d for d in twin.program.root_module.decls) for n in w.nodes.values())
    assert [e.route for e in w.routes] == [e.route for e in v.routes]
    assert all(a.route is b for a, b in zip(w.routes, g2.routes))
    key = id(twin.program)
    assert key in G._SHARED
    del twin, w, g2
    gc.collect()
    assert key not in G._SHARED  # the entry goes with its program


# ---------------------------------------------------------------- 3. per-site caches
TWO_TOOLS = """
agent a { graph = g }
tool t { description = "t" output { status: "ok" | "fail" } }
tool u { description = "u" output { level: integer } }
skill s { description = "s" tools = [t, u] }
skill d { description = "d" }
graph g {
  entry s
  route s -> d on t when result.status == "ok"
  route s -> d on u when result.status == "ok"
}
"""


def test_site_caches_answer_for_the_site_asked_about():
    a = _analysis(TWO_TOOLS)
    on_t, on_u = sitelist.sites(a)
    assert on_t.expr == on_u.expr and on_t is not on_u
    try:
        assert [f.kind for f in S.facts(on_t)(KEY)] == ["eq", "type"]
        assert S.facts(on_u)(KEY) == ()  # `u` declares no `status`
        assert exprs.operand_problems(a, on_t) == ()
        assert [d.code for _, d in exprs.operand_problems(a, on_u)] == ["AFP304"]
        # the same object each time for one analysis, another for another analysis
        m, g = next(a.decls(ir.Graph))
        assert sitelist.route_site(a, m, g, g.routes[0]) is on_t
        b = Analysis(a.program)
        assert sitelist.route_site(b, m, g, g.routes[0]) is not on_t
        assert sitelist.route_site(b, m, g, g.routes[0]) == on_t
    finally:
        run_checks(a, rules=())  # drops the caches


def test_checks_give_the_same_diagnostics_twice():
    a = _analysis(TWO_TOOLS)
    first = [(d.code, d.message, d.primary.span) for d in run_checks(a)]
    again = [(d.code, d.message, d.primary.span) for d in run_checks(Analysis(a.program))]
    assert first == again and any(code == "AFP304" for code, _, _ in first)


def test_a_site_compares_hashes_and_copies_like_a_named_tuple_of_its_fields():
    a = _analysis(TWO_TOOLS)
    on_t, on_u = sitelist.sites(a)
    m, g = next(a.decls(ir.Graph))
    twin = sitelist.route_site(Analysis(a.program), m, g, g.routes[0])
    assert twin == on_t and hash(twin) == hash(on_t) and not twin != on_t
    assert on_t != on_u and len({on_t, twin, on_u}) == 2
    try:
        assert [f.kind for f in S.facts(on_t)(KEY)] == ["eq", "type"]  # settled on `on_t`
        narrowed = on_t._replace(statuses=("success",))
        assert narrowed.statuses == ("success",) and narrowed.expr is on_t.expr
        assert narrowed != on_t and narrowed._replace(statuses=on_t.statuses) == on_t
        # nothing settled carries over: on a success alone, `result` is the output's value
        assert S.schema_view(on_t, "result").loose and not S.schema_view(narrowed, "result").loose
        assert [f.values for f in S.facts(narrowed)(KEY) if f.kind == "eq"] == [("ok", "fail")]
        assert [f.values for f in S.facts(on_t)(KEY) if f.kind == "eq"] == [("ok", "fail", None)]
    finally:
        run_checks(a, rules=())


# ---------------------------------------------------------------- 4. `walk`'s shortcut
def _walk_slowly(e) -> list:
    children = {ir.And: lambda n: n.items, ir.Or: lambda n: n.items, ir.ListExpr: lambda n: n.items,
                ir.Compare: lambda n: (n.left, n.right), ir.Not: lambda n: (n.item,)}
    kids = children.get(type(e))
    return [e] + [x for c in (kids(e) if kids else ()) for x in _walk_slowly(c)]


def test_walk_lists_the_nodes_of_a_plain_comparison_like_the_general_walk():
    p, one = ir.Path(root="result", segments=("x",)), ir.Lit(value=1)
    shapes = [
        ir.Compare(op="==", left=p, right=one),
        ir.Compare(op="in", left=p, right=ir.ListExpr(items=(one, ir.Lit(value=2)))),
        ir.Compare(op="==", left=ir.Compare(op="<", left=p, right=one), right=one),
        ir.Compare(op="==", left=ir.Not(item=p), right=one),
        ir.Not(item=ir.Compare(op="==", left=p, right=one)),
        ir.And(items=(ir.Compare(op="==", left=p, right=one), p)),
    ]
    for e in shapes:
        assert [id(n) for n in exprs.walk(e)] == [id(n) for n in _walk_slowly(e)]



# ---------------------------------------------------------------- 5. `dnf`'s shortcut
def test_dnf_of_a_lone_comparison_is_the_general_paths():
    from afp_dsl.checks import atoms, normal_form
    p, one = ir.Path(root="result", segments=("x",)), ir.Lit(value=1)
    for c in (ir.Compare(op="==", left=p, right=one), ir.Compare(op="mentions", left=p, right=one),
              ir.Compare(op="<", left=one, right=ir.ListExpr(items=(one,)))):
        try:
            general = normal_form._nnf(c, False)
            assert normal_form.dnf([c]) == [(general,)] and normal_form.dnf([c])[0][0] is general
            assert normal_form.dnf((c,)) == [(general,)]  # (a tuple takes the general path)
        finally:
            atoms.clear_cache()
            normal_form.clear_cache()


# ---------------------------------------------------------------- 6. schema walks through dicts
def test_walk_schema_answers_alike_for_frozen_plain_and_other_mappings():
    from collections.abc import Mapping

    from afp_dsl.checks import schemapaths
    from afp_dsl.frozen import freeze, plain

    class Other(Mapping):  # a mapping of another class, read through its own methods
        def __init__(self, d):
            self._x = {k: Other(v) if isinstance(v, dict) else v for k, v in d.items()}

        def __getitem__(self, k):
            return self._x[k]

        def __iter__(self):
            return iter(self._x)

        def __len__(self):
            return len(self._x)

    doc = {"type": "object", "required": ["a"], "additionalProperties": False,
           "$defs": {"n": {"type": "integer"}},
           "properties": {"a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/n"}}},
                          "s": {"type": "string"}, "l": {"type": "array", "items": {"enum": [1]}},
                          "any": {"anyOf": [{"type": "string"}]}}}
    paths = [("a",), ("a", "b"), ("a", "c"), ("s", "x"), ("l", 0), ("l", 0, "y"), ("zz",),
             ("any", "q"), ("s", 0)]
    try:
        for segments in paths:
            raw = schemapaths.walk_schema(doc, segments)
            frozen = schemapaths.walk_schema(freeze(doc), segments)
            other = schemapaths.walk_schema(Other(doc), segments)
            shown = [type(x).__name__ if x is not None else None for x in (raw, frozen, other)]
            assert len(set(shown)) == 1, (segments, shown)
            if isinstance(raw, schemapaths.FieldProblem):
                assert raw == frozen == other
            elif raw is not None:
                assert raw.schema == plain(frozen.schema) == plain(other.schema)
                assert raw.optional == frozen.optional == other.optional
    finally:
        schemapaths.clear_cache()
