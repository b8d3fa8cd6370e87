"""Conformance: what the checker claims (spec/language.md §6-§7, spec/tooling.md §3).

Each case is a finding of the conformance audit: a false error (a claim the run contradicts), a
program the checker passed that then fails or crashes at run time, or a cascade.
"""
from __future__ import annotations

import textwrap

import pytest

import afp_dsl
from afp_dsl.argcheck import arg_problems
from afp_dsl.testing import run_files


def diags(text: str):
    return afp_dsl.check(textwrap.dedent(text))


def codes(text: str) -> list[str]:
    return [d.code for d in diags(text)]


def errors(text: str) -> list[str]:
    return [d.code for d in diags(text) if d.severity.name == "ERROR"]


# ---------------------------------------------------------------- #1 result/args by status
GRAPH = """
agent a {{ graph = g }}
tool t {{ description = "x" {schemas} }}
skill s1 {{ description = "x" tools = [t] }}
skill s2 {{ description = "x" }}
graph g {{
  entry s1
  {route}
}}
"""


def graph(route: str, schemas: str = "output { n: number }") -> str:
    return GRAPH.format(route=route, schemas=schemas)


FAILURE_ROUTE = ("route s1 -> s2 on t status failure when result.n == null "
                 "and result.error matches /timeout/")


def test_a_failure_route_may_read_the_error_and_test_absence():
    assert codes(graph(FAILURE_ROUTE)) == []


def test_the_failure_route_holds_at_run_time(tmp_path):
    spec = tmp_path / "f.afp"
    spec.write_text(graph(FAILURE_ROUTE) + textwrap.dedent("""
    test x {
      user "hi"
      model calls t
      tool t fails "timeout after 3s"
      model says "sorry"
      expect route s1 -> s2
      expect cursor s2
    }
    """))
    results, problems = run_files([spec], None)
    assert problems == []
    assert [r.passed for r in results] == [True]


@pytest.mark.parametrize("route", [
    "route s1 -> s2 on t when result.n == null",              # any status: null unless success
    "route s1 -> s2 on t when result.error == \"boom\"",      # a failure's result is {error}
    "route s1 -> s2 on t status [success, failure] when result.n == null",
    "route s1 -> s2 on t status absent when result.reason == \"none\"",
    "route s1 -> s2 on t status partial when result.rows[0] == 1",
])
def test_a_result_that_may_not_be_a_success_is_not_the_output_schema(route):
    assert errors(graph(route)) == []


def test_an_invalid_call_may_have_any_arguments():
    text = graph('route s1 -> s2 on t status invalid when args.n == "oops" and args.other == 1',
                 "input { n: integer }")
    assert errors(text) == []


