"""What the checker proves of a guard holds at run time: the checker reads a tool's `output`
schema as guards see the result (language.md §6: a string result that parses as JSON is parsed).
"""
from __future__ import annotations

import textwrap

from afp_dsl.testing import run_files
from check_support import codes

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
