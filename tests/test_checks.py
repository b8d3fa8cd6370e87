"""Graph, expression, guard, policy and test-script checks (AFP2xx, AFP303–306, AFP4xx).

Goldens live in tests/golden/check/ (rendered like tests/test_golden.py); these tests run the
rules directly, so they pass whether or not the rules are registered in `checks.CHECKS` yet.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import afp_dsl
from afp_dsl import ir
from afp_dsl.analysis import Analysis
from afp_dsl.checks import exprs
from afp_dsl.checks import reach
from afp_dsl.cli import main
from check_support import analyse, codes, diagnostics_text
from golden_util import compare

GOLDEN = Path(__file__).parent / "golden" / "check"
CODE_CASES = {
    "no_entry": ["AFP201"], "unreachable_skill": ["AFP202"], "model_edge_only": ["AFP203"],
    "dead_entry": ["AFP204", "AFP204"], "ambiguous_routes": ["AFP205", "AFP205"],
    "self_loop": ["AFP206"], "no_way_out": ["AFP207"], "guard_unsatisfiable": ["AFP208"] * 5,
    "route_tool_not_in_skill": ["AFP209"], "overlapping_guards": ["AFP210", "AFP210"],
    "step_tool_not_in_skill": ["AFP211"], "skill_in_two_places": ["AFP212", "AFP203"],
    "agent_tool_cycle": ["AFP213"], "body_tools": ["AFP214", "AFP215"], "unknown_root": ["AFP303"] * 5, "unknown_field": ["AFP304"] * 5,
    "type_mismatch": ["AFP305"] * 7, "status_not_in_vocabulary": ["AFP306"] * 3,
    "policy_rule_never_matches": ["AFP401"] * 3, "ask_outside_before": ["AFP402"] * 2,
    "redact_pattern_too_broad": ["AFP403"] * 3, "test_unknown_tool": ["AFP404"] * 3,
    "test_args_invalid": ["AFP405"], "test_unknown_edge": ["AFP406"] * 3,
}
FLAWED = sorted(p.stem for p in GOLDEN.glob("flawed_*.afp"))


@pytest.mark.parametrize("name", sorted(CODE_CASES) + FLAWED)
def test_golden(name: str, update_goldens: bool) -> None:
    spec = GOLDEN / f"{name}.afp"
    text, _ = diagnostics_text(spec)
    compare(spec.with_suffix(".diagnostics.txt"), text, update_goldens)


@pytest.mark.parametrize("name", sorted(CODE_CASES))
def test_each_code_case_emits_exactly_its_codes(name: str) -> None:
    _, diags = diagnostics_text(GOLDEN / f"{name}.afp")
    assert sorted(d.code for d in diags) == sorted(CODE_CASES[name])


def test_flawed_specs_mix_several_problems() -> None:
    assert len(FLAWED) >= 8
    for name in FLAWED:
        _, diags = diagnostics_text(GOLDEN / f"{name}.afp")
        assert len({d.code for d in diags}) >= 3, name


# ---------------------------------------------------------------- clean specs stay clean
CLEAN = """
agent support { graph = desk  tools = [notify] }
tool notify { description = "n" }
tool lookup { description = "l" output { status: "found" | "missing", amount?: number } }
tool refund { description = "r" input { amount: number } }
skill triage { description = "t" tools = [lookup] }
skill refunds { description = "r" tools = [refund] steps { refund "refund it" } }
skill escalation { description = "e" }
graph desk {
  entry triage when message mentions ["order", "refund"]
  route triage -> refunds on lookup when result.status == "found" and result.amount <= 500
  route triage -> escalation on lookup when result.status == "missing" or result.amount > 500
  route refunds -> escalation on refund status failure
  route refunds -> triage on refund status success
  route escalation -> triage on notify
}
test ok {
  user "refund AB-1"
  model calls lookup {}
  model calls refund { amount: 5 }
  model says "done"
  expect route triage -> refunds
}
"""


def test_a_sound_spec_has_no_findings() -> None:
    assert codes(CLEAN) == []


def test_examples_check_clean() -> None:
    root = Path(__file__).parent.parent / "examples"
    for spec in sorted(root.glob("*/*.afp")):
        _, diags = diagnostics_text(spec)
        assert [d.code for d in diags if d.is_error] == [], spec


def test_disjoint_guards_with_status_sets_are_silent() -> None:
    text = CLEAN.replace('route refunds -> triage on refund status success',
                         'route refunds -> triage on refund status [success, partial] when args.amount > 1')
    assert codes(text) == []


# ---------------------------------------------------------------- graph rules in detail
def _analysis(text: str) -> Analysis:
    program, diags = analyse(text, "t.afp")
    assert program is not None
    return Analysis(program)


def test_explain_reach_gives_the_witness_path() -> None:
    a = _analysis(CLEAN)
    m, g = next(a.decls(ir.Graph))
    hops = reach.explain_reach(a, m, g, "refunds")
    assert " ".join(hops) == ('entry triage when message mentions ["order", "refund"] → refunds on '
                              'lookup when result.status == "found" and result.amount <= 500')
    assert reach.explain_reach(a, m, g, "nope") is None
    report = reach.reach_report(a, "escalation")
    assert "→ escalation on lookup" in report


def test_explain_reach_through_a_bare_route_and_unreachable() -> None:
    a = _analysis("""
