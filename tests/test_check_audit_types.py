"""Conformance audit of schema, expression, policy, redaction and test-script checks
(language.md §5.2, §5.6–§5.8, §6, §7; codes AFP3xx, AFP4xx). Each test failed before its fix."""
from __future__ import annotations

import pytest

import afp_dsl


def _found(spec: str) -> list[tuple[str, str, str]]:
    return [(d.code, d.severity.value, d.message) for d in afp_dsl.check(spec)]


def _tool(fields: str) -> str:
    return f'tool v {{\n  description = "d"\n  input {{ {fields} }}\n}}\n'


# ---------------------------------------------------------------- §5.2 constraints on literal unions
@pytest.mark.parametrize("fields, key", [
    ('c: 1 | 2 (min: 5)', 'min: 5'),
    ('c: 1 | 2 (exclusive_max: 1)', 'exclusive_max: 1'),
    ('b: "x" | "y" (pattern: "^z")', 'pattern: "^z"'),
    ('b: "x" | "yy" (min_length: 3)', 'min_length: 3'),
    ('b: "ab" | "c" (min_length: 2, pattern: "c")', 'pattern: "c"'),
    ('b?: "long" (max_length: 2)', 'max_length: 2'),
])
def test_a_constraint_no_literal_of_the_union_satisfies_is_afp301(fields, key):
    """language §5.2: a constraint that does not fit is a diagnostic, as `min > max` is (AFP301,
    "no value can satisfy this field"). Before: `1 | 2 (min: 5)` was compiled to a schema that
    refuses every value, with no diagnostic."""
    assert _found(_tool(fields)) == [
        ("AFP301", "error", f"no literal of the union satisfies `{key}`: no value can satisfy this field")]


def test_the_error_points_at_the_constraint_value_and_the_default_is_not_reported_again():
    spec = _tool('u: "a" | "b" (min_length: 2) = "a"')
    diags = afp_dsl.check(spec)
    assert [d.code for d in diags] == ["AFP301"]  # (the default is judged without the constraint)
    span = diags[0].primary.span
    assert (spec[span.start:span.end], diags[0].primary.message) == ("2", "leaves no value")


@pytest.mark.parametrize("fields", [
    '"a" | 1 (min_length: 2)',  # the number passes a string constraint (JSON Schema applies it to strings)
    '"a" | "bb" (min_length: 2)',  # one literal left
    '1 | 2 | 3 (exclusive_min: 1, max: 2)',  # 2 is left
    '"ok" | "no" (pattern: "^o")',
    '"a" | "b" (format: "email")',  # `format` is an annotation
    '"a" | "b" (min_length: 1)',
])
def test_a_constraint_some_literal_satisfies_is_accepted(fields):
    assert _found(_tool(f"u: {fields}")) == []


# ---------------------------------------------------------------- §6 paths under `last`
_FACT = ('agent a {{\n  system = "x"\n  tools = [t]\n  context = [f]\n}}\n'
         'tool t {{ description = "d"  impl = returns("x") }}\n'
         'fact f {{ data = "x"  when = {cond} }}\n')


@pytest.mark.parametrize("cond, shown, seg", [
    ('last.tool.name == "t"', "last.tool", "name"),
    ('last.status.code == 1', "last.status", "code"),
    ('last.tool[0] == "t"', "last.tool", "[0]"),
])
def test_a_field_of_last_tool_or_last_status_is_afp304(cond, shown, seg):
    """language §6: `last.tool` and `last.status` are names (or null); a field of one is always
    null, as `tool.x` is (AFP304). Before: `last.tool.name == "t"` was accepted."""
    assert _found(_FACT.format(cond=cond)) == [
        ("AFP304", "error", f"`{shown}` is a string; it has no field `{seg}`")]


@pytest.mark.parametrize("cond", ['last.result.x == 1', 'last.result[0] == 1', 'last.tool == "t"',
                                  'last.status == "success"', 'last.tool == null'])
