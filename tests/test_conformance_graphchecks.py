"""Conformance: graph checks and condition checks (spec/language.md §5.4, §7; spec/tooling.md §3).

Pins four findings of the conformance audit:

1. A route without `on` hears only the results of its source skill's own tools (semantics,
   `cursor._check`), so one out of a skill with no tools never fires: AFP209, worded for that
   case. Routes proved never to fire (that one, and an `on TOOL` route no one can call) are no
   witness of a deterministic way in: `--explain-reach` prefers routes that can fire and marks
   one that cannot; like any edge they still widen what `read_skill` accepts, so the target is
   not called unreachable (AFP202) and no AFP203 cascade follows; they compete with no route.
2. A misspelt tool in a skill's `tools` is AFP101 alone: no false AFP211 for its `steps`.
3. A tool's `check_in` that can never hold gets AFP208 like any other condition (a non-boolean
   literal, a contradiction); `check_in = true` and `check_in = false` stay silent.
4. AFP204 is only for a conditional entry after an unconditional one: a later unconditional
   entry is a persistent base, active every iteration.
"""
from __future__ import annotations

import textwrap

import afp_dsl
from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import reach
from afp_dsl.loader import load_program


def diags(text: str):
    return afp_dsl.check(textwrap.dedent(text))


def codes(text: str) -> list[str]:
    return [d.code for d in diags(text)]


def _analysis(text: str) -> Analysis:
    program, _ = load_program(text=textwrap.dedent(text), name="t.afp")
    assert program is not None
    return Analysis(program)


# ---------------------------------------------------------------- #1 routes that never fire
NO_TOOLS = """
agent a { graph = g tools = [base] }
tool base { description = "x" impl = returns("ok") }
skill b { description = "x" }
skill c { description = "x" }
graph g {
  entry b
  route b -> c status success
}
"""


def test_a_route_without_on_out_of_a_skill_with_no_tools_is_afp209():
    found = diags(NO_TOOLS)
    assert [d.code for d in found] == ["AFP209"]
    d = found[0]
    assert d.severity.name == "WARNING"  # dead, but the model can still take it (read_skill)
    assert "`b`" in d.message and "no tools" in d.message
    assert any("own tools" in n for n in d.notes)


def test_the_same_route_out_of_a_skill_with_tools_is_fine():
    text = NO_TOOLS.replace('skill b { description = "x" }', 'skill b { description = "x" tools = [base] }')
    assert codes(text) == []


def test_a_bare_route_out_of_a_skill_with_no_tools_is_fine():
    text = NO_TOOLS.replace("route b -> c status success", "route b -> c")
    assert codes(text) == ["AFP203"]  # model-pick only, as before: no AFP209


def test_a_misspelt_tool_decides_nothing_for_a_route_without_on():
    text = NO_TOOLS.replace('skill b { description = "x" }', 'skill b { description = "x" tools = [bse] }')
    assert codes(text) == ["AFP101"]


def _reach(text: str, skill: str):
    a = _analysis(text)
    m, g = next(a.decls(ir.Graph))
    return reach.explain_reach(a, m, g, skill)


def test_explain_reach_does_not_pass_through_a_route_that_never_fires_as_if_it_fired():
    hops = _reach(NO_TOOLS, "c")
    assert hops[0] == "entry b"
    assert hops[1].startswith("→ c status success (never fires: `b` has no tools")


def test_explain_reach_prefers_a_route_that_can_fire():
    text = """
    agent a { graph = g }
    tool t { description = "x" }
    tool u { description = "x" }
    skill b { description = "x" tools = [t] }
    skill d { description = "x" tools = [t] }
    skill c { description = "x" }
    graph g {
      entry b
      route b -> c on u
      route b -> d on t
      route d -> c on t
    }
    """
    assert codes(text) == ["AFP209"]
    assert _reach(text, "c") == ["entry b", "→ d on t", "→ c on t"]


def test_an_on_route_no_agent_can_call_is_no_deterministic_witness():
    text = """
    agent a { graph = g }
    tool t { description = "x" }
    skill b { description = "x" }
    skill c { description = "x" }
    graph g {
      entry b
      route b -> c on t
    }
    """
    assert codes(text) == ["AFP209"]
    assert _reach(text, "c")[1] == ("→ c on t (never fires: `b` cannot call `t`; "
                                    "only when the model picks it)")


