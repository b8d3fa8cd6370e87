"""The run loop, trace, mock provider, replay determinism and `why` (§1, §11, §12)."""
from __future__ import annotations

import asyncio

import pytest
from interp_support import call, kinds, load, make, payloads

from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import ProviderError, mock
from afp_dsl.providers.base import Message, Request, ToolSpec
from afp_dsl.trace import Trace

SPEC = """
agent g {
  system = "S"
  tools = [lookup]
  graph = m
  context = [f]
}
fact f { data = { plan: "Pro" } }
tool lookup {
  description = "look"
  input { id: string(min_length: 2) }
  impl = returns({ status: "found" })
}
skill a { description = "A" tools = [lookup] }
skill b { description = "B" body = "B body" }
graph m {
  entry a
  route a -> b on lookup when result.status == "found"
}
"""
SCRIPT = [call("lookup", id="AB"), "The order was found."]


def test_a_run_answers_with_iterations_and_a_complete_event_sequence():
    agent, _ = make(SPEC, SCRIPT)
    r = agent.run("where is AB?")
    assert (r.outcome, r.answer) == ("answered", "The order was found.")
    assert kinds(r) == [
        "run.started", "cursor.moved", "context.composed", "llm.called", "llm.replied",
        "tool.called", "tool.returned", "route.evaluated", "cursor.moved", "context.composed",
        "llm.called", "llm.replied", "run.finished"]
    assert [e.iteration for e in r.trace][-1] == 2
    fin = payloads(r, "run.finished")[0]
    assert fin["llm_calls"] == 2 and fin["tool_calls"] == 1 and fin["executions"] == {"lookup": 1}


def test_event_ids_seq_and_causes_point_backwards():
    agent, _ = make(SPEC, SCRIPT)
    r = agent.run("x")
    ids = {e.id for e in r.trace}
    for i, e in enumerate(r.trace, 1):
        assert e.seq == i and e.id == f"{r.run_id}:{i}" and e.time == i
        for c in e.caused_by:
            assert c in ids and int(c.split(":")[1]) < e.seq


def test_replay_is_byte_identical():
    def once():
        agent, _ = make(SPEC, SCRIPT)
        return agent.run("where is AB?").trace.to_json()
    assert once() == once()


def test_trace_json_round_trips():
    agent, _ = make(SPEC, SCRIPT)
    t = agent.run("x").trace
    assert Trace.from_json(t.to_json()).to_json() == t.to_json()


@pytest.mark.parametrize("text", ["[]", "{}", '{"run_id": "r", "events": 5}',
                                  '{"run_id": "r", "events": [{}]}', '{"run_id": "r", "events": [1]}',
                                  '{"run_id": "r", "events": [{"seq": 1, "id": "r:1", "kind": "k", '
                                  '"iteration": 0, "time": 1, "source": 5}]}', "{", ""])
def test_a_document_that_is_no_trace_is_a_value_error_saying_what_was_expected(text):
    with pytest.raises(ValueError) as e:
        Trace.from_json(text)
    assert "Trace.to_json" in str(e.value) or "Expecting" in str(e.value)


def test_conversation_shares_history():
    agent, prov = make(SPEC, ["first answer", "second answer"])
    conv = agent.conversation()
    conv.run("one")
    r2 = conv.run("two")
    msgs = [(m.role, m.content) for m in prov.requests[1].messages]
    assert msgs == [("user", "one"), ("assistant", "first answer"), ("user", "two")]
    assert r2.answer == "second answer" and payloads(r2, "run.started")[0]["conversation"]


def test_arun_matches_run():
    a1, _ = make(SPEC, SCRIPT)
    a2, _ = make(SPEC, SCRIPT)
    assert asyncio.run(a1.arun("x")).trace.to_json() == a2.run("x").trace.to_json()


def test_exhausted_script_names_the_call_and_what_was_asked():
    agent, _ = make(SPEC, [call("lookup", id="AB")])
    r = agent.run("where is AB?")
    assert r.outcome == "error"
    assert "LLM call #2" in r.error and "it scripted 1" in r.error and "tool result" in r.error


def test_mock_demo_mode_calls_the_first_tool_with_minimal_valid_args_then_quotes():
    agent = load(SPEC).agent(provider=mock(), effects=Effects(run_ids=counter_ids("d")))
    r = agent.run("hello")
    (called,) = payloads(r, "tool.called")
    assert called["tool"] == "lookup" and len(called["args"]["id"]) >= 2
    assert payloads(r, "tool.returned")[0]["status"] == "success"
    assert r.answer == 'Got it — {"status":"found"}'


def test_mock_script_items_and_exhaustion_directly():
    p = mock(["hi", {"text": "t", "calls": [("x", {"a": 1})]}])
    req = Request("", [Message("user", "question?")], (ToolSpec("x", "", {}),))
    assert p.complete(req).text == "hi"
    reply = p.complete(req)
    assert reply.tool_calls[0].name == "x" and reply.stop_reason == "tool_use"
    with pytest.raises(ProviderError, match=r"LLM call #3 .*question\?"):
        p.complete(req)


def test_why_walks_from_the_answer_to_pieces_results_moves_and_evidence():
    agent, _ = make(SPEC, SCRIPT)
    text = agent.run("where is AB?").why()
    assert text.splitlines()[0].endswith("] answer (answered): The order was found.")
    assert "skill `b` — route (<text>:" in text
    assert "cursor a -> b (route)" in text
    assert "edge `a -> b` fired on `lookup`" in text
    assert "✓ result.status == \"found\" — actual found" in text
    assert "`lookup` (call-1-1) returned success" in text
    assert "fact `f` — always" in text


def test_why_of_a_single_event():
    agent, _ = make(SPEC, SCRIPT)
    r = agent.run("x")
    ev = [e for e in r.trace if e.kind == "tool.returned"][0]
    assert r.why(ev.id).startswith(f"[{ev.id}] `lookup` (call-1-1) returned success")


def test_unknown_agent_is_a_clear_error():
    from afp_dsl.runner import AgentNotFound
    with pytest.raises(AgentNotFound, match="no agent `nope`; agents: `g`"):
        load(SPEC).agent("nope")


def test_a_follow_up_after_a_resumed_pause_sees_the_whole_history():
    from afp_dsl.runner import approve
    spec = """
    agent g { tools = [pay] }
    tool pay { description = "pay" input { amount: number } check_in = true impl = returns("paid") }
    """
    agent, prov = make(spec, [call("pay", amount=1), "paid it", "you are welcome"])
    conv = agent.conversation()
    r = conv.run("pay one")
    agent.resume(r.checkpoint, approve(r.checkin))
    conv.run("thanks")
    roles = [m.role for m in prov.requests[-1].messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]


def test_provider_resilience_events_are_recorded_in_the_trace():
    from afp_dsl.providers.base import Provider
    from afp_dsl.providers.resilience import with_fallback

    class Down(Provider):
        name = "down"

        def complete(self, request):
            raise ProviderError("the server is unreachable")

    provider = with_fallback(Down(), mock(["from the backup"]))
    agent = load("agent g { }").agent(provider=provider, effects=Effects(run_ids=counter_ids("f")))
    r = agent.run("hi")
    assert r.answer == "from the backup"
    (fb,) = payloads(r, "llm.fallback")
    assert [e.caused_by for e in r.trace if e.kind == "llm.fallback"][0][0].endswith(":3")
    assert fb["provider"]
