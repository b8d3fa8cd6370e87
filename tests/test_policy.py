"""The policy chain laws (semantics §8), one test per law, plus host-bound links."""
from __future__ import annotations

import pytest

from afp_dsl import ir
from afp_dsl.evaluate import Env
from afp_dsl.policy import policy_context, run_chain
from afp_dsl.source import Span


def amount_over(n) -> ir.Compare:
    return ir.Compare(op=">", left=ir.Path(root="args", segments=("amount",)), right=ir.Lit(value=n))


def rule(action, when, because=None, at=0) -> ir.Rule:
    return ir.Rule(action=action, when=when, because=because, span=Span("p.afp", at, at + 4))


def block(moment, *rules, tool=None, any_tool=False) -> ir.PolicyBlock:
    ref = ir.Ref(name=tool) if tool else None
    return ir.PolicyBlock(moment=moment, tool=ref, any_tool=any_tool, rules=tuple(rules))


def policy(name, *blocks, impl=None) -> ir.Policy:
    return ir.Policy(name=name, blocks=tuple(blocks),
                     impl=ir.PythonImpl(target=impl, span=Span("p.afp", 90, 99)) if impl else None)


def host_of(table):
    return lambda impl: table[impl.target]


TRUE = ir.Lit(value=True)
ENV = Env(roots={"args": {"amount": 200}, "message": "refund please", "iteration": 2})


def run(policies, moment="before", env=ENV, *, tool="refund", can_pause=True, host=None, **kw):
    return run_chain(policies, moment, env, tool=tool, call_id="c1", iteration=2,
                     can_pause=can_pause, host=host, **kw)


def guard(name, action, n, because="why"):
    return policy(name, block("before", rule(action, amount_over(n), because), tool="refund"))


# ---------------------------------------------------------------- laws
def test_order_is_declaration_order():
    calls = []
    table = {"a": lambda ctx: calls.append("a") or "allow", "b": lambda ctx: calls.append("b") or "allow"}
    out = run([policy("one", impl="a"), policy("two", impl="b")], host=host_of(table))
    assert calls == ["a", "b"]
    assert [d.policy for d in out.decisions] == ["one", "two"]


def test_first_non_allow_wins():
    out = run([guard("low", "ask", 100, "second pair of eyes"), guard("high", "deny", 50, "too much")])
    assert out.outcome == "ask"
    assert out.deciding.policy == "low" and out.deciding.reason == "second pair of eyes"
    assert out.deciding_index == 0


def test_later_links_do_not_run():
    calls = []
    table = {"later": lambda ctx: calls.append(ctx) or "deny"}
    out = run([guard("first", "deny", 100), policy("later", impl="later")], host=host_of(table))
    assert out.outcome == "deny" and calls == []
    assert len(out.decisions) == 1


def test_a_link_that_raises_is_a_denial_with_the_message():
    def boom(ctx):
        raise RuntimeError("ledger offline")
    out = run([policy("audit", impl="x")], host=host_of({"x": boom}))
    assert out.outcome == "deny" and out.deciding.reason == "ledger offline"
    assert out.deciding.rule_span == Span("p.afp", 90, 99)


def test_a_binding_that_cannot_be_resolved_is_a_denial():
    def resolver(impl):
        raise ImportError(f"no module named {impl.target!r}")
    out = run([policy("audit", impl="acme:gone")], host=resolver)
    assert out.outcome == "deny" and "acme:gone" in out.deciding.reason
    out = run([policy("audit", impl="acme:gone")], host=None)
    assert out.outcome == "deny" and "no host" in out.deciding.reason


@pytest.mark.parametrize("moment", ["input", "output"])
def test_ask_at_the_message_boundary_is_a_denial(moment):
    p = policy("p", block(moment, rule("ask", TRUE, "are you sure")))
    out = run([p], moment, can_pause=False, tool=None)
    assert out.outcome == "deny"
    assert "no pause here to carry that ask: are you sure" in out.deciding.reason


def test_ask_during_a_resumed_dispatch_is_a_denial_and_resume_skips_the_asker():
    chain = [guard("four_eyes", "ask", 100), guard("second", "ask", 150, "again?")]
    first = run(chain)
    assert first.outcome == "ask" and first.deciding_index == 0
    resumed = run(chain, can_pause=False, start_after=first.deciding_index + 1)
    assert resumed.outcome == "deny" and resumed.deciding.policy == "second"
    assert "again?" in resumed.deciding.reason


def test_resume_continues_after_the_asker_to_allow():
    chain = [guard("four_eyes", "ask", 100), guard("ceiling", "deny", 500)]
    out = run(chain, can_pause=False, start_after=1)
    assert out.outcome == "allow" and [(d.policy, d.outcome) for d in out.decisions] == [
        ("ceiling", "allow")]  # its rule does not hold: the link allows, a decision too


def test_after_walks_the_chain_in_reverse():
    calls = []
    table = {k: (lambda k: lambda ctx: calls.append(k) or "allow")(k) for k in "abc"}
    chain = [policy(k, impl=k) for k in "abc"]
    run(chain, "after", host=host_of(table))
    assert calls == ["c", "b", "a"]
    calls.clear()
    run(chain, "before", host=host_of(table))
    assert calls == ["a", "b", "c"]
    calls.clear()
    run(chain, "after", host=host_of(table), reverse=False)
    assert calls == ["a", "b", "c"]


def test_expression_error_is_a_denial():
    bad = ir.Compare(op="matches", left=ir.Path(root="message"), right=ir.Regex(pattern="(oops"))
    p = policy("p", block("input", rule("allow", bad)))
    out = run([p], "input", can_pause=False, tool=None)
    assert out.outcome == "deny" and "could not be evaluated" in out.deciding.reason


