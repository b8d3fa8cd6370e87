"""Compiled policy conditions answer exactly what `evaluate` answers; the chain walk is unchanged.

* `compiled(expr).evaluate(env) == evaluate(expr, env)` (holds, every condition, the error), over
  every expression form: comparisons, and/or/not, in, matches, mentions, calls, literals, paths
  into args and result (present, missing, null, wrong type), and errors (bad regexes, unknown
  functions and operators, values the evidence cannot render);
* `quick` (and `check`) answers True/False only when that evaluation holds / does not hold
  without an error;
* `run_chain` gives the same result as the plain walk it replaced (reimplemented below with the
  reference evaluator), and `evidence=False` differs only in the rows' conditions;
* whole runs with policies record byte-identical traces with the compiled path switched off.
"""
from __future__ import annotations

from types import SimpleNamespace

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import ir
from afp_dsl import toolcall_policy as tp
from afp_dsl import rules_compiled as rc
from afp_dsl.evaluate import Env, evaluate, parse_result
from afp_dsl.frozen import FrozenMap
from afp_dsl.policy import ALLOWED, ChainResult, PolicyDecision, run_chain
from afp_dsl.source import Span
from strategies import expressions

SETTINGS = settings(derandomize=True, deadline=None, max_examples=400, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


class Odd:
    """A value no JSON encoder knows and whose text fails: evidence cannot render it."""

    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


class Tagged(str):
    """A str subclass: must behave like the str it is."""


words = st.sampled_from(["w1", "w12", "forbidden", "drop  TABLE x", "secret-leak here", "", "a",
                         "é", "x" * 90, "Refund", "refund", "sk-abcdefghijklmnop"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 600), st.floats(allow_nan=True),
                    words, words.map(Tagged))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["word", "amount", "tags", "status", "x"]), inner, max_size=3),
    st.dictionaries(st.sampled_from(["word", "x"]), inner, max_size=2).map(FrozenMap)), max_leaves=6)
odd_values = st.one_of(values, st.just(Odd()), st.just({(1, 2): "tuple key"}),
                       st.just([Odd()]), st.just({"word": Odd()}), st.just({"word": [Odd()]}))

ROOTS = ["args", "result", "message", "status", "tool", "iteration", "skill", "text", "nothing"]
FIELDS = ["word", "amount", "tags", "status", "x", 0, 1]
paths = st.builds(ir.Path, root=st.sampled_from(ROOTS),
                  segments=st.lists(st.sampled_from(FIELDS), max_size=2).map(tuple))
lits = st.builds(ir.Lit, value=st.one_of(st.none(), st.booleans(), st.integers(-3, 600),
                                         st.floats(allow_nan=False), words))
lit_lists = st.builds(ir.ListExpr, items=st.lists(lits, max_size=3).map(tuple))
operands = st.one_of(paths, lits, lit_lists,
                     st.builds(ir.Call, func=st.sampled_from(["returned", "active", "nope"]),
                               arg=st.builds(ir.Ref, name=st.sampled_from(["echo", "triage"]))))
regexes = st.one_of(st.builds(ir.Regex, pattern=st.sampled_from(
    ["^w[0-9]+$", r"drop\s+table", "secret", "(", "[", "é", "^$", r"\bw1\b"]),
    flags=st.sampled_from(["", "i", "im", "s", "x"])))
OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "between"]


def _compare(op, left, right, rx, kw):
    if op == "matches":
        return ir.Compare(op=op, left=left, right=rx)
    if op == "mentions":
        return ir.Compare(op=op, left=left, right=kw)
    return ir.Compare(op=op, left=left, right=right)


compares = st.builds(_compare, st.sampled_from(OPS + ["matches", "mentions"] * 3), operands,
                     st.one_of(operands, paths), regexes,
                     st.one_of(lits, lit_lists, paths, st.just(ir.Lit(value=["", "x"])),
                               st.builds(ir.Lit, value=st.lists(words, max_size=2).map(tuple))))