def test_routes_that_never_fire_compete_with_nothing():
    text = NO_TOOLS.replace("route b -> c status success",
                            "route b -> c status success\n  route b -> b2 status success")
    text = text.replace('skill c { description = "x" }',
                        'skill c { description = "x" }\nskill b2 { description = "x" }')
    found = diags(text)  # no AFP205 between the two dead routes, and one AFP209 for one cause
    assert [d.code for d in found] == ["AFP209"]
    assert found[0].message.startswith("2 routes out of `b` without `on`")


# ---------------------------------------------------------------- #2 no AFP211 cascade
def test_a_misspelt_skill_tool_is_afp101_alone():
    text = """
    agent a { graph = g }
    tool lookup { description = "x" }
    skill s { description = "x" tools = [lookp] steps { lookup "x" } }
    graph g { entry s }
    """
    assert codes(text) == ["AFP101"]


def test_a_step_outside_resolved_tools_is_still_afp211():
    text = """
    agent a { graph = g }
    tool lookup { description = "x" }
    tool other { description = "x" }
    skill s { description = "x" tools = [other] steps { lookup "x" } }
    graph g { entry s }
    """
    assert codes(text) == ["AFP211"]


# ---------------------------------------------------------------- #3 check_in conditions
def _check_in(cond: str) -> str:
    return f"""
    agent a {{ tools = [t] }}
    tool t {{ description = "x" input {{ n: integer }} check_in = {cond} }}
    """


def test_a_non_boolean_check_in_literal_is_afp208():
    found = diags(_check_in('"yes"'))
    assert [d.code for d in found] == ["AFP208"]
    assert "`check_in` of tool `t`" in found[0].message


def test_a_contradictory_check_in_is_afp208():
    assert codes(_check_in("args.n > 5 and args.n < 2")) == ["AFP208"]


def test_an_impossible_check_in_comparison_is_afp305_alone():
    assert codes(_check_in('args.n == "x"')) == ["AFP305"]


def test_plain_and_satisfiable_check_ins_are_fine():
    for cond in ("true", "false", "args.n > 5", "args.n > 5 or args.n < 2"):
        assert codes(_check_in(cond)) == [], cond


# ---------------------------------------------------------------- #4 dead entries
def _entries(*lines: str) -> str:
    body = "\n  ".join(lines)
    return f"""
    agent a {{ graph = g }}
    skill s1 {{ description = "x" }}
    skill s2 {{ description = "x" }}
    graph g {{
      {body}
    }}
    """


def test_a_second_unconditional_entry_is_a_persistent_base_not_dead():
    assert codes(_entries("entry s1", "entry s2")) == []


def test_a_conditional_entry_after_an_unconditional_one_is_still_afp204():
    assert codes(_entries("entry s1", 'entry s2 when message mentions ["x"]')) == ["AFP204"]
    assert codes(_entries('entry s2 when message mentions ["x"]', "entry s1")) == []


# ---------------------------------------------------------------- a misspelt endpoint: no cascade
_CHAIN = """
agent a {{ graph = g }}
tool t {{ description = "x" }}
skill triage {{ description = "x" tools = [t] }}
skill refunds {{ description = "x" tools = [t] }}
skill esc {{ description = "x" }}
graph g {{ {entries}
  route {src} -> {dst} on t
  route refunds -> esc on t }}
"""


def test_a_misspelt_route_endpoint_is_one_diagnostic_not_an_unreachable_skill_too():
    """Before: `route triage -> refnds` (or `route triag -> refunds`) also made `refunds`
    "unreachable" (AFP202), a consequence of the misspelling, not a second problem."""
    for src, dst in (("triage", "refnds"), ("triag", "refunds")):
        spec = _CHAIN.format(entries="entry triage", src=src, dst=dst)
        assert codes(spec) == ["AFP101"], (src, dst, codes(spec))


def test_a_misspelt_entry_beside_a_good_one_makes_no_reachability_claim():
    spec = _CHAIN.format(entries="entry esc\n  entry triag", src="triage", dst="refunds")
    assert codes(spec) == ["AFP101"], codes(spec)


