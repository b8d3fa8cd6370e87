"""The adapters against each vendor's wire format, on cases an audit against the SDKs' types
found diverging: a server's retry-after on 5xx (Anthropic's 529 too) and 408, OpenAI's
`refusal`, Anthropic's thinking blocks and their round-trip. Local fake servers only."""
from __future__ import annotations

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request
from afp_dsl.providers.resilience import with_retry
from tests.fakes.clients import make
from tests.fakes.server import FakeServer, Response
from tests.fakes.vendors import VENDORS, Turn, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(60)

ALL = list(VENDORS)
ASK = Request("s", [Message("user", "x")], (), None, 1)


def fail(vendor: str, item, **kw) -> ProviderError:
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        with pytest.raises(ProviderError) as info:
            make(vendor, srv.url, **kw).complete(ASK)
    return info.value


# ---------------------------------------------------------------- retry-after beyond 429
@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_carries_the_servers_retry_after(vendor, status):
    exc = fail(vendor, VENDORS[vendor].error(status, "busy", (("retry-after", "7"),)))
    assert isinstance(exc, h.ServerError) and exc.transient and exc.status == status
    assert exc.retry_after == 7 and f"server error {status}, retry after 7s: busy" in str(exc)


def test_anthropic_overloaded_529_carries_retry_after_ms():
    wire = VENDORS["anthropic"]
    exc = fail("anthropic", wire.error(529, "Overloaded", (("retry-after-ms", "1500"),)))
    assert isinstance(exc, h.ServerError) and exc.status == 529 and exc.retry_after == 1.5


def test_a_server_error_without_retry_after_has_none():
    exc = fail("openai", VENDORS["openai"].error(503, "busy"))
    assert exc.retry_after is None and "retry after" not in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_a_408_is_a_transient_timeout_not_a_bad_request(vendor):
    exc = fail(vendor, VENDORS[vendor].error(408, "request timed out"))
    assert isinstance(exc, h.ProviderTimeoutError) and exc.transient and exc.status == 408
    assert "timed out the request (408: request timed out)" in str(exc)


def test_retry_waits_the_retry_after_of_a_529():
    wire, sleeps = VENDORS["anthropic"], []
    with FakeServer(scripted(wire, [wire.error(529, "Overloaded", (("retry-after", "3"),)),
                                    Turn("done")])) as srv:
        p = with_retry(make("anthropic", srv.url), 3, 0.5, sleep=sleeps.append)
        assert p.complete(ASK).text == "done"
    assert sleeps == [3.0] and len(srv.requests) == 2


# ---------------------------------------------------------------- OpenAI refusal
def _openai_refusal(stream: bool) -> Response:
    from tests.fakes.vendors import OpenAIWire, _sse
    if not stream:
        body = OpenAIWire.reply(Turn("x"))
        body["choices"][0]["message"] = {"role": "assistant", "content": None,
                                         "refusal": "I can't help with that."}
        return Response(200, body)
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [_sse(dict(head, choices=[{"index": 0, "delta": d, "finish_reason": f}]))
              for d, f in (({"role": "assistant", "content": None, "refusal": ""}, None),
                           ({"refusal": "I can't "}, None), ({"refusal": "help with that."}, None),
                           ({}, "stop"))]
    return Response(200, chunks=chunks + ["data: [DONE]\n\n"], content_type="text/event-stream")


@pytest.mark.parametrize("stream", [False, True])
def test_an_openai_refusal_is_the_answer_with_stop_reason_content_filter(stream):
    with FakeServer(lambda rec: _openai_refusal(stream)) as srv:
        reply = make("openai", srv.url, stream=stream).complete(ASK)
    assert (reply.text, reply.stop_reason) == ("I can't help with that.", "content_filter")


# ---------------------------------------------------------------- Anthropic thinking
THOUGHT = {"type": "thinking", "thinking": "The user wants order AB-12.", "signature": "c2lnLTE="}
HIDDEN = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
DESK = """
agent desk {
  system = "You are a refund desk."
  tools  = [lookup_order]
}
tool lookup_order {
  description = "Look up an order."
  input { order_id: string }
  impl = returns({ status: "found" })
}
"""


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_thinking_blocks_are_sent_back_first_on_their_tool_use_turn(tmp_path, stream):
    """With extended thinking on, the Messages API refuses (400) an assistant turn of tool_use
    blocks that does not start with the thinking blocks it came with, signatures unchanged."""
    import afp_dsl
    from afp_dsl.effects import Effects
    from afp_dsl.runner import Agent
    spec = tmp_path / "desk.afp"
    spec.write_text(DESK)
    turns = [Turn("Looking.", (("toolu_1", "lookup_order", {"order_id": "AB-12"}),),
                  thinking=(THOUGHT, HIDDEN)), Turn("AB-12 is found.")]
    with FakeServer(scripted(VENDORS["anthropic"], turns)) as srv:
        p = make("anthropic", srv.url, stream=stream,
                 params={"thinking": {"type": "enabled", "budget_tokens": 1024}})
        result = Agent(afp_dsl.load(spec), provider=p, effects=Effects()).run("where is AB-12?")
    assert (result.outcome, result.answer) == ("answered", "AB-12 is found.")
    turn = srv.bodies[1]["messages"][1]
    assert turn["role"] == "assistant" and turn["content"] == [
        THOUGHT, HIDDEN, {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup_order",
         "input": {"order_id": "AB-12"}}]
    trace = repr([e.to_dict() for e in result.trace.events])
    assert THOUGHT["thinking"] not in trace and HIDDEN["data"] not in trace  # (never recorded)


def test_a_checkpoint_keeps_the_thinking_of_a_pending_tool_use_turn():
    from afp_dsl.providers.base import ToolCall
    from afp_dsl.state import RunState
    st = RunState("r", "desk", "hi", history=[
        Message("user", "hi"),
        Message("assistant", "", (ToolCall("toolu_1", "t", {}),), thinking=(THOUGHT, HIDDEN))])
    back = RunState.from_checkpoint(st.to_checkpoint())
    assert back.history == st.history


def test_a_reply_whose_thinking_is_not_json_objects_is_refused():
    from afp_dsl.providers.base import Reply, checked_reply
    with pytest.raises(ProviderError, match="its `thinking` is not a tuple of JSON objects"):
        checked_reply(Reply("hi", thinking=("just text",)))
    assert checked_reply(Reply("hi", thinking=[{"type": "thinking"}])).thinking == (
        {"type": "thinking"},)


# ---------------------------------------------------------------- OpenAI history
def test_an_empty_openai_assistant_turn_without_calls_sends_empty_text_not_null():
    """Chat Completions takes `content: null` on an assistant message only when it has
    `tool_calls`; an empty answer earlier in a conversation (a host provider's, a mock's) is ""."""
    from afp_dsl.providers.base import ToolCall
    from afp_dsl.providers.openai import to_messages
    out = to_messages("", [Message("user", "a"), Message("assistant", ""), Message("user", "b"),
                           Message("assistant", "", (ToolCall("c1", "t", {}),))])
    assert out[1] == {"role": "assistant", "content": ""}
    assert out[3]["content"] is None and out[3]["tool_calls"][0]["id"] == "c1"