def test_last_result_paths_and_last_itself_stay_accepted(cond):
    assert _found(_FACT.format(cond=cond)) == []


# ---------------------------------------------------------------- §6 `skill` in a tool's `check_in`
_CHECK_IN = ('agent a {{\n  system = "x"\n  tools = [t]\n  skills = [lookup]\n}}\n'
             'skill lookup {{ description = "d" }}\n'
             'tool t {{\n  description = "d"\n  input {{ n: integer }}\n  check_in = {cond}\n'
             '  impl = returns("x")\n}}\n')


def test_a_skill_name_no_skill_has_in_check_in_is_afp305_as_in_a_policy():
    """language §6: `skill` is a root of `check_in`, the current skill's name or null; naming a
    skill the program does not declare can never be true (AFP305, as in a policy `before` rule or
    a fact's `when`). Before: `check_in = skill == "lookpu"` was accepted."""
    diags = afp_dsl.check(_CHECK_IN.format(cond='skill == "lookpu"'))
    assert [(d.code, d.message, d.help) for d in diags] == [
        ("AFP305", '`skill` can never be `"lookpu"`', 'did you mean `"lookup"`?')]


@pytest.mark.parametrize("cond", ['skill == "lookup"', 'skill == null', 'skill != "nope"'])
def test_a_skill_name_the_program_has_in_check_in_is_accepted(cond):
    assert _found(_CHECK_IN.format(cond=cond)) == []


def test_a_union_no_literal_satisfies_is_one_diagnostic_for_its_paths_and_scripts():
    """One root cause, one diagnostic: the schema is not the one meant, so a policy path and a
    scripted call against it are not judged again (no AFP305, no AFP405)."""
    spec = ('agent a { system = "x"  tools = [t]  policies = [g] }\n'
            'tool t { description = "d"  input { q: 1 | 2 (min: 5) }  impl = returns("x") }\n'
            'policy g { before t { deny when args.q == 7 because "x" } }\n'
            'test s {\n  user "h"\n  model calls t { q: 7 }\n  model says "d"\n}\n')
    assert [d.code for d in afp_dsl.check(spec)] == ["AFP301"]


# ---------------------------------------------------------------- §5.8 `agent =`
def test_a_test_in_a_module_with_no_agent_of_its_own_is_told_the_imported_one(tmp_path):
    """language §5.8: `agent =` is required unless the module has exactly one agent; a module
    that only imports agents gets AFP111 with the name to write. Before: the help only said
    "declare an agent to test"."""
    (tmp_path / "lib.afp").write_text('agent desk { system = "x" }\n', encoding="utf-8")
    (tmp_path / "t.afp").write_text('import "lib.afp" as lib\ntest s {\n  user "h"\n  model says "d"\n}\n',
                                    encoding="utf-8")
    diags = afp_dsl.check(tmp_path / "t.afp")
    assert [(d.code, d.help) for d in diags] == [
        ("AFP111", "add `agent = lib.desk` to the test, or declare an agent to test")]


# ---------------------------------------------------------------- §5.2 / §7 raw defaults behind `$ref`
def _raw(schema: str) -> str:
    return f'tool v {{\n  description = "d"\n  input = {schema}\n}}\n'


@pytest.mark.parametrize("schema, what", [
    ('{ type: "object", "$defs": { n: { type: "integer" } }, '
     'properties: { a: { "$ref": "#/$defs/n", default: "x" } } }', "expected integer"),
    ('{ type: "object", "$defs": { s: { type: "string", pattern: "^a" } }, '
     'properties: { a: { "$ref": "#/$defs/s", default: "b" } } }', "expected a string matching /^a/"),
    ('{ type: "object", "$defs": { n: { "$anchor": "int", type: "integer" } }, '
     'properties: { a: { "$ref": "#int", default: "x" } } }', "expected integer"),
    ('{ type: "object", properties: { c: { "$ref": "#", default: { c: { c: 5 } } } } }',
     "`c.c`: expected object"),
])
def test_a_default_beside_a_ref_is_judged_by_the_schema_it_refers_to(schema, what):
    """language §7: defaults valid against their own schema. In JSON Schema 2020-12 a `$ref`
    applies beside its siblings, so `{"$ref": "#/$defs/n", "default": "x"}` has a default its
    schema refuses (AFP302). Before: the sub-schema was validated alone, its `$ref` could not be
    resolved, and the default was not judged."""
    assert _found(_raw(schema)) == [
        ("AFP302", "error", "the default at `/properties/"
         f"{'c' if 'c:' in schema else 'a'}` in the `input` schema of tool `v` does not satisfy "
         f"its schema: {what}")]