def test_a_graph_whose_names_all_resolve_still_reports_an_unreachable_skill():
    """A guard: the skip applies only while an endpoint names no skill."""
    spec = _CHAIN.format(entries="entry esc", src="triage", dst="refunds")
    assert "AFP202" in codes(spec)


# ---------------------------------------------------------------- a rule that never holds: one diagnostic
_POLICY = """
agent a {{ tools = [t] policies = [p] }}
tool t {{ description = "x" input {{ n: integer }} }}
policy p {{ before t {{
  {first}
  {second} }} }}
"""


def test_a_rule_already_a_type_mismatch_is_not_also_shadowed():
    """Before: `deny when args.n == "y"` (AFP305: an integer is never a string) after any rule
    also got AFP401 "an earlier rule always decides first", true only because it never holds."""
    spec = _POLICY.format(first='deny when args.n > 5 because "a"',
                          second='deny when args.n == "y" because "b"')
    assert codes(spec) == ["AFP305"], codes(spec)
    spec = _POLICY.format(first='deny when args.n == "x" because "a"',
                          second='deny when args.n == "y" because "b"')
    assert codes(spec) == ["AFP305", "AFP305"], codes(spec)


def test_a_rule_that_never_holds_is_not_named_as_deciding_first():
    """Before: a shadowed rule's labels named every earlier rule as "decides first", including
    one that never holds."""
    spec = _POLICY.format(first='deny when args.n > 5 because "a"\n  '
                                'deny when args.n > 5 and args.n < 3 because "never"',
                          second='deny when args.n > 7 because "b"')
    found = diags(spec)
    assert [d.code for d in found] == ["AFP401", "AFP401"]
    never, shadowed = found
    assert "can never hold" in never.message
    firsts = [lab for lab in shadowed.labels if not lab.primary]
    assert len(firsts) == 1 and firsts[0].message == "decides first"


def test_a_rule_covered_by_earlier_rules_is_still_shadowed():
    """A guard: the shadowing check still runs for rules that can hold."""
    spec = _POLICY.format(first='deny when args.n > 5 because "a"',
                          second='deny when args.n > 7 because "b"')
    assert codes(spec) == ["AFP401"]


def test_explain_reach_tells_a_local_skill_from_an_imported_one_of_the_same_name(tmp_path):
    """`ls1` is the root module's skill, `m.ls1` the imported one: the report followed the
    first node named `ls1` either way, and listed graphs holding only the other."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "m.afp").write_text(textwrap.dedent('''\
        tool lt { description = "lt" output { ok: boolean } }
        skill ls1 { description = "lib one" tools = [lt] }
        skill ls2 { description = "lib two" }
        graph lg { entry ls1  route ls1 -> ls2 on lt when result.ok == true }
        '''), encoding="utf-8")
    main = tmp_path / "t6.afp"
    main.write_text(textwrap.dedent('''\
        import "lib/m.afp" as m
        agent a { graph = g }
        tool t1 { description = "t1" }
        skill ls1 { description = "local one" tools = [t1] }
        skill s1 { description = "s1" tools = [t1] }
        graph g {
          entry s1
          route s1 -> m.ls1 on t1
          route m.ls1 -> ls1 on m.lt when result.ok == true
        }
        '''), encoding="utf-8")
    program, _ = load_program(main)
    a = Analysis(program)
    local = reach.reach_report(a, "ls1")
    assert "graph `lg`" not in local and local.rstrip().endswith("ls1 on m.lt when result.ok == true")
    imported = reach.reach_report(a, "m.ls1")
    assert "graph `g`" in imported and "graph `lg`" in imported
    assert reach.reach_report(a, "ls2").count("reached by") == 1  # (only `lg` holds it)


def test_explain_reach_marks_an_entry_that_never_starts_a_run():
    hops = _reach('''
    agent a { graph = g }
    skill s1 { description = "one" }
    skill z { description = "z" }
    graph g {
      entry s1
      entry z when message mentions "q"
    }
    ''', "z")
    assert hops == ['entry z when message mentions "q" (never starts a run: `entry s1` has no '
                    'condition and comes first; only when the model picks it)']