skill a { description = "a" }
skill b { description = "b" }
skill c { description = "c" }
graph g { entry a  route a -> b  route c -> a }
""")
    m, g = next(a.decls(ir.Graph))
    assert reach.explain_reach(a, m, g, "b") == ["entry a", "→ b (bare route: when the model picks it)"]
    assert reach.explain_reach(a, m, g, "c") is None
    assert "unreachable" in reach.reach_report(a, "c")
    assert reach.reach_report(a, "zzz") == "skill `zzz` is in no graph"


def test_unreachable_region_is_one_diagnostic_naming_the_rest() -> None:
    routes = "\n".join(f"  route s{i} -> s{i + 1} on t" for i in range(1, 30))
    skills = "\n".join(f'skill s{i} {{ description = "x" tools = [t] }}' for i in range(31))
    text = f'tool t {{ description = "t" }}\n{skills}\ngraph g {{\n  entry s0\n{routes}\n}}\n'
    _, diags = analyse(text, "t.afp")
    found = [d for d in diags if d.code == "AFP202"]
    assert len(found) == 1 and "`s1`" in found[0].message
    assert any("and 23 more" in n for n in found[0].notes)


def test_three_thousand_skill_chain_checks() -> None:
    n = 3000
    skills = "\n".join(f'skill s{i} {{ description = "d" tools = [t] }}' for i in range(n))
    routes = "\n".join(f"  route s{i} -> s{i + 1} on t when result.n > {i}" for i in range(n - 1))
    text = (f'agent a {{ graph = g }}\ntool t {{ description = "t" output {{ n: number }} }}\n'
            f'{skills}\ngraph g {{\n  entry s0\n{routes}\n}}\n')
    assert codes(text) == []


def test_no_way_out_is_silent_when_a_route_leaves_the_cycle() -> None:
    text = (GOLDEN / "no_way_out.afp").read_text()
    text = text.replace("skill verify {", 'skill done { description = "Done." }\nskill verify {')
    text = text.replace("route verify -> collect on check_field\n", "route verify -> done on check_field\n")
    assert "AFP207" not in codes(text)


def test_route_tool_of_graph_shared_by_agents() -> None:
    base = """