exprs = st.recursive(st.one_of(compares, operands), lambda inner: st.one_of(
    st.builds(ir.And, items=st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(ir.Or, items=st.lists(inner, min_size=2, max_size=3).map(tuple)),
    st.builds(ir.Not, item=inner),
    st.builds(ir.Compare, op=st.just("=="), left=inner, right=inner),  # conditions as values
    st.builds(ir.ListExpr, items=st.lists(inner, max_size=2).map(tuple))), max_leaves=6)
envs = st.builds(lambda roots, ret, act: Env(roots, ret, act),
                 st.dictionaries(st.sampled_from(ROOTS[:-1]), odd_values, max_size=6),
                 st.frozensets(st.sampled_from(["echo", "lookup"])),
                 st.frozensets(st.sampled_from(["triage"])))


def _agree(expr, env) -> None:
    want = evaluate(expr, env)
    c = rc.compiled(expr)
    got = c.evaluate(env)
    assert got == want or repr(got) == repr(want)  # (repr: NaN in the evidence is not == itself)
    quick = c.quick(env)
    if quick is not None:
        assert want.error is None and quick == want.holds and type(quick) is type(want.holds)
    _check_settled(c, env)
    try:
        checked = c.check(env)
    except Exception:
        return
    assert checked is quick


def _check_settled(c: rc.Compiled, env: Env) -> None:
    """A settled policy walk (`toolcall_policy.chain`, which reads a check of the simple form
    inline) of one allowing rule `c` answers, at either moment, what `quick` answers on the env
    the full walk would see (its roots, from `env`'s)."""
    for moment, roots in (("before", tp.ROOTS[:5]), ("after", tp.ROOTS)):
        values = [env.roots.get(r) for r in roots]
        out = None
        if moment == "after":
            out = SimpleNamespace(result=values[5], status=values[6])
            values[5] = parse_result(values[5])
        want = c.quick(Env(dict(zip(roots, values)), env.returned, env.active))
        assert _chain_answer(c, moment, values, out, env) is want


class _AnyTool(dict):
    def get(self, key, default=None):
        return self["prog"]


def _chain_answer(c: rc.Compiled, moment: str, values: list, out: Any, env: Env) -> bool | None:
    """True (the rule's row), False (the quiet row) or None (walked in full) from `chain`."""
    found = ((0, SimpleNamespace(name="p", span=None), SimpleNamespace(action="allow", span=None,
                                                            because="held"), c),)
    plan = SimpleNamespace(policies=(None,), policy_programs={
        moment: _AnyTool(prog=(found, tp.settler(tp._links(found, moment, "t"),
                                                   moment == "after")))})
    rows: list = []
    ctx = SimpleNamespace(plan=plan, active_order=env.active, rec=SimpleNamespace(
        emit_rows=lambda heads, *rest: rows.extend(heads)), state=SimpleNamespace(
        message=values[2], iteration=values[3], cursor=values[4], returned=env.returned))
    call = SimpleNamespace(name=values[0], id="call-1")
    full, tp.walk = tp.walk, lambda *a: "walked in full"
    try:
        answer = tp.chain(ctx, moment, call, values[1], "cause", out=out)
    finally:
        tp.walk = full
    if answer == "walked in full":
        return None
    assert answer is ALLOWED and len(rows) == 1
    return rows[0][0]["reason"] == "held"


@SETTINGS
@given(exprs, envs)
def test_compiled_conditions_agree_with_the_reference(expr, env) -> None:
    _agree(expr, env)


@SETTINGS
@given(expressions(), envs)
def test_compiled_conditions_agree_on_the_printer_s_expressions(expr, env) -> None:
    _agree(expr, env)


ARGS = ir.Path(root="args", segments=("word",))
RESULT = ir.Path(root="result")


@pytest.mark.parametrize("expr", [
    ir.Compare(op="==", left=ARGS, right=ir.Lit(value="forbidden")),
    ir.Compare(op="!=", left=ARGS, right=ir.Lit(value="forbidden")),
    ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="^w[0-9]+$")),
    ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern=r"drop\s+table", flags="i")),
    ir.Compare(op="mentions", left=RESULT, right=ir.Lit(value="secret-leak")),
    ir.Compare(op="mentions", left=RESULT, right=ir.ListExpr(items=(ir.Lit(value="a"), ir.Lit(value="leak")))),
    ir.Compare(op="in", left=ARGS, right=ir.ListExpr(items=(ir.Lit(value="w1"), ir.Lit(value=1)))),
    ir.Compare(op=">", left=ir.Path(root="args", segments=("amount",)), right=ir.Lit(value=10)),
    ir.Compare(op="matches", left=ir.Path(root="message", segments=("word",)),
               right=ir.Regex(pattern="^w")),  # a field of a root that may be a text
    ir.Compare(op="==", left=ir.Path(root="message"), right=ir.Lit(value="w1")),
])
@pytest.mark.parametrize("roots", [
    {"args": {"word": "w1"}, "result": "a secret-leak"}, {"args": {"word": "forbidden"}, "result": "ok"},
    {"args": {"word": None}, "result": None}, {"args": {}, "result": {"word": "secret-leak"}},
    {"args": {"word": Tagged("w1"), "amount": 11}, "result": Tagged("leak")},
    {"args": {"word": 5, "amount": float("nan")}}, {"args": ["w1"]}, {},
    {"args": {"word": {"deep": [1]}}, "result": [Odd()]},  # evidence of a value with no text
    {"args": {"word": [Odd()], "amount": {"x": Odd()}}},
    {"args": {"word": "Drop   TABLE users"}, "result": "x" * 100},
    {"message": "w1", "result": FrozenMap({"word": "w1"})}, {"message": {"word": "w1"}},
])
def test_the_common_rule_shapes_agree(expr, roots) -> None:
    _agree(expr, Env(roots))


