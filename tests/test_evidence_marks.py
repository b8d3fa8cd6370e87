"""The recorded conditions (`why`'s ✓/✗ lines) read like the decision they explain.

Property: replaying the guard's and/or/not over the recorded marks gives what `evaluate`
decided (a condition under `not` is recorded negated, `not (x == 1)`), and each condition's
`actual` is the value the run gave: its left operand's, or its right's when the left is a
literal (`500 < result.amount`). The compiled policy path records the same conditions
(tests/test_fast_rules.py).
"""
from __future__ import annotations

from typing import Any, Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir, rules_compiled
from afp_dsl.evaluate import Condition, Env, actual_is_right, evaluate, shorten

SETTINGS = settings(deadline=None, max_examples=400, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

words = st.sampled_from(["a", "b", "Refund now", "é", "", "x" * 90])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from([0.5, 1.0]), words)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)),
    max_leaves=4)
paths = st.builds(ir.Path, root=st.sampled_from(["result", "message", "nothing"]),
                  segments=st.lists(st.sampled_from(["x", "y", 0]), max_size=2).map(tuple))
lits = st.builds(ir.Lit, value=scalars)
operands = st.one_of(paths, lits, st.builds(ir.Call, func=st.just("returned"),
                                            arg=st.builds(ir.Ref, name=st.sampled_from(["t", "u"]))))


def _compare(op: str, left: Any, right: Any, items: list) -> ir.Compare:
    if op in ("in", "not in"):
        right = ir.ListExpr(items=tuple(items))
    elif op == "matches":
        right = ir.Regex(pattern="^a|b$", flags="i")
    elif op == "mentions":
        right = ir.ListExpr(items=tuple(i for i in items if isinstance(i.value, str)) or (ir.Lit(value="a"),))
    return ir.Compare(op=op, left=left, right=right)


compares = st.builds(_compare, st.sampled_from(["==", "!=", "<", ">=", "in", "not in", "matches",
                                                "mentions"]),
                     operands, st.one_of(paths, lits), st.lists(lits, min_size=1, max_size=3))
guards = st.recursive(st.one_of(compares, paths, lits), lambda inner: st.one_of(
    st.builds(ir.And, items=st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(ir.Or, items=st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(ir.Not, item=inner)), max_leaves=6)
envs = st.builds(lambda result, message, returned: Env({"result": result, "message": message},
                                                        frozenset(returned)),
                 values, st.one_of(words, values), st.sets(st.sampled_from(["t"])))


def _value(e: Any, env: Env) -> Any:
    if isinstance(e, ir.Path):
        return evaluate(ir.Compare(op="==", left=e, right=ir.Lit(value=None)), env).conditions[0].actual
    if isinstance(e, ir.Call):
        return e.arg.name in env.returned
    return e.value


def _replay(e: Any, marks: Iterator[Condition], env: Env, neg: bool = False) -> bool:
    """The guard's truth from the recorded marks, read in negation normal form (an `and` under
    `not` is an `or` of negated conditions); checks each condition's `actual` on the way."""
    if isinstance(e, ir.Not):
        return _replay(e.item, marks, env, not neg)
    if isinstance(e, (ir.And, ir.Or)):
        results = [_replay(i, marks, env, neg) for i in e.items]
        return all(results) if isinstance(e, ir.And) != neg else any(results)
    if isinstance(e, ir.Lit):
        return (e.value is True) != neg
    c = next(marks)
    read = e if not isinstance(e, ir.Compare) else e.right if actual_is_right(e) else e.left
    assert c.actual == shorten(_value(read, env)) or repr(c.actual) == repr(shorten(_value(read, env)))
    assert c.text.startswith("not ") == neg
    return c.passed


@SETTINGS
@given(guard=guards, env=envs)
def test_the_marks_replay_to_the_decision(guard, env) -> None:
    ev = evaluate(guard, env)
    assert ev.error is None
    marks = iter(ev.conditions)
    assert _replay(guard, marks, env) == ev.holds
    assert next(marks, None) is None  # every condition read once
    assert rules_compiled.compiled(guard).evaluate(env) == ev or repr(
        rules_compiled.compiled(guard).evaluate(env)) == repr(ev)


# Before the fix, a refused edge `not (result.x == 1) and …` on x = 1 showed every line ✓:
# the comparison was recorded as passed, with nothing saying it sat under `not`.
def test_a_condition_under_not_is_recorded_negated() -> None:
    x_is_1 = ir.Compare(op="==", left=ir.Path(root="result", segments=("x",)), right=ir.Lit(value=1))
    ok = ir.Path(root="result", segments=("ok",))
    guard = ir.And(items=(ir.Not(item=x_is_1), ir.Not(item=ir.Not(item=ok))))
    ev = evaluate(guard, Env({"result": {"x": 1, "ok": True}}))
    assert not ev.holds
    assert [(c.text, c.actual, c.passed) for c in ev.conditions] == [
        ("not (result.x == 1)", 1, False), ("result.ok", True, True)]
    ev = evaluate(ir.Not(item=ok), Env({"result": {"ok": 3}}))
    assert ev.holds and [(c.text, c.passed, c.reason) for c in ev.conditions] == [
        ("not result.ok", True, "not a boolean: number")]


# Before the fix `500 < result.amount` recorded the literal 500 as its actual value: `why`
# showed `actual 500` whatever the amount was.
def test_the_actual_value_is_the_side_the_run_gives() -> None:
    amount = ir.Path(root="result", segments=("amount",))
    rule = ir.Compare(op="<", left=ir.Lit(value=500), right=amount)
    env = Env({"result": {"amount": 20}})
    assert [(c.actual, c.passed) for c in evaluate(rule, env).conditions] == [(20, False)]
    assert rules_compiled.compiled(rule).evaluate(env) == evaluate(rule, env)
    both = ir.Compare(op="==", left=amount, right=ir.Path(root="args", segments=("amount",)))
    assert evaluate(both, env).conditions[0].actual == 20  # (two paths: the left)
