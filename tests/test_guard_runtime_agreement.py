"""What the checker proves of a guard holds at run time: the checker reads a tool's `output`
schema as guards see the result (language.md §6: a string result that parses as JSON is parsed).
"""
from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl.evaluate import Env, evaluate, parse_result
from afp_dsl.testing import run_files
from check_support import analyse, codes

_ROUTED = """
agent a {{ graph = g }}
tool t {{
  description = "T."
  output = {output}
}}
skill s {{ description = "S." tools = [t] }}
skill u {{ description = "U." }}
graph g {{
  entry s
  route s -> u on t status success when {guard}
}}
"""


def _spec(output: str, guard: str) -> str:
    return textwrap.dedent(_ROUTED.format(output=output, guard=guard))


def _route_taken(tmp_path, output: str, guard: str, returned: str) -> bool:
    f = tmp_path / "t.afp"
    f.write_text(_spec(output, guard) + textwrap.dedent(f"""
    test taken {{
      user "go"
      model calls t {{}}
      tool t returns {returned}
      model says "ok"
      expect route s -> u
    }}
    """), encoding="utf-8")
    (r,), problems = run_files([f], None)
    assert problems == []
    return r.passed


# A string result "5" is valid for `output = { type: "string" }`, and guards see it parsed: 5.
# Before the fix the checker called `result == 5` impossible (AFP305 / AFP208), and `result.x`
# an unknown field (AFP304), though both hold for the results "5" and '{"x": 1}'.
def test_a_string_result_that_parses_as_json_is_not_typed_as_a_string(tmp_path) -> None:
    string = '{ type: "string" }'
    assert codes(_spec(string, "result == 5")) == []
    assert codes(_spec(string, 'result == 5 or result == "x"')) == []
    assert codes(_spec(string, "result.x == 1")) == []
    assert _route_taken(tmp_path, string, "result == 5", '"5"')
    assert _route_taken(tmp_path, string, "result.x == 1", '"{\\"x\\": 1}"')


def test_an_enum_of_strings_is_read_parsed() -> None:
    listed = '{ enum: ["1", "x"] }'
    assert codes(_spec(listed, "result == 1")) == []
    assert codes(_spec(listed, 'result == "1"')) == ["AFP305"]  # guards never see the string
    assert codes(_spec(listed, 'result == "y"')) == ["AFP305"]


def test_results_that_cannot_be_strings_stay_typed() -> None:
    obj = '{ type: "object", properties: { n: { type: "integer" } } }'
    assert codes(_spec(obj, 'result.n == "lots"')) == ["AFP305"]
    assert codes(_spec(obj, "result == 5")) == ["AFP305"]
    assert codes(_spec('{ type: "integer" }', 'result == "5"')) == ["AFP305"]


# ---------------------------------------------------------------- soundness, by sampling
# What the checker proves of a route (AFP208: its guard never holds; AFP305: a comparison never
# is true; AFP205 "never fires": an earlier route takes every result it would take) is checked
# against results the tool may return: each valid for the output schema, seen as guards see it.
OUTPUTS = {
    "block": ('{ type: "object", properties: { n: { type: "integer", minimum: 0 }, '
              'k: { enum: ["a", "b", null] }, s: { type: "string" }, l: { type: "array" } }, '
              'required: ["n", "k"], additionalProperties: false }',
              [{"n": n, "k": k, **extra} for n in (0, 1, 7) for k in ("a", "b", None)
               for extra in ({}, {"s": "1"}, {"s": "a b"}, {"l": []}, {"l": ["a", 1]})]),
    "string": ('{ type: "string" }', ["", "a", "5", "1.0", "true", "null", '{"n": 1}', "[1]", "ab"]),
    "enum": ('{ enum: ["1", "x", "true", 2] }', ["1", "x", "true", 2]),
}
PATHS = ["result", "result.n", "result.k", "result.s", "result.l", "result[0]", "status", "tool"]
LITERALS = ["1", "1.0", "0", "2", "true", "false", "null", '"a"', '"1"', '"x"', '"success"']
comparisons = st.one_of(
    st.builds("{} {} {}".format, st.sampled_from(PATHS),
              st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.sampled_from(LITERALS)),
    st.builds("{} {} [{}]".format, st.sampled_from(PATHS), st.sampled_from(["in", "not in"]),
              st.lists(st.sampled_from(LITERALS), min_size=1, max_size=3).map(", ".join)),
    st.builds("{} matches /{}/".format, st.sampled_from(PATHS), st.sampled_from(["^a", "1", "^$"])),
    st.builds("{} mentions {}".format, st.sampled_from(PATHS), st.sampled_from(['"a"', '["b", "1"]'])),
    st.sampled_from(PATHS))