@pytest.mark.parametrize("expr", [
    ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="(")),  # bad regex: an error
    ir.Compare(op="matches", left=ARGS, right=ir.Lit(value="x")),  # no regex on the right
    ir.Compare(op="between", left=ARGS, right=ir.Lit(value=1)),  # unknown operator
    ir.Call(func="nope", arg=ir.Ref(name="x")),  # unknown function
    ir.And(items=(ir.Compare(op="==", left=ARGS, right=ir.Lit(value="zz")),
                  ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="[")))),
    ir.Compare(op="mentions", left=ARGS, right=ir.Lit(value="")),
    ir.Compare(op="==", left=RESULT, right=ir.Lit(value=1)),
])
def test_errors_are_the_reference_s_errors(expr) -> None:
    for roots in ({"args": {"word": "w1"}, "result": {(1, 2): 3}}, {"args": {"word": "w1"}, "result": Odd()}):
        env = Env(roots)
        _agree(expr, env)
        # a short-circuit would hide the error of a later operand: there is none
        assert rc.compiled(expr).quick(env) in (None, False, True)


def test_an_error_is_never_reported_as_does_not_hold() -> None:
    expr = ir.And(items=(ir.Compare(op="==", left=ARGS, right=ir.Lit(value="zz")),
                         ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="["))))
    env = Env({"args": {"word": "w1"}})
    assert evaluate(expr, env).error is not None
    assert rc.compiled(expr).quick(env) is None
    odd = ir.Compare(op="mentions", left=RESULT, right=ir.Lit(value="x"))
    env = Env({"result": [Odd()]})  # the reference fails rendering the evidence: a denial
    assert evaluate(odd, env).error is not None
    assert rc.compiled(odd).quick(env) is None


def test_the_common_shapes_are_compiled_and_checked_without_the_reference(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(rc, "evaluate", lambda *a: calls.append(a) or evaluate(*a))
    env = Env({"args": {"word": "w3"}, "result": "w3"})
    for expr in (ir.Compare(op="==", left=ARGS, right=ir.Lit(value="forbidden")),
                 ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="^w[0-9]+$")),
                 ir.Compare(op="mentions", left=RESULT, right=ir.Lit(value="secret-leak"))):
        c = rc.compiled(expr)
        assert c.run is not None and c.check(env) in (True, False)
        c.evaluate(env)
    assert calls == []


# ---------------------------------------------------------------- the chain
def _plain_chain(policies, moment, env, *, tool, call_id, iteration, can_pause, host,
                 start_after=0, reverse=None) -> ChainResult:
    """The walk as it was before the compiled path: every rule through `evaluate`."""
    from afp_dsl import policy as pol
    if reverse is None:
        reverse = moment == "after"
    chain = list(reversed(policies)) if reverse else list(policies)
    rows = []

    def decision(p, outcome, reason, span, conds=()):
        return PolicyDecision(outcome, p.name, span, reason, moment, tool, call_id, iteration, conds)

    for index in range(max(0, start_after), len(chain)):
        p, row, had_rule = chain[index], None, False
        for block in p.blocks:
            if not pol._block_applies(block, moment, tool):
                continue
            for rule in block.rules:
                had_rule = True
                out = evaluate(rule.when, env)
                if out.error is not None:
                    row = decision(p, "deny", f"policy `{p.name}`: the condition could not be "
                                              f"evaluated: {out.error}", rule.span, out.conditions)
                elif out.holds:
                    row = decision(p, rule.action, rule.because, rule.span, out.conditions)
                if row is not None:
                    break
            if row is not None:
                break
        if row is not None and row.outcome == "ask" and not can_pause:
            row = row._replace(outcome="deny", reason=(
                f"policy `{p.name}` asked a person to decide, and there is no pause here to "
                f"carry that ask: {row.reason or 'no question given'}"))
        if row is None and had_rule:  # its rules for the moment ran, none held: it allows
            row = decision(p, "allow", None, None)
        if row is None:
            continue
        rows.append(row)
        if row.outcome != "allow":
            return ChainResult(row.outcome, tuple(rows), row, index)
    return ChainResult("allow", tuple(rows), None)


rules = st.builds(lambda a, w, b, at: ir.Rule(action=a, when=w, because=b, span=Span("p.afp", at, at + 3)),
                  st.sampled_from(["allow", "deny", "ask"]),
                  st.one_of(st.just(ir.Lit(value=True)), st.just(ir.Lit(value=False)), compares, exprs,
                            st.just(ir.Compare(op="matches", left=ARGS, right=ir.Regex(pattern="w")))),
                  st.one_of(st.none(), st.just("why")), st.integers(0, 50))