agent a1 { graph = g  tools = [notify] }
agent a2 { graph = g }
tool notify { description = "n" }
skill s { description = "s" }
skill t { description = "t" }
graph g { entry s  route s -> t on notify }
"""
    _, diags = analyse(base, "t.afp")
    (d,) = [d for d in diags if d.code == "AFP209"]
    assert d.severity.value == "warning" and "`a2`" in " ".join(d.notes)
    _, diags = analyse(base.replace("agent a2 { graph = g }", "agent a2 { graph = g tools = [notify] }"), "t.afp")
    assert not [d for d in diags if d.code == "AFP209"]
    _, diags = analyse(base.replace("tools = [notify] }", "}"), "t.afp")
    (d,) = [d for d in diags if d.code == "AFP209"]
    assert d.severity.value == "error"


# ---------------------------------------------------------------- calls, built by hand
def _context_program(when: ir.Expr, extra: tuple = ()) -> Analysis:
    decls = (ir.Tool(name="lookup", description="l"), ir.Skill(name="triage", description="t"),
             ir.Instruction(name="hint", prompt=ir.Text(value="x"), when=when)) + extra
    return Analysis(ir.Program(root="m", modules=(ir.Module(key="m", decls=decls),)))


def test_calls_must_name_a_tool_and_a_skill() -> None:
    when = ir.And(items=(ir.Call(func="returned", arg=ir.Ref(name="lookp")),
                         ir.Call(func="active", arg=ir.Ref(name="lookup"))))
    found = list(exprs.check_exprs(_context_program(when)))
    assert [d.code for d in found] == ["AFP101", "AFP102"]
    assert found[0].help == "did you mean `lookup`?"
    ok = ir.Call(func="returned", arg=ir.Ref(name="lookup"))
    assert list(exprs.check_exprs(_context_program(ok))) == []


def test_a_kind_in_a_message_has_its_article() -> None:
    import afp_dsl
    found = afp_dsl.check("agent pay { tools = [helper] }\ninstruction helper { prompt = \"x\" }\n")
    assert "`helper` is an instruction, but a tool is expected here" in [d.message for d in found]
    assert ir.a_kind(ir.Agent(name="a")) == "an agent" and ir.a_kind(ir.Tool(name="t")) == "a tool"


def test_calls_are_only_allowed_in_context_conditions() -> None:
    call = ir.Call(func="active", arg=ir.Ref(name="triage"))
    policy = ir.Policy(name="p", blocks=(ir.PolicyBlock(moment="output", rules=(
        ir.Rule(action="deny", when=call, because="x"),)),))
    found = list(exprs.check_exprs(_context_program(ir.Lit(value=True), (policy,))))
    assert [d.code for d in found] == ["AFP303"]
    assert "`active(...)`" in found[0].message


def test_a_top_level_tool_test_types_the_result_of_a_route_without_on() -> None:
    text = """