@pytest.mark.parametrize("schema", [
    '{ type: "object", "$defs": { n: { type: "integer" } }, properties: { a: { "$ref": "#/$defs/n", default: 3 } } }',
    '{ type: "object", "$defs": { a: { "$ref": "#/$defs/b" }, b: { "$ref": "#/$defs/a" } }, '
    'properties: { x: { "$ref": "#/$defs/a", default: 1 } } }',
    # a nested `$id` moves the base `#/...` is read from: `i` is its own `string`
    '{ type: "object", "$defs": { n: { "$id": "https://e.x/n", "$defs": { i: { type: "string" } }, '
    'type: "object", properties: { p: { "$ref": "#/$defs/i", default: "s" } } }, i: { type: "integer" } }, '
    'properties: { a: { "$ref": "https://e.x/n" } } }',
])
def test_a_default_its_referred_schema_accepts_or_cannot_be_told_is_not_reported(schema):
    assert _found(_raw(schema)) == []


@pytest.mark.parametrize("inner, default, what", [
    ("string", "5", "expected string"),   # the scope's own `i`, not the root's integer one
    ("integer", '"s"', "expected integer"),
])
def test_a_default_under_a_nested_id_is_judged_from_that_base(inner, default, what):
    """language §7 with JSON Schema 2020-12's base URIs: under a nested `$id`, `#/$defs/i` is
    read from that resource, as the run's validator reads it. Before: with any nested `$id` the
    sub-schema was validated alone, its `$ref` could not be resolved, and no default was judged."""
    schema = ('{ type: "object", "$defs": { n: { "$id": "https://e.x/n", "$defs": { i: { type: "'
              + inner + '" } }, type: "object", properties: { "p q/r": { "$ref": "#/$defs/i", default: '
              + default + ' } } }, i: { type: "boolean" } }, properties: { a: { "$ref": "https://e.x/n" } } }')
    assert _found(_raw(schema)) == [
        ("AFP302", "error", "the default at `/$defs/n/properties/p q~1r` in the `input` schema of tool `v` "
         f"does not satisfy its schema: {what}")]


# ---------------------------------------------------------------- §6 roots: "did you mean"
_POLICY = ('agent a {{\n  system = "x"\n  tools = [t]\n  policies = [g]\n}}\n'
           'tool t {{ description = "d"  input {{ n: integer }}  output {{ ok: boolean }}  impl = returns({{ok: true}}) }}\n'
           'policy g {{ {block} }}\n')


@pytest.mark.parametrize("block, root, meant", [
    ('output { deny when answer matches /x/ because "r" }', "answer", "text"),
    ('after t { deny when response.ok == true because "r" }', "response", "result"),
    ('before t { deny when params.n == 1 because "r" }', "params", "args"),
])
def test_another_frameworks_word_for_a_root_is_told_the_root_meant(block, root, meant):
    """language §6: a root not allowed in its place is AFP303 naming the roots allowed there.
    Before: `answer` in an `output` rule (the answer is `text`) got no "did you mean"."""
    diags = afp_dsl.check(_POLICY.format(block=block))
    assert [(d.code, d.help) for d in diags] == [("AFP303", f"did you mean `{meant}`?")]
    assert root in diags[0].message and f"`{meant}`" in diags[0].notes[0]