blocks = st.builds(lambda m, tool, anyt, rs: ir.PolicyBlock(
    moment=m, tool=None if anyt or m in ("input", "output") else ir.Ref(name=tool),
    any_tool=anyt and m in ("before", "after"), rules=tuple(rs)),
    st.sampled_from(["input", "before", "after", "output"]), st.sampled_from(["echo", "refund"]),
    st.booleans(), st.lists(rules, max_size=3))
policies = st.lists(st.builds(lambda n, bs: ir.Policy(name=n, blocks=tuple(bs), span=Span("p.afp", 0, 1)),
                              st.sampled_from(["a", "b", "c"]), st.lists(blocks, max_size=2)),
                    max_size=4)


@SETTINGS
@given(policies, st.sampled_from(["input", "before", "after", "output"]),
       st.sampled_from(["echo", "refund", None]), st.one_of(envs, st.just(Env({"args": {"word": "w1"}}))),
       st.booleans(), st.integers(0, 3),
       st.booleans())
def test_the_chain_walk_is_the_plain_walk(pols, moment, tool, env, can_pause, start_after, as_tuple) -> None:
    pols = tuple(pols) if as_tuple else pols
    kw = dict(tool=tool, call_id="c1", iteration=2, can_pause=can_pause, host=None,
              start_after=start_after)
    want = _plain_chain(pols, moment, env, **kw)
    got = run_chain(pols, moment, env, **kw)
    assert got == want or repr(got) == repr(want)
    lean = run_chain(pols, moment, env, evidence=False, **kw)
    strip = lambda d: None if d is None else d._replace(conditions=())  # noqa: E731
    assert (lean.outcome, lean.deciding_index) == (want.outcome, want.deciding_index)
    assert repr(tuple(map(strip, lean.decisions))) == repr(tuple(map(strip, want.decisions)))
    assert repr(strip(lean.deciding)) == repr(strip(want.deciding))


# ---------------------------------------------------------------- whole runs
GUARDED = """
agent bench {
  max_iterations = 9
  tools = [echo, refund]
  redact = [secrets]
  policies = [screen_args, screen_any, screen_results, refunds]
}
tool echo {
  description = "Echo a word."
  input { word: string }
}
tool refund {
  description = "Refund."
  input { amount: number }
}
redact secrets {
  keys = ["password", "api_key", "token"]
  patterns = [/sk-[A-Za-z0-9]{12,}/, /\\b\\d{3}-\\d{2}-\\d{4}\\b/]
}
policy screen_args {
  before echo {
    deny when args.word == "forbidden" because "That word is not allowed."
    allow when args.word matches /^w[0-9]+$/
  }
}
policy screen_any {
  before * {
    deny when args.word matches /drop\\s+table/i because "No SQL in arguments."
  }
}
policy screen_results {
  after echo {
    deny when result mentions "secret-leak" because "The result leaks a secret."
  }
}
policy refunds {
  before refund {
    deny when args.amount > 100 and not (args.amount in [150, 200]) because "Too much."
    ask when args.amount >= 50 because "Check this one."
  }
  output {
    deny when text mentions ["forbidden", "sk-zz"] because "Not that."
  }
}
"""
SCRIPT = [[("echo", {"word": "w1"})], [("echo", {"word": "forbidden"})], [("echo", {"word": "drop table"})],
          [("echo", {"word": "secret-leak"})], [("echo", {"word": 7})], [("refund", {"amount": 500})],
          [("refund", {"amount": 150}), ("echo", {"word": "zz"})], "done"]


def _trace(monkeypatch, off: bool) -> str:
    import afp_dsl as afp
    from afp_dsl.effects import Effects, counter_ids
    from afp_dsl.providers import mock
    if off:  # every condition through the reference evaluator
        monkeypatch.setattr(rc, "_CACHE", {})
        monkeypatch.setattr(rc, "_holds", lambda expr: (_ for _ in ()).throw(rc._Unsure()))
        from afp_dsl import policy as pol
        monkeypatch.setattr(pol, "_STEPS", {})
    program = afp.load(GUARDED)
    agent = program.agent(provider=mock(SCRIPT), tools={"echo": lambda word: word, "refund": lambda amount: "ok"},
                          effects=Effects(run_ids=counter_ids("t")))
    result = agent.run("go")
    monkeypatch.undo()
    return result.trace.to_json()


def test_runs_with_policies_record_the_same_trace_without_the_compiled_path(monkeypatch) -> None:
    fast = _trace(monkeypatch, off=False)
    plain = _trace(monkeypatch, off=True)
    assert '"policy.decided"' in fast and '"deny"' in fast
    assert fast == plain