def test_allow_rule_decides_and_is_recorded_then_the_chain_goes_on():
    p1 = policy("p1", block("before", rule("allow", amount_over(10)), rule("deny", TRUE, "x"),
                            tool="refund"))
    out = run([p1, guard("p2", "deny", 100, "big")])
    assert [(d.policy, d.outcome) for d in out.decisions] == [("p1", "allow"), ("p2", "deny")]
    assert out.decisions[0].conditions[0].text == "args.amount > 10"
    assert out.outcome == "deny"


def test_a_link_whose_rules_do_not_hold_records_its_allow_and_one_without_rules_nothing():
    chain = [guard("other", "deny", 1000),
             policy("elsewhere", block("before", rule("deny", TRUE, "x"), tool="lookup")),
             policy("output_only", block("output", rule("deny", TRUE, "x")))]
    out = run(chain)
    assert out.outcome == "allow" and out.deciding is None
    assert [(d.policy, d.outcome, d.rule_span, d.reason) for d in out.decisions] == [
        ("other", "allow", None, None)]


# ---------------------------------------------------------------- rule details
def test_first_rule_that_holds_decides_within_a_link():
    p = policy("refund_guard", block("before", rule("deny", amount_over(500), "manager", at=10),
                                     rule("ask", amount_over(100), "eyes", at=20), tool="refund"))
    out = run([p])
    assert out.outcome == "ask" and out.deciding.reason == "eyes"
    assert out.deciding.rule_span == Span("p.afp", 20, 24)
    row = out.deciding
    assert (row.moment, row.tool, row.call_id, row.iteration) == ("before", "refund", "c1", 2)


def test_star_block_matches_any_tool_and_blocks_are_walked_in_order():
    p = policy("p", block("before", rule("deny", TRUE, "any"), any_tool=True),
               block("before", rule("allow", TRUE), tool="refund"))
    assert run([p], tool="lookup").deciding.reason == "any"
    assert run([p], tool="refund").outcome == "deny"


# ---------------------------------------------------------------- host answers
@pytest.mark.parametrize("answer, outcome, reason", [
    ("allow", "allow", None), ("deny", "deny", None), (("deny", "nope"), "deny", "nope"),
    (("ask", "sure?"), "ask", "sure?"),
])
def test_host_answers(answer, outcome, reason):
    out = run([policy("h", impl="h")], host=host_of({"h": lambda ctx: answer}))
    assert (out.outcome, out.decisions[0].reason) == (outcome, reason)


def test_host_answering_none_records_nothing():
    out = run([policy("h", impl="h")], host=host_of({"h": lambda ctx: None}))
    assert out.outcome == "allow" and out.decisions == ()


@pytest.mark.parametrize("answer", ["maybe", 1, ("allow", 3), {"outcome": "allow"}, ("a", "b", "c")])
def test_host_answering_something_else_is_a_denial(answer):
    out = run([policy("h", impl="h")], host=host_of({"h": lambda ctx: answer}))
    assert out.outcome == "deny" and "answered something it may not" in out.deciding.reason


def test_host_coroutine_is_a_denial():
    async def later(ctx):
        return "allow"
    out = run([policy("h", impl="h")], host=host_of({"h": later}))
    assert out.outcome == "deny"
    # the reason names the fix, and holds no memory address: a replay records the same trace
    assert "an `async def` function" in out.deciding.reason and "0x" not in out.deciding.reason


def test_host_answering_an_object_is_a_denial_with_a_reason_that_replays_the_same():
    class Verdict:
        pass
    first, second = (run([policy("h", impl="h")], host=host_of({"h": lambda ctx: Verdict()}))
                     for _ in range(2))
    assert first.outcome == "deny" and "Verdict object" in first.deciding.reason
    assert first.deciding.reason == second.deciding.reason and "0x" not in first.deciding.reason


def test_host_ask_without_a_pause_is_a_denial():
    out = run([policy("h", impl="h")], "output", tool=None, can_pause=False,
              host=host_of({"h": lambda ctx: ("ask", "ok?")}))
    assert out.outcome == "deny" and out.deciding.reason.endswith("ok?")


def test_host_context_is_a_fresh_plain_copy():
    seen = {}

    def h(ctx):
        seen.update(ctx)
        ctx["args"]["amount"] = 0
        return None
    env = Env(roots={"args": {"amount": 5, "tags": ("a",)}, "message": "m", "secret_root": 1})
    run([policy("h", impl="h")], env=env, host=host_of({"h": h}))
    assert env.roots["args"]["amount"] == 5
    assert seen == {"args": {"amount": 0, "tags": ["a"]}, "message": "m", "moment": "before",
                    "tool": "refund", "call_id": "c1", "iteration": 2}


def test_policy_context_keeps_env_tool_when_none_given():
    ctx = policy_context("after", Env(roots={"tool": "t", "status": "success"}), tool=None,
                         call_id=None, iteration=1)
    assert ctx["tool"] == "t" and ctx["status"] == "success"


def test_a_chain_given_as_a_list_is_read_afresh_at_every_walk():
    """The chain is the policies as they are when it is walked: a link appended to the same
    list between two walks is walked by the second (only immutable tuples have steps kept)."""
    chain = [guard("low", "allow", 100)]
    assert run(chain).outcome == "allow"
    chain.append(guard("high", "deny", 50, "too much"))
    out = run(chain)
    assert (out.outcome, out.deciding.policy) == ("deny", "high")