tool find { description = "f" output { status: "confirmed" | "cancelled" } }
skill lookup { description = "l" tools = [find] }
skill done { description = "d" }
graph g {
  entry lookup
  route lookup -> done when tool == "find" and result.stats == "confirmed"
  route done -> lookup when tool == "find" and result.stats == "x"
}
"""
    _, diags = analyse(text, "t.afp")
    assert [(d.code, d.message) for d in diags] == [  # (`done` has no tools: its route never fires)
        ("AFP304", "the output schema of `find` declares no field `result.stats`"),
        ("AFP209", "route `done -> lookup` waits for a result of a tool of `done`, which has no tools")]


def test_a_name_listed_twice_in_one_list_is_a_warning_at_the_repeat() -> None:
    src = ('agent a { tools = [t, u, t] policies = [p, p] }\n'
           'tool t { description = "t" impl = returns("x") }\n'
           'tool u { description = "u" impl = returns("x") }\n'
           'policy p { before t { deny when args.x == 1 because "no" } }\n'
           'skill s { description = "S." tools = [u, t, u] }\n')
    found = [d for d in afp_dsl.check(src) if d.code == "AFP106"]
    assert [(d.message, d.is_error) for d in found] == [
        ("`t` is listed twice in `tools`", False), ("`p` is listed twice in `policies`", False),
        ("`u` is listed twice in `tools`", False)]
    first = found[0]
    assert first.primary.span.start == src.index("t]") and \
        [lab.span.start for lab in first.labels if not lab.primary] == [src.index("[t") + 1]


# ---------------------------------------------------------------- `args` at `before`, typed
# A `before` rule runs ahead of argument validation (semantics §7), but a field or value the input
# schema rules out can only be in a call the pipeline then refuses as invalid: the rule can never
# match a valid call, so the finding is an error, as in an `after` rule or a `check_in`.
BEFORE = ('agent ag {{ tools = [t] policies = [p] }}\n'
          'tool t {{ description = "x" input {{ name: string, n: integer }} impl = returns("ran"){check_in} }}\n'
          'policy p {{ {moment} {{ {rules} }} }}\n')
TYPO_AND_NUMBER = 'deny when args.extra == 1 because "extra" deny when args.name == 5 because "num"'


def _found(src: str) -> list[tuple[str, bool, str]]:
    return [(d.code, d.is_error, d.message) for d in afp_dsl.check(src)]


def test_schema_findings_at_before_are_errors_as_after_it() -> None:
    found = afp_dsl.check(BEFORE.format(check_in="", moment="before t", rules=TYPO_AND_NUMBER))
    assert [(d.code, d.is_error, d.message) for d in found] == [
        ("AFP304", True, "the input schema of `t` declares no field `args.extra`"),
        ("AFP305", True, "`args.name == 5` can never be true")]
    assert not any("not yet validated" in n for d in found for n in d.notes)


def test_afpc_check_exits_1_when_a_before_rule_misspells_an_argument(tmp_path: Path) -> None:
    from click.testing import CliRunner
    spec = tmp_path / "x.afp"
    spec.write_text(BEFORE.format(check_in="", moment="before t", rules=TYPO_AND_NUMBER))
    ran = CliRunner().invoke(main, ["check", "--format", "short", str(spec)])
    assert ran.exit_code == 1, ran.output
    assert "error[AFP304]" in ran.output and "error[AFP305]" in ran.output


@pytest.mark.parametrize("rules,code", [
    ('deny when args.name < true because "x"', "AFP305"),         # never ordered, whatever `args`
    ('deny when args.n < [1] because "x"', "AFP305"),
    ('deny when result == 1 because "x"', "AFP303"),               # no `result` before the call
    ('deny when message.x == 1 because "x"', "AFP304"),            # `message` is a string
])
def test_findings_needing_no_schema_stay_errors_at_before(rules: str, code: str) -> None:
    found = _found(BEFORE.format(check_in="", moment="before t", rules=rules))
    assert [(c, e) for c, e, _ in found] == [(code, True)], found


@pytest.mark.parametrize("moment", ["before t", "after t"])
def test_a_misspelt_field_is_the_one_diagnostic_of_its_comparison(moment: str) -> None:
    found = _found(BEFORE.format(check_in="", moment=moment,
                                 rules='deny when args.nam < true because "x"'))
    assert [(c, e) for c, e, _ in found] == [("AFP304", True)]


def test_a_check_in_and_a_before_rule_of_one_tool_are_typed_alike() -> None:
    check_in = "\n  check_in = args.extra == 1 or args.name == 5"
    found = _found(BEFORE.format(check_in=check_in, moment="before t", rules=TYPO_AND_NUMBER))
    assert [(c, e) for c, e, _ in found] == [
        ("AFP304", True), ("AFP305", True), ("AFP304", True), ("AFP305", True)]


def test_after_rules_and_route_guards_keep_their_errors() -> None:
    after = BEFORE.format(check_in="", moment="after t", rules=TYPO_AND_NUMBER)
    assert [(c, e) for c, e, _ in _found(after)] == [("AFP304", True), ("AFP305", True)]
    route = ('agent a { graph = g }\n'
             'tool t { description = "x" input { name: string } output { n: integer } }\n'
             'skill s1 { description = "x" tools = [t] }\nskill s2 { description = "x" }\n'
             'graph g { entry s1\n route s1 -> s2 on t status success '
             'when result.m == 1 or result.n == "a" or args.extra == 1 }\n')
    assert [(c, e) for c, e, _ in _found(route)] == [("AFP304", True), ("AFP305", True),
                                                       ("AFP304", True)]


def test_before_any_tool_does_not_type_args() -> None:
    assert _found(BEFORE.format(check_in="", moment="before *", rules=TYPO_AND_NUMBER)) == []


def test_never_matching_before_rules_need_no_note_when_only_the_schema_says_so() -> None:
    rules = ('deny when args.n > 1 and args.n < 2 because "no integer between" '
             'deny when args.n > 5 and args.n < 2 because "never, whatever the call"')
    found = afp_dsl.check(BEFORE.format(check_in="", moment="before t", rules=rules))
    assert [(d.code, d.is_error) for d in found] == [("AFP401", False), ("AFP401", False)]
    assert not any("not yet validated" in n for d in found for n in d.notes)


@pytest.mark.parametrize("cond, hint", [
    ('"true"', "write `true` without quotes"),
    ("1", "a comparison such as"),
    ("args.q", "compare `args.q`"),
])
def test_a_condition_that_is_not_boolean_names_the_fix(cond: str, hint: str) -> None:
    spec = ('agent a { tools = [t] }\n'
            f'tool t {{ description = "d" input {{ q: string }} check_in = {cond} impl = returns("x") }}\n')
    [d] = afp_dsl.check(spec)
    assert d.code == "AFP208"
    assert hint in (d.help or "") and "contradiction" not in (d.help or "")


def test_a_real_contradiction_keeps_its_help() -> None:
    spec = ('agent a { tools = [t] }\ntool t { description = "d" input { n: integer } '
            'check_in = args.n > 5 and args.n < 2 impl = returns("x") }\n')
    [d] = afp_dsl.check(spec)
    assert d.code == "AFP208" and "contradiction" in d.help
