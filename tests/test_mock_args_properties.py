"""Demo arguments (semantics §11) on any schema: what `demo_args` returns passes the schema, and
nothing it is given makes it raise (raw schemas come from spec authors, unchecked here)."""
from __future__ import annotations

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import objects

from afp_dsl.providers.mock_args import demo_args

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                     max_leaves=10)
_keywords = st.sampled_from(["type", "properties", "required", "items", "anyOf", "oneOf",
                             "allOf", "$ref", "pattern", "minLength", "maxLength", "minimum",
                             "maximum", "multipleOf", "enum", "const", "$defs", "not",
                             "additionalProperties", "minItems", "prefixItems"])
wild = st.recursive(st.dictionaries(_keywords, _json, max_size=4),
                    lambda inner: st.dictionaries(_keywords, st.one_of(inner, _json,
                                                                       st.lists(inner, max_size=2)),
                                                  max_size=4),
                    max_leaves=12)


@SETTINGS
@given(objects())
def test_arguments_for_a_declared_schema_pass_it(schema):
    args = demo_args(schema)
    if args is not None:
        assert jsonschema.Draft202012Validator(schema).is_valid(args), (schema, args)


@SETTINGS
@given(wild)
def test_any_raw_schema_gives_valid_arguments_or_none_and_never_raises(schema):
    args = demo_args(schema)
    if args is not None:
        assert isinstance(args, dict)
        try:
            valid = jsonschema.Draft202012Validator(schema).is_valid(args)
        except Exception:  # noqa: BLE001 - a schema jsonschema cannot use at all
            return
        assert valid, (schema, args)