conditions = st.recursive(comparisons, lambda inner: st.one_of(
    st.builds("({} and {})".format, inner, inner), st.builds("({} or {})".format, inner, inner),
    st.builds("not ({})".format, inner)), max_leaves=4)
STATUS_SETS = {"": None, " status success": {"success"}, " status [success, failure]": {"success", "failure"}}


_TWO = """
agent a {{ graph = g }}
tool t {{ description = "T." output = {output} }}
skill s {{ description = "S." tools = [t] }}
skill u {{ description = "U." }}
skill w {{ description = "W." }}
graph g {{
  entry s
  route s -> u on t{first_status} when {first}
  route s -> w on t{second_status} when {second}
}}
"""


def _results(kind: str, statuses: set | None):
    for status in sorted(statuses or {"success", "failure", "absent"}):
        for raw in (OUTPUTS[kind][1] if status == "success" else [{"error": "boom"}, None]):
            yield status, Env({"result": parse_result(raw), "status": status, "tool": "t",
                               "args": {}, "message": "m", "iteration": 2, "skill": "s"})


def _nodes(e):
    yield e
    for item in getattr(e, "items", None) or ():
        yield from _nodes(item)
    if isinstance(e, ir.Not):
        yield from _nodes(e.item)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(OUTPUTS)), first=conditions, second=conditions,
       statuses=st.lists(st.sampled_from(sorted(STATUS_SETS)), min_size=2, max_size=2))
def test_what_the_checker_proves_of_a_route_holds_for_every_result(kind, first, second, statuses):
    program, diags = analyse(textwrap.dedent(_TWO.format(
        output=OUTPUTS[kind][0], first=first, second=second, first_status=statuses[0],
        second_status=statuses[1])), "t.afp")
    routes = [r for m in program.modules for d in m.decls if isinstance(d, ir.Graph) for r in d.routes]
    sets = [STATUS_SETS[x] for x in statuses]
    envs = list(_results(kind, None))

    def fires(i: int, e: Env, status: str, expr=None) -> bool:
        return (sets[i] is None or status in sets[i]) and evaluate(expr or routes[i].when, e).holds

    for d in diags:
        span = d.primary.span
        for i, route in enumerate(routes):
            if d.code == "AFP208" and route.when.span == span:
                assert not any(fires(i, e, st_) for st_, e in envs), d.message
            for c in _nodes(route.when):
                if d.code == "AFP305" and isinstance(c, ir.Compare) and c.span == span:
                    assert not any(fires(i, e, st_, c) for st_, e in envs), d.message
        if d.code == "AFP205" and "never fires" in d.message:
            assert not any(fires(1, e, st_) and not fires(0, e, st_) for st_, e in envs), d.message


# ---------------------------------------------------------------- an agent run as a tool
# An inner run refused by its own policies is a call with status `denied` that executed: `after`
# rules and `route … status denied` see it (language.md §5.2), its result the refusal's text.
# Before the fix `after helper { deny when status == "denied" … }` was AFP401 (never holds) and
# `result matches /…/` there AFP305 (the output schema's object, or null), though both held.
_INNER = """
agent outer {{ tools = [helper] policies = [watch] graph = g }}
agent inner {{ policies = [block] }}
tool helper {{
  description = "Ask the inner agent."
  input {{ q: string }}
  output {{ answer: string }}
  impl = agent(inner)
}}
skill s {{ description = "S." tools = [helper] }}
skill u {{ description = "U." }}
graph g {{
  entry s
  route s -> u on helper status denied when result matches /secrets/
}}
policy block {{ input {{ deny when message matches /secret/ because "no secrets" }} }}
policy watch {{ after helper {{ deny when {rule} because "the helper refused" }} }}
test refused {{
  agent = outer
  user "go"
  model calls helper {{ q: "secret" }}
  model says "done"
  expect route s -> u
  expect trace policy.decided
}}
"""


def test_an_inner_agents_refusal_is_seen_by_after_rules_and_routes(tmp_path) -> None:
    for rule in ('status == "denied"', "result matches /secrets/"):
        text = textwrap.dedent(_INNER.format(rule=rule))
        assert codes(text) == [], rule
        f = tmp_path / "t.afp"
        f.write_text(text, encoding="utf-8")
        (r,), problems = run_files([f], None)
        assert problems == [] and r.passed, r.failures
    # a tool that is not an agent never shows `after` a denial (AFP401), its denied result is
    # its own or null (the route's AFP305), and `args` stay typed (AFP305 for `args.q == 5`)
    plain = textwrap.dedent(_INNER.format(rule='status == "denied" or args.q == 5')).replace(
        "impl = agent(inner)", "")
    assert sorted(codes(plain)) == ["AFP305", "AFP305", "AFP401"]
