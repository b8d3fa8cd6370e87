"""`schema_quick.surely_valid` never says "valid" where jsonschema finds an error."""
from __future__ import annotations

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl import api, schema_quick
from afp_dsl.frozen import thaw

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.0, 1.0, 2.5, -1.5]),
                    st.sampled_from(["", "a", "ab", "abc", "A1", "é", "x y"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=8)
types = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])


def leaf_schema():
    return st.fixed_dictionaries({}, optional={
        "type": st.one_of(types, st.lists(types, min_size=1, max_size=2)),
        "enum": st.lists(scalars, min_size=1, max_size=3),
        "pattern": st.sampled_from(["^a", "b$", "[0-9]", "^.{2}$"]),
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "minimum": st.sampled_from([0, 1, 1.5]), "maximum": st.sampled_from([0, 2, 2.5]),
        "exclusiveMinimum": st.sampled_from([0, 1]), "exclusiveMaximum": st.sampled_from([1, 3]),
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 2),
        "description": st.just("d"), "format": st.just("email")})


schemas = st.recursive(leaf_schema(), lambda inner: st.one_of(
    st.builds(lambda props, req, closed: {"type": "object", "properties": props, "required": req,
                                          **({"additionalProperties": False} if closed else {})},
              st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
              st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True), st.booleans()),
    st.builds(lambda items: {"type": "array", "items": items}, inner)), max_leaves=6)


def errors(schema, value) -> list:
    return list(jsonschema.Draft202012Validator(schema).iter_errors(value))


@settings(max_examples=600, deadline=None)
@given(schema=schemas, value=values)
def test_surely_valid_is_never_wrong(schema, value) -> None:
    verdict = schema_quick.surely_valid(schema, value)
    assert verdict in (True, None)
    if verdict:
        assert errors(schema, value) == []


@settings(max_examples=300, deadline=None)
@given(schema=schemas, value=values)
def test_it_answers_for_most_valid_values(schema, value) -> None:
    """Not a soundness property, a usefulness one: within the subset, valid means True."""
    if not errors(schema, value):
        assert schema_quick.surely_valid(schema, value) is True


def test_unknown_keywords_are_left_to_jsonschema() -> None:
    assert schema_quick.surely_valid({"oneOf": [{"type": "string"}]}, "x") is None
    assert schema_quick.surely_valid({"type": "object", "additionalProperties": {"type": "string"}}, {}) is None
    assert schema_quick.surely_valid({"enum": [[1]]}, [1]) is None
    assert schema_quick.surely_valid({"type": "string"}, 3) is None  # invalid: jsonschema says why


def test_schema_block_schemas_are_in_the_subset() -> None:
    src = """tool t {
  description = "d"
  input { id: string(min_length: 1, pattern: "^A") "An id", n?: integer(min: 0, max: 9),
          tags?: [string], kind?: "a" | "b", inner?: { x: number }, ... }
}
"""
    schema = thaw(api.load(src).ir.root_module.decls[0].input.json)
    assert schema_quick.surely_valid(schema, {"id": "A1", "n": 3, "tags": ["x"], "kind": "a",
                                              "inner": {"x": 1.5}, "extra": True}) is True
    assert schema_quick.surely_valid(schema, {"id": "B1"}) is None
