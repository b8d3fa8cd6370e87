"""Runs never crash: whatever the model replies and whatever host tools return or raise, `run`
(and `resume`) returns a documented outcome with a clear message, and nothing recorded holds a
redacted secret.

One spec exercises the whole pipeline: guarded routes, a policy chain (input, before with `ask`,
after, output), a `check_in`, steps, an agent run as a tool, `redact` rules. Hypothesis feeds it
arbitrary scripted replies (any text, calls to declared, unknown and built-in tools with any JSON
arguments, malformed calls, duplicate ids, scripts that run out, any budget) and host tools that
return any Python value or raise any exception, sync or async. For every run: no exception escapes,
the outcome is one of semantics §1, an `error` says why, the trace and the stored events serialise
to JSON and agree, `why()` renders, every tool call is answered, and a pattern secret or a value
under a redacted key never reaches the trace, the store, the error, the check-in or `why`.
"""
from __future__ import annotations

import asyncio
import math

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from afp_dsl.envelopes import described
from afp_dsl.providers.base import Reply, ToolCall

from run_props_support import (
    BadGetattr, FACT_SECRET, Huge, PASSWORD, PATTERN_SECRET, TOKEN, Unprintable,
    UnprintableError, agent_for, assert_sound, cycle, examples, exceptions, host_tools,
    messages, nested, numbers, results, run_and_resume, scripts, texts)


# ---------------------------------------------------------------- 1. any model reply
@settings(max_examples=150, deadline=None, database=None)
@given(script=scripts, message=messages, max_iterations=st.integers(1, 4), wrap_up=st.booleans(),
       durable=st.booleans(), decisions=st.lists(st.booleans(), max_size=3), model=st.booleans())
@examples(*[dict(script=script, message="hi", max_iterations=2, wrap_up=True, durable=True,
                 decisions=[], model=False)
            for script in ([Reply(tool_calls=(ToolCall("c", "lookup", None),))],  # (crashed)
                           [Reply(tool_calls=(ToolCall("c", "lookup", [1, 2]),))],  # (crashed)
                           [[("nope", {"deep": nested(700)})], "done"],  # (RecursionError)
                           [[("lookup", [1, 2])]],  # (an unclear mock error)
                           [UnprintableError()])])  # (crashed: the provider's message raised)
def test_any_model_reply_ends_in_a_documented_outcome(script, message, max_iterations, wrap_up,
                                                      durable, decisions, model):
    agent = agent_for(script, host_tools(), max_iterations=max_iterations, wrap_up=wrap_up,
                      durable=durable, model=model)
    run_and_resume(agent, message, decisions)


# ---------------------------------------------------------------- 2. any host-tool value or raise
def host(outcomes: list, is_async: bool):
    queue = list(outcomes)

    def lookup(id=None, count=1, _context=None):
        kind, value = queue.pop(0) if queue else ("ok", "no more")
        if kind == "raise":
            raise value
        if kind == "context":  # what a tool may read of its run: a fact (with a secret), the clock
            return {"fact": _context.fact("creds"), "now": _context.now(), "run": _context.run_id}
        return value

    async def alookup(id=None, count=1, _context=None):
        return lookup(id, count, _context)
    return {"lookup": alookup if is_async else lookup, "one": lookup}


outcomes = st.lists(st.one_of(results.map(lambda v: ("ok", v)), exceptions.map(lambda e: ("raise", e)),
                              st.just(("context", None))), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None, database=None)
@given(outcomes=outcomes, batched=st.booleans(), is_async=st.booleans(), via_arun=st.booleans(),
       durable=st.booleans())
@example(outcomes=[("ok", cycle("dict"))], batched=True, is_async=True, via_arun=True, durable=True)
@examples(*[dict(outcomes=[o], batched=False, is_async=False, via_arun=False, durable=True)
            for o in [("ok", Huge(10**5000)), ("ok", Unprintable()), ("ok", {"a": [Unprintable()]}),
                      ("ok", cycle("list")), ("ok", nested(700, kind="dict")), ("ok", BadGetattr()),
                      ("ok", described(Unprintable(), description="d")),
                      ("raise", UnprintableError()), ("raise", ValueError(Unprintable()))]])
