"""One root cause, one diagnostic (tooling.md): a tool schema the front end reported (AFP301:
an unknown type or constraint, bounds that leave no value) is not the one meant, so the checks
that judge paths and values against it stay silent: no AFP305 for a guard on the field, no
AFP405 for a test's arguments. And JSON Schema's own spelling of a constraint (`minimum`) is
answered with ours (`min`)."""
from __future__ import annotations

import afp_dsl


def codes(text: str) -> list[str]:
    return [d.code for d in afp_dsl.check(text)]


def analyse(text: str):
    return None, afp_dsl.check(text)

CASCADE = """agent a { tools = [t] policies = [g] }
tool t { description = "t" input { x: integer(%s), y: %s } }
policy g {
  before t { deny when args.x < 3 because "small"  deny when args.y == "a" because "a" }
}
test x {
  user "go"
  model calls t { x: 3, y: "b" }
  model says "ok"
}
"""


def test_a_reported_schema_is_not_judged_again():
    assert codes(CASCADE % ("min: 5, max: 1", "string")) == ["AFP301"]
    assert codes(CASCADE % ("min: 1", "strin")) == ["AFP301"]
    assert codes(CASCADE % ("min: 5, max: 1", "strin")) == ["AFP301", "AFP301"]


def test_a_sound_schema_is_still_judged():
    found = codes(CASCADE % ("min: 5", "string"))
    assert "AFP305" in found and "AFP405" in found, found


def test_json_schema_spellings_of_constraints_get_ours():
    text = ('agent a { tools = [t] }\ntool t { description = "t" input { x: integer(minimum: 1), '
            's: string(maxLength: 2), z: integer(exclusiveMinimum: 0) } }\n')
    helps = [d.help for d in analyse(text)[1]]
    assert helps == ["did you mean `min`?", "did you mean `max_length`?",
                     "did you mean `exclusive_min`?"], helps


def test_a_schema_block_written_as_a_map_is_named():
    """`input = { a: string }` (a stray `=`) was "a reference cannot stand inside literal data"
    with help to quote it, which made a schema that accepts anything, without a word."""
    bare = afp_dsl.check('tool t { description = "x" input = { a: string, b: [integer] } }')
    assert [(d.code, d.help) for d in bare] == [
        ("AFP106", 'for a schema block, drop the `=`: `input { … }`; for raw JSON Schema, write '
                   '`{ type: "object", properties: { … } }`')]
    quoted = afp_dsl.check('tool t { description = "x" input = { a: "string" } }')
    assert [d.code for d in quoted] == ["AFP309"]
    assert "accepts any value" in quoted[0].message
    raw = 'tool t { description = "x" input = { type: "object", properties: { a: { type: "string" } } } }'
    assert afp_dsl.check(raw) == []


def test_a_returned_json_text_is_judged_as_the_data_guards_read():
    """`returns("{\\"status\\": \\"ok\\"}")` is the object a guard reads (language §6)."""
    ok = 'tool t { description = "x" output { status: string } impl = returns("{\\"status\\": \\"ok\\"}") }'
    assert afp_dsl.check(ok) == []
    bad = 'tool t { description = "x" output { status: string } impl = returns("{\\"status\\": 5}") }'
    assert [d.code for d in afp_dsl.check(bad)] == ["AFP302"]
    prose = 'tool t { description = "x" output { status: string } impl = returns("all fine") }'
    assert [d.code for d in afp_dsl.check(prose)] == ["AFP302"]


def test_a_dead_item_of_an_in_list_that_can_still_match_is_a_warning():
    """An error only when provable: `in ["found", "gone"]` can hold, so `"gone"` warns."""
    head = ('agent a { graph = g }\ntool lookup { description = "x" output { status: "found" | '
            '"missing" } }\nskill s1 { description = "d" tools = [lookup] }\n'
            'skill s2 { description = "d" }\ngraph g {\n  entry s1\n  route s1 -> s2 on lookup '
            'status success when %s\n}\n')
    found = afp_dsl.check(head % 'result.status in ["found", "gone"]')
    assert [(d.code, d.severity.value) for d in found] == [("AFP305", "warning")]
    found = afp_dsl.check(head % 'result.status in ["lost", "gone"]')
    assert {(d.code, d.severity.value) for d in found} == {("AFP305", "error")}
    typed = afp_dsl.check('policy p { input { deny when iteration in [1, "x"] because "b" } }')
    assert [(d.code, d.severity.value) for d in typed] == [("AFP305", "warning")]
