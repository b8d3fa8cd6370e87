"""`evaluate` against the spec's words (language.md §6), written out as a small independent oracle,
on every operator and every pairing of value types: null, booleans (never numbers), ints and
floats (`1 == 1.0`; NaN equal to nothing, ordered with nothing), strings, lists and maps (deep;
tuples and frozen maps as the runtime may hand them), missing paths (null).
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir, rules_compiled
from afp_dsl.evaluate import Env, evaluate
from afp_dsl.frozen import FrozenMap

SETTINGS = settings(deadline=None, max_examples=600, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.sampled_from([0, 1, -1, 2, 0.0, 1.0, 0.5, -0.0]),
                    st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                    st.sampled_from(["", "a", "A", "1", "b", "ab", "true", "null", "é"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2).map(FrozenMap)), max_leaves=5)
literals = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([1.0, 0.5, -0.0]),
                     st.sampled_from(["", "a", "1", "b"]))


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "object"
    return "list"


def spec_equal(a, b) -> bool:
    """JSON equality: same JSON type, numbers by value, containers deeply."""
    if _kind(a) != _kind(b):
        return False
    if _kind(a) == "list":
        return len(a) == len(b) and all(spec_equal(x, y) for x, y in zip(a, b))
    if _kind(a) == "object":
        return set(a) == set(b) and all(spec_equal(a[k], b[k]) for k in a)
    return a == b  # (NaN: never equal, to itself neither)


def spec_ordered(op, a, b) -> bool:
    """Two numbers or two strings; anything else (NaN too) is false."""
    if not (_kind(a) == _kind(b) == "number" or _kind(a) == _kind(b) == "string"):
        return False
    if _kind(a) == "number" and (math.isnan(a) or math.isnan(b)):
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def spec_compare(op, a, b) -> bool:
    if op == "==":
        return spec_equal(a, b)
    if op == "!=":
        return not spec_equal(a, b)
    if op in ("in", "not in"):
        return any(spec_equal(a, x) for x in b) == (op == "in")
    return spec_ordered(op, a, b)


OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
RESULT = ir.Path(root="result", segments=())


def _holds(expr, env) -> bool:
    got = evaluate(expr, env)
    assert got.error is None
    quick = rules_compiled.compiled(expr).quick(env)
    assert quick is None or quick is got.holds
    return got.holds


@SETTINGS
@given(op=st.sampled_from(OPS), value=values, right=st.lists(literals, min_size=1, max_size=3),
       flipped=st.booleans())
def test_every_operator_on_every_pairing_of_types(op, value, right, flipped) -> None:
    env = Env({"result": value})
    if op in ("in", "not in"):
        expr = ir.Compare(op=op, left=RESULT, right=ir.ListExpr(items=tuple(ir.Lit(value=v) for v in right)))
        want = spec_compare(op, value, right)
    elif flipped:  # `LITERAL OP result`
        expr = ir.Compare(op=op, left=ir.Lit(value=right[0]), right=RESULT)
        want = spec_compare(op, right[0], value)
    else:
        expr = ir.Compare(op=op, left=RESULT, right=ir.Lit(value=right[0]))
        want = spec_compare(op, value, right[0])
    assert _holds(expr, env) is want
    assert _holds(ir.Not(item=expr), env) is (not want)


@SETTINGS
@given(value=values, other=values)
def test_equality_between_two_read_values(value, other) -> None:
    env = Env({"result": value, "args": other})
    expr = ir.Compare(op="==", left=RESULT, right=ir.Path(root="args", segments=()))
    assert _holds(expr, env) is spec_equal(value, other)


@SETTINGS
@given(value=values, segments=st.lists(st.sampled_from(["a", "b", 0, 1]), max_size=3))
def test_a_path_reads_into_maps_and_lists_else_null(value, segments) -> None:
    want = value
    for seg in segments:
        if isinstance(seg, int):
            want = want[seg] if _kind(want) == "list" and seg < len(want) else None
        else:
            want = want.get(seg) if _kind(want) == "object" else None
    path = ir.Path(root="result", segments=tuple(segments))
    env = Env({"result": value})
    assert _holds(ir.Compare(op="==", left=path, right=ir.Lit(value=None)), env) is (want is None)
    assert _holds(path, env) is (want is True)  # a bare path holds only when exactly `true`


@SETTINGS
@given(value=values, pattern=st.sampled_from(["^a", "1", "^$", "(?i)A", "é"]))
def test_matches_is_a_search_on_strings_only(value, pattern) -> None:
    expr = ir.Compare(op="matches", left=RESULT, right=ir.Regex(pattern=pattern, flags=""))
    want = isinstance(value, str) and re.search(pattern, value) is not None
    assert _holds(expr, Env({"result": value})) is want