def test_any_tool_value_or_exception_is_a_result_the_model_reads(outcomes, batched, is_async,
                                                                  via_arun, durable):
    calls = [("lookup", {"id": "AB"}) for _ in outcomes]
    final = f"The key was {FACT_SECRET}, and {PATTERN_SECRET}."
    script = ([calls] if batched else [[c] for c in calls]) + [final, final]
    agent = agent_for(script, host(outcomes, is_async), max_iterations=len(outcomes) + 2,
                      durable=durable)
    r = asyncio.run(agent.arun("hi")) if via_arun else agent.run("hi")
    assert_sound(agent, r, secrets=(PATTERN_SECRET, FACT_SECRET, TOKEN))
    returned = [e.payload for e in r.trace if e.kind == "tool.returned"]
    assert len(returned) == len(outcomes)
    for (kind, _), ret in zip(outcomes, returned):
        event(f"tool {kind}: status {ret['status']}")
        assert ret["executed"] is True
        if kind == "raise":
            assert ret["status"] == "failure" and ret["result"]["error"]
    texts_read = [m.content for m in agent.session.provider.requests[-1].messages if m.role == "tool"]
    assert len(texts_read) == len(outcomes)  # the model reads every result, a failure never blank
    assert all(t or kind == "ok" for (kind, _), t in zip(outcomes, texts_read))


# ---------------------------------------------------------------- 3. the pipeline: routes, policies, check-ins
pays = st.tuples(st.just("pay"), st.fixed_dictionaries(
    {"amount": st.one_of(st.sampled_from([50, 200, 2000, 6000, float("nan"), float("inf")]), numbers)},
    optional={"password": st.just(PASSWORD)}))
pipeline_calls = st.one_of(
    st.tuples(st.just("lookup"), st.fixed_dictionaries({"id": st.sampled_from(["AB", "proc", "x"])})),
    pays, pays,
    st.tuples(st.sampled_from(["note", "one", "two"]), st.just({})),
    st.tuples(st.just("helper"), st.fixed_dictionaries({"q": texts})),
    st.tuples(st.just("read_skill"), st.fixed_dictionaries({"id": st.sampled_from(["a", "b", "proc", "zz"])})),
    st.tuples(st.just("skip_step"), st.fixed_dictionaries({"reason": st.sampled_from(["n/a", "", " "])})),
)
pipeline_replies = st.one_of(st.lists(pipeline_calls, min_size=1, max_size=3), texts)
pipeline_scripts = st.builds(lambda first, pay, calls, tail: [first + [pay]] + calls + tail,
                             st.lists(pipeline_calls, max_size=2), pays,  # (a pay in the first batch)
                             st.lists(st.lists(pipeline_calls, min_size=1, max_size=3), max_size=4),
                             st.lists(pipeline_replies, max_size=4))


policy_answers = st.dictionaries(  # (mostly silent: a host link that always denies ends every run)
    st.sampled_from(["input", "before", "after", "output"]),
    st.one_of(st.sampled_from(["allow", "deny", "ask", "DENY", ("deny",), ["deny", "r"]]),
              st.tuples(st.sampled_from(["deny", "ask", "allow"]), st.one_of(st.none(), texts)),
              st.sampled_from([b"\xff", frozenset({1}), Huge(10**5000), math.nan, range(3)]),
              st.builds(Unprintable), exceptions), max_size=2)


@settings(max_examples=120, deadline=None, database=None)
@given(script=pipeline_scripts, lookups=st.lists(results, max_size=4),
       decisions=st.lists(st.booleans(), max_size=4), durable=st.booleans(),
       follow_up=st.booleans(), answers=policy_answers)
@example(script=[[("helper", {"q": "\ud800"})], [("pay", {"amount": 2000})]], lookups=[],
         decisions=[True], durable=False, follow_up=False, answers={})  # (broke a fingerprint)
@example(script=[[("pay", {"amount": 200, "password": "\ud800"})], "ok"], lookups=[],
         decisions=[True], durable=True, follow_up=True, answers={})
@example(script=[[("pay", {"amount": 2000, "password": PASSWORD})], "ok"], lookups=[],
         decisions=[False], durable=True, follow_up=False, answers={"before": UnprintableError()})
def test_routes_policies_and_check_ins_on_any_result(script, lookups, decisions, durable, follow_up,
                                                     answers):
    tools = host([("ok", v) for v in lookups], is_async=False)
    tools["pay"] = lambda amount, password="": {"paid": amount, "token": TOKEN}
    agent = agent_for(script, tools, max_iterations=5, durable=durable, answers=answers)
    secrets = (PATTERN_SECRET, FACT_SECRET, PASSWORD, TOKEN)
    conv = agent.conversation() if follow_up else None
    r = run_and_resume(agent, "pay " + PATTERN_SECRET, decisions, secrets, conv and conv.run)
    if conv is not None and not r.paused:  # a follow-up run relearns the history's secrets
        run_and_resume(agent, f"again, with {FACT_SECRET}?", decisions, secrets, conv.run)