def test_an_after_rule_may_see_a_result_that_is_not_a_success():
    text = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "x" output { n: number } }
    policy p { after t { deny when status == "absent" and result.n == null because "nothing" } }
    """
    assert codes(text) == []


@pytest.mark.parametrize("route, code", [
    ("route s1 -> s2 on t status success when result.n == null", "AFP305"),
    ('route s1 -> s2 on t when status == "success" and result.n == null', "AFP305"),
    ('route s1 -> s2 on t when result.n == "lots"', "AFP305"),   # a number or null: never a string
    ("route s1 -> s2 on t when result.nn > 1", "AFP304"),       # in no result of any status
    ("route s1 -> s2 on t status success when result.error == 1", "AFP304"),
])
def test_what_holds_for_every_status_is_still_claimed(route, code):
    assert code in codes(graph(route))


def test_arguments_of_a_validated_call_are_still_typed():
    text = graph('route s1 -> s2 on t status success when args.n == "oops"', "input { n: integer }")
    assert "AFP305" in codes(text)


ORDER = 'input { order_id: string, kind: "a" | "b" }'


@pytest.mark.parametrize("status", ["", "status success "])
@pytest.mark.parametrize("when, code, help", [
    ('args.ordr_id == "x"', "AFP304", "did you mean `order_id`?"),
    ("args.order_id == 5", "AFP305", None),
    ('args.kind == "c"', "AFP305", None),                 # outside the declared enum
])
def test_a_route_on_any_status_types_args_as_one_on_success(status, when, code, help):
    # a field or value the input schema rules out is only in a call the pipeline refuses: the
    # guard never holds for a call that passed validation, with or without `status`
    text = graph(f"route s1 -> s2 on t {status}when {when}", ORDER)
    assert [(d.code, d.is_error, d.help) for d in diags(text)] == [(code, True, help)]


@pytest.mark.parametrize("route", [
    'route s1 -> s2 on t status [success, invalid] when args.ordr_id == "x"',
    'route s1 -> s2 on t when status == "denied" and args.order_id == 5',
    'route s1 -> s2 on t when status in ["pending", "success"] and args.kind == "c"',
])
def test_a_route_asking_for_calls_that_may_not_have_passed_validation_leaves_args_untyped(route):
    assert errors(graph(route, ORDER)) == []


# ---------------------------------------------------------------- #2 unresolvable $ref
DANGLING = """
agent a { tools = [t] }
tool t { description = "x" input = { type: "object", properties: { a: { "$ref": "%s" } } } impl = returns("ok") }
"""


@pytest.mark.parametrize("ref", ["#/$defs/nope", "https://example.com/s.json", "other.json",
                                 "#nowhere"])
def test_a_ref_that_does_not_resolve_is_an_invalid_schema(ref):
    found = [d for d in diags(DANGLING % ref) if d.code == "AFP301"]
    assert len(found) == 1
    assert ref in found[0].message


@pytest.mark.parametrize("schema", [
    '{ type: "object", "$defs": { n: { type: "integer" } }, properties: { a: { "$ref": "#/$defs/n" } } }',
    '{ type: "object", "$defs": { n: { "$anchor": "num", type: "integer" } }, properties: { a: { "$ref": "#num" } } }',
    '{ "$id": "https://example.com/t", type: "object", "$defs": { n: { type: "integer" } }, '
    'properties: { a: { "$ref": "https://example.com/t#/$defs/n" } } }',
    '{ type: "object", properties: { "$ref": { type: "string" } } }',
])
def test_refs_that_resolve_are_clean(schema):
    text = f'agent a {{ tools = [t] }}\ntool t {{ description = "x" input = {schema} }}\n'
    assert codes(text) == []


def test_a_dangling_ref_is_a_problem_at_run_time_not_a_crash():
    from jsonschema import Draft202012Validator
    validator = Draft202012Validator({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}})
    problems = arg_problems(validator, {"a": 1})
    assert len(problems) == 1 and "$ref" in problems[0]


def test_a_remote_ref_that_cannot_be_fetched_is_a_problem_at_run_time():
    from jsonschema import Draft202012Validator
    validator = Draft202012Validator({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}})
    problems = arg_problems(validator, {"a": 1})
    assert len(problems) == 1 and "$ref" in problems[0]


# ---------------------------------------------------------------- #4 regex as an operand
@pytest.mark.parametrize("cond", ["message == /never/", "message in [/a/]", "/x/ == message",
                                  'message != /x/', "message in [\"a\", /b/]"])
def test_a_regex_is_only_a_matches_operand(cond):
    text = f'policy p {{ input {{ deny when {cond} because "blocked" }} }}'
    found = [d for d in diags(text) if d.code == "AFP305"]
    assert len(found) == 1
    assert "matches" in (found[0].help or "")


def test_matches_with_a_regex_is_clean():
    assert codes('policy p { input { deny when message matches /never/ because "blocked" } }') == []


# ---------------------------------------------------------------- #9 expect cursor TOOL
def test_expect_cursor_naming_a_tool_is_a_wrong_kind():
    text = """
    agent a { tools = [t] }
    tool t { description = "x" }
    test x { user "hi" model says "x" expect cursor t }
    """
    assert codes(text) == ["AFP102"]


# ---------------------------------------------------------------- #10 ordered with a list
@pytest.mark.parametrize("cond", ["iteration < [1]", 'message > ["a"]', "last.result < [1]",
                                  "iteration >= []", "[1] > iteration"])
def test_an_ordered_comparison_with_a_list_is_a_type_mismatch(cond):
    assert codes(f'instruction i {{ prompt = "x" when = {cond} }}') == ["AFP305"]


def test_a_negated_ordered_comparison_with_a_list_always_holds():
    assert "AFP208" not in codes('instruction i { prompt = "x" when = not (iteration < [1]) }')


# ---------------------------------------------------------------- equality with a list
LISTS = """
tool t {{ description = "x" input {{ a: string, n: integer, l: [string], k: "x" | "y", v: any }} }}
policy p {{ after t {{ deny when {cond} because "no" }} }}
agent ag {{ tools = [t] policies = [p] }}
"""


def list_found(cond: str) -> list[tuple[str, str, str]]:
    return [(d.code, d.severity.value, d.message) for d in diags(LISTS.format(cond=cond))]


@pytest.mark.parametrize("cond, message", [
    ('message == ["a"]', '`message == ["a"]` can never be true'),
    ("iteration == [1]", "`iteration == [1]` can never be true"),
    ('["a"] == message', '`["a"] == message` can never be true'),
    ('args.a == ["x"]', '`args.a == ["x"]` can never be true'),
    ("args.n == []", "`args.n == []` can never be true"),
    ("args.n in [[1]]", "`args.n` can never be `[1]`"),
    ('args.k == ["x"]', '`args.k` can never be `["x"]`'),   # outside the enum, as a whole list
])
def test_equality_with_a_list_literal_where_no_list_can_be_is_a_type_mismatch(cond, message):
    assert list_found(cond) == [("AFP305", "error", message)]


@pytest.mark.parametrize("cond", [
    'args.l == ["x"]', 'args.l in [["x"], []]', 'args.v == ["x"]', 'args.v in [[1]]',
    'result == ["x"]', 'args.a != ["x"]', 'args.n not in [[1]]', "args.ghost == [1]",
])
def test_equality_with_a_list_literal_that_can_hold_is_not_reported(cond):
    found = [c for c, _, _ in list_found(cond)]
    assert "AFP305" not in found and "AFP208" not in found and "AFP401" not in found


@pytest.mark.parametrize("cond", ['message == ["a"]', "iteration == [1]", 'skill in [["s"]]'])
def test_a_when_comparing_with_a_list_is_one_type_mismatch_not_also_unsatisfiable(cond):
    assert codes(f'instruction i {{ prompt = "p" when = {cond} }}') == ["AFP305"]


def test_a_list_item_of_an_in_list_another_item_can_match_is_a_warning():
    assert list_found("args.n in [1, [2]]") == [("AFP305", "warning", "`args.n` can never be `[2]`")]


# ---------------------------------------------------------------- #17 mentions keywords
@pytest.mark.parametrize("keywords", ["[]", '""', "[1, true]", '["refund", ""]', "[null]"])
def test_mentions_needs_non_empty_keyword_strings(keywords):
    found = codes(f'instruction i {{ prompt = "x" when = message mentions {keywords} }}')
    assert found == ["AFP305"]


def test_mentions_with_keywords_is_clean():
    assert codes('instruction i { prompt = "x" when = message mentions ["refund", "money"] }') == []


# ---------------------------------------------------------------- #18 duplicate names
def test_a_duplicate_name_is_one_diagnostic():
    text = """
    agent a { tools = [a] }
    tool a { description = "x" }
    """
    assert codes(text) == ["AFP103"]


def test_a_duplicate_of_yet_another_kind_is_still_a_wrong_kind():
    text = """
    agent a { tools = [s] }
    skill s { description = "x" }
    graph s { entry s }
    """
    assert "AFP102" in codes(text)


# ---------------------------------------------------------------- one root cause, one diagnostic
@pytest.mark.parametrize("cond", [
    "message == {a: 1}", "not (message == {a: 1})", "message in [{a: 1}]", "message < [{a: 1}]",
    "{a: 1} == message", "message == {a: 1} and message == \"x\"", "message == f(1)"])
def test_a_map_or_call_in_a_comparison_is_reported_once(cond):
    """The rejected operand is not a `null` literal to type-check afterwards (it was: AFP305
    "`message == null` can never be true", or AFP208 for the guard)."""
    spec = f'instruction i {{ when = {cond} prompt = "p" }}\nagent a {{ context = [i] }}\n'
    assert codes(spec) == ["AFP106"]


def test_routes_holding_a_rejected_operand_are_not_compared():
    """Two routes whose guards each hold a map were one route shadowing the other (AFP205)."""
    spec = """
    tool t { description = "x" output { v: integer } }
    skill s1 { description = "x" tools = [t] }
    skill s2 { description = "x" }
    skill s3 { description = "x" }
    graph g { entry s1 route s1 -> s2 on t when result.v == {a: 1} route s1 -> s3 on t when result.v == {a: 2} }
    agent a { graph = g }
    """
    assert codes(spec) == ["AFP106", "AFP106"]


def test_an_in_list_with_several_impossible_items_is_one_diagnostic():
    spec = """
    tool t { description = "x" input { s: string } check_in = args.s in [1, 2] }
    agent a { tools = [t] }
    """
    found = diags(spec)  # (a `check_in` reads validated arguments: an error; see AFP305's notes)
    assert [(d.code, d.severity.value, d.message) for d in found] == [
        ("AFP305", "error", "`args.s` can never be `1` or `2`")]
    assert len(found[0].labels) == 2 and found[0].notes == ("`args.s` is a string (input schema of `t`)",)


@pytest.mark.parametrize("cond, item", [
    ('args.n in [args.m, "a"]', '"a"'),      # the key's type rules `"a"` out, not `args.m`
    ('args.k in [args.m, "c"]', '"c"'),      # outside the enum, beside a path
])
def test_an_impossible_item_beside_a_path_that_may_match_is_a_warning(cond, item):
    spec = f"""
    tool t {{ description = "x" input {{ n: integer, m: integer, k: "a" | "b" }} check_in = {cond} }}
    agent a {{ tools = [t] }}
    """
    found = [(d.code, d.severity.value, d.message) for d in diags(spec)]
    assert found == [("AFP305", "warning", f"`{cond.split()[0]}` can never be `{item}`")]


def test_a_bare_name_as_a_scripted_argument_is_one_diagnostic():
    """The rejected arguments were checked as `{}` too (AFP405: `n` is required)."""
    spec = """
    tool t { description = "x" input { n: integer } }
    agent a { tools = [t] }
    test x { user "hi" model calls t { n: t } model says "ok" }
    """
    found = diags(spec)
    assert [d.code for d in found] == ["AFP106"]
    assert found[0].help.startswith('for the text, quote it: `"t"`')


# ---------------------------------------------------------------- one root cause, one diagnostic
# tooling.md §3: "One root cause, one diagnostic: no cascades." An invalid raw schema is AFP301;
# the guards and rules that read it are not also reported against what it fails to declare.
@pytest.mark.parametrize("schema", [
    '{ type: "object", properties: [1] }',
    '{ type: "object", properties: { a: 5 }, additionalProperties: false }',
    '{ type: "object", properties: { a: { type: "strin" } }, required: ["a"] }',
])
def test_paths_into_an_invalid_output_schema_are_not_reported_again(schema):
    text = f"""
    agent a {{ tools = [t] graph = g policies = [p] }}
    tool t {{ description = "t" input {{ x: integer }} output = {schema} }}
    skill s1 {{ description = "one" tools = [t] }}
    skill s2 {{ description = "two" }}
    graph g {{ entry s1 route s1 -> s2 on t when result.a == 1 and result.zz > 2 }}
    policy p {{ after t {{ deny when result.a == "x" because "no" }} }}
    """
    assert codes(text) == ["AFP301"]


def test_an_invalid_input_schema_is_one_diagnostic_too():
    text = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "t" input = { type: "object", properties: [1] } }
    policy p { before t { deny when args.zz == 1 because "no" } }
    """
    assert codes(text) == ["AFP301"]


def test_a_valid_raw_schema_still_types_paths():
    text = """
    agent a { tools = [t] graph = g }
    tool t { description = "t" input { x: integer } output = { type: "object", properties: { a: { type: "integer" } }, additionalProperties: false } }
    skill s1 { description = "one" tools = [t] }
    skill s2 { description = "two" }
    graph g { entry s1 route s1 -> s2 on t when result.zz == 1 }
    """
    assert codes(text) == ["AFP304"]


AGENT_TOOL = """
agent outer { graph = g }
agent inner { system = "Answer in JSON" }
tool research { description = "x" input { q: string } output { status: "ok" | "none" } impl = agent(inner) }
skill s1 { description = "d" tools = [research] }
skill s2 { description = "d" }
graph g {
  entry s1
  route s1 -> s2 on research status success when %s
}
"""


def test_an_agent_tools_success_may_lack_a_field():
    """An agent's answer is never checked against `output` (it may be prose): on a success,
    `result.status == null` holds (the documented fallback), not AFP305; a value outside the
    declared ones is still claimed."""
    assert codes(AGENT_TOOL % "result.status == null") == []
    assert "AFP305" in codes(AGENT_TOOL % 'result.status == "maybe"')
