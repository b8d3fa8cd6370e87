"""Raw JSON Schema maps: the checks read defaults and bounds only where 2020-12 has a schema
(`checks.schema_walk.subschemas`). What sits under a keyword the validator does not know is data, an
annotation it ignores: it never crashes a check, draws no AFP302 or AFP301, and the run treats
it as the validator does. Found by `bench/fuzz.py mutate` (tests/corpus/mutate-e49387278eda.afp)."""
from __future__ import annotations

import pytest

import afp_dsl
from afp_dsl.checks.schema_walk import subschemas


def _spec(output: str) -> str:
    return f'tool t {{\n  description = "d"\n  output = {output}\n}}\n'


# Each once crashed `afp_dsl.check` (ZeroDivisionError, UnknownType, re.error, TypeError...):
# a default beside content no schema may hold, under a keyword no schema knows.
@pytest.mark.parametrize("inner", [
    '{ type: "irteger", default: "x" }', "{ type: 5, default: 1 }", '{ pattern: "(", default: "a" }',
    '{ minimum: "x", default: 1 }', '{ "$ref": "#/nowhere", default: 1 }', '{ format: 5, default: "a" }',
    "{ enum: 5, default: 1 }", "{ required: 5, default: {} }", "{ properties: 5, default: {} }",
    "{ items: 5, default: [] }", '{ "$ref": "http://example.com/x", default: 1 }',
    "{ allOf: 5, default: 1 }", '{ maxLength: -1, default: "a" }', "{ multipleOf: 0, default: 1 }",
    "{ dependentRequired: 5, default: {} }", '{ "$dynamicRef": "#x", default: 1 }',
    '{ patternProperties: { "(": {} }, default: { a: 1 } }', "{ contains: 5, default: [1] }",
    '{ "$schema": "http://x", default: 1 }', "{ minimum: 5, maximum: 1 }",
    '{ properties: { n: { type: "irteger", default: "many" } } }',
    '{ pattern: 5, patternProperties: [1] }', '{ pattern: "(", patternProperties: 5 }',
])
@pytest.mark.parametrize("keyword", ["foo", "propenties", "\"x-note\""])
def test_what_is_under_an_unknown_keyword_is_not_judged(inner: str, keyword: str) -> None:
    typo = ["AFP309"] if keyword == "propenties" else []  # (spelt like `properties`: a warning)
    diags = afp_dsl.check(_spec(f'{{ type: "object", {keyword}: {inner} }}'))
    assert [d.code for d in diags] == typo, diags
    # beside a default that is judged (its regexes are read first, to know whether it is safe)
    beside = f'{{ type: "object", properties: {{ n: {{ type: "string", default: "a", {keyword}: {inner} }} }} }}'
    assert [d.code for d in afp_dsl.check(_spec(beside))] == typo


@pytest.mark.parametrize("key, meant", [("propenties", "properties"), ("minLenght", "minLength"),
                                        ("require", "required"), ("MAXLENGTH", "maxLength"),
                                        ("id", "$id"), ("example", "examples")])
def test_a_key_spelt_like_a_keyword_is_a_warning_naming_it(key: str, meant: str) -> None:
    diags = afp_dsl.check(_spec(f'{{ type: "object", properties: {{ a: {{ "{key}": 1 }} }} }}'))
    assert [(d.code, d.is_error, d.help) for d in diags] == [("AFP309", False, f"did you mean `{meant}`?")]
    assert f"the key `{key}` (at `/properties/a`)" in diags[0].message


@pytest.mark.parametrize("key", ["x-owner", "foo", "nullable", "summary", "properties"])
def test_annotations_far_from_every_keyword_are_not_reported(key: str) -> None:
    assert afp_dsl.check(_spec(f'{{ type: "object", "{key}": {{}} }}')) == []


@pytest.mark.parametrize("output, at", [
    ('{ type: "object", properties: { n: { type: "integer", default: "x" } } }', "/properties/n"),
    ('{ type: "array", items: { type: "integer", default: "x" } }', "/items"),
    ('{ type: "array", prefixItems: [{ type: "string" }, { type: "integer", default: "x" }] }', "/prefixItems/1"),
    ('{ allOf: [{ type: "integer", default: "x" }] }', "/allOf/0"),
    ('{ "$defs": { d: { type: "integer", default: "x" } } }', "/$defs/d"),
    ('{ type: "object", patternProperties: { "^a": { type: "integer", default: "x" } } }', "/patternProperties/^a"),
    ('{ if: { type: "object" }, then: { type: "object", default: 3 } }', "/then"),
    ('{ not: { type: "string", default: 3 } }', "/not"),
    ('{ type: "object", dependentSchemas: { a: { type: "object", default: 3 } } }', "/dependentSchemas/a"),
    ('{ type: "object", additionalProperties: { type: "integer", default: "x" } }', "/additionalProperties"),
    ('{ type: "integer", default: "x" }', "/"),
])
def test_a_default_in_every_kind_of_subschema_is_checked(output: str, at: str) -> None:
    diags = afp_dsl.check(_spec(output))
    assert [d.code for d in diags] == ["AFP302"], diags
    assert f"the default at `{at}`" in diags[0].message


@pytest.mark.parametrize("output, at", [
    ('{ type: "object", properties: { n: { minimum: 5, maximum: 1 } } }', "/properties/n"),
    ('{ anyOf: [{ type: "string" }, { minLength: 4, maxLength: 2 }] }', "/anyOf/1"),
    ('{ type: "array", items: { minItems: 3, maxItems: 1 } }', "/items"),
])
def test_bounds_in_a_subschema_are_checked(output: str, at: str) -> None:
    diags = afp_dsl.check(_spec(output))
    assert [d.code for d in diags] == ["AFP301"], diags
    assert f"leave no value at `{at}`" in diags[0].message


def test_subschemas_walks_depth_first_in_order_and_escapes_pointers() -> None:
    doc = {"properties": {"a/b": {"items": [{"type": "string"}, True]}, "c~": {}},
           "allOf": [{"not": {}}], "note": {"properties": {"x": {}}}}
    assert [p for _, p in subschemas(doc)] == [
        "", "/properties/a~1b", "/properties/a~1b/items/0", "/properties/c~0", "/allOf/0", "/allOf/0/not"]


def test_a_deeply_nested_schema_is_walked_without_recursion() -> None:
    doc: dict = {}
    node = doc
    for _ in range(5000):
        node["not"] = {}
        node = node["not"]
    assert sum(1 for _ in subschemas(doc)) == 5001
