"""Replies of unusual shape, from a provider audit: unknown stop reasons are normalised; OpenAI
tool-call deltas without an `index`; Anthropic tool input sent whole in `content_block_start`;
NaN and infinities in tool arguments echoed back as strict JSON; wrongly shaped fields are a
`MalformedReplyError`, never an `unexpected ...`. All against local fake servers."""
from __future__ import annotations

import json

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request
from tests.fakes.clients import KEY, make
from tests.fakes.server import FakeServer, Response
from tests.fakes.vendors import VENDORS, Turn, _sse, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(60)

ALL = list(VENDORS)
SSE = "text/event-stream"
REQUEST = Request("s", [Message("user", "x")], call_number=1)


def call(vendor: str, item, *, stream: bool = False, **kw):
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        return make(vendor, srv.url, stream=stream, **kw).complete(REQUEST)


def malformed(vendor: str, item, **kw) -> h.MalformedReplyError:
    """The error of a call answered `item`: a MalformedReplyError naming the URL, no key."""
    with pytest.raises(ProviderError) as info:
        call(vendor, item, **kw)
    exc = info.value
    assert isinstance(exc, h.MalformedReplyError), exc
    assert "unexpected" not in str(exc) and "127.0.0.1" in str(exc) and KEY not in str(exc)
    return exc


# ---------------------------------------------------------------- stop reasons
@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_an_unknown_stop_reason_becomes_stop(vendor, stream):
    reply = call(vendor, Turn("hi", stop="weird_reason"), stream=stream)
    assert (reply.text, reply.stop_reason) == ("hi", "stop")


# ---------------------------------------------------------------- OpenAI deltas without `index`
def _openai_chunks(*deltas: dict, finish: str = "tool_calls") -> Response:
    def chunk(delta: dict, reason: str | None = None) -> str:
        return _sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                     "model": "m", "choices": [{"index": 0, "delta": delta,
                                                "finish_reason": reason}]})
    chunks = [chunk({"role": "assistant"})] + [chunk(d) for d in deltas]
    return Response(200, chunks=chunks + [chunk({}, finish), "data: [DONE]\n\n"],
                    content_type=SSE)


def _call_delta(**fields) -> dict:
    return {"tool_calls": [fields]}


def test_openai_tool_call_deltas_without_index_start_a_call_at_each_new_id():
    reply = call("openai", _openai_chunks(
        _call_delta(id="a", type="function", function={"name": "lookup", "arguments": "{}"}),
        _call_delta(id="b", type="function", function={"name": "lookup", "arguments": '{"id"'}),
        _call_delta(function={"arguments": ': "42"}'}),  # no id, no index: continues `b`
        _call_delta(id="b", function={"arguments": ""})), stream=True)  # the same id: `b` still
    assert [(c.id, c.name, dict(c.arguments)) for c in reply.tool_calls] == [
        ("a", "lookup", {}), ("b", "lookup", {"id": "42"})]


def test_openai_an_id_after_the_first_delta_without_index_is_that_calls_id():
    reply = call("openai", _openai_chunks(
        _call_delta(type="function", function={"name": "lookup", "arguments": ""}),
        _call_delta(id="a", function={"arguments": "{}"})), stream=True)
    assert [(c.id, c.name, dict(c.arguments)) for c in reply.tool_calls] == [("a", "lookup", {})]


def test_openai_tool_call_deltas_with_index_merge_by_index_as_before():
    reply = call("openai", _openai_chunks(
        _call_delta(index=0, id="a", function={"name": "lookup", "arguments": ""}),
        _call_delta(index=1, id="b", function={"name": "lookup", "arguments": "{}"}),
        _call_delta(index=0, function={"arguments": '{"id": "1"}'})), stream=True)
    assert [(c.id, dict(c.arguments)) for c in reply.tool_calls] == [("a", {"id": "1"}),
                                                                       ("b", {})]


# ---------------------------------------------------------------- Anthropic input in the start event
def _anthropic_stream(*blocks: tuple) -> Response:
    """A streamed message of tool_use blocks, each (start input, input_json_delta pieces)."""
    ev = [_sse({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}, "message_start")]
    for k, (start, pieces) in enumerate(blocks):
        ev.append(_sse({"type": "content_block_start", "index": k, "content_block": {
            "type": "tool_use", "id": f"t{k}", "name": "lookup", "input": start}},
            "content_block_start"))
        ev += [_sse({"type": "content_block_delta", "index": k, "delta": {
            "type": "input_json_delta", "partial_json": p}}, "content_block_delta")
            for p in pieces]
        ev.append(_sse({"type": "content_block_stop", "index": k}, "content_block_stop"))
    ev += [_sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                 "usage": {"output_tokens": 3}}, "message_delta"),
           _sse({"type": "message_stop"}, "message_stop")]
    return Response(200, chunks=ev, content_type=SSE)


def test_anthropic_keeps_tool_input_sent_whole_in_the_start_event():
    reply = call("anthropic", _anthropic_stream(({"id": "42"}, []),           # whole at start
                                                ({}, ['{"id": ', '"7"}'])),   # in deltas
                 stream=True)
    assert [(c.id, dict(c.arguments)) for c in reply.tool_calls] == [("t0", {"id": "42"}),
                                                                       ("t1", {"id": "7"})]


# ---------------------------------------------------------------- NaN in tool arguments
DESK = """
agent desk {
  system = "Refund desk."
  tools  = [refund]
}
tool refund {
  description = "Refund an amount on an order."
  input { order_id: string amount: number }
  impl = returns("refunded")
}
"""


def _refuse(constant: str):
    raise ValueError(f"not strict JSON: {constant}")


def _echoed_arguments(vendor: str, body: dict):
    """The arguments of the assistant's tool call as the request `body` sends them back."""
    turn = next(m for m in body["messages"] if m["role"] == "assistant")
    if vendor == "anthropic":
        return next(b["input"] for b in turn["content"] if b["type"] == "tool_use")
    args = turn["tool_calls"][0]["function"]["arguments"]
    return json.loads(args, parse_constant=_refuse) if vendor == "openai" else args


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_tool_arguments_are_answered_invalid_and_the_run_goes_on(vendor, bad):
    import afp_dsl as afp
    turns = [Turn("", (("a", "refund", {"order_id": "AB-1", "amount": bad}),)),
             Turn("Sorry, I could not refund that.")]
    with FakeServer(scripted(VENDORS[vendor], turns)) as srv:
        agent = afp.load(DESK).agent(provider=make(vendor, srv.url))
        result = agent.run("refund AB-1")
    assert result.outcome == "answered", result
    assert _echoed_arguments(vendor, srv.bodies[1]) == {
        "order_id": "AB-1", "amount": "NaN" if bad != bad else "Infinity"}
    invalid = [e for e in result.trace.events if e.kind == "tool.args_invalid"]
    assert len(invalid) == 1


# ---------------------------------------------------------------- wrongly shaped fields
def _openai(**message) -> Response:
    return Response(200, {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", **message}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 2}})


def _anthropic(content, **usage) -> Response:
    return Response(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                          "content": content, "stop_reason": "end_turn",
                          "usage": {"input_tokens": 3, "output_tokens": 2, **usage}})


def _ollama(body) -> Response:
    return Response(200, body)


_OK_OLLAMA = {"model": "m", "created_at": "t", "done": True, "done_reason": "stop",
              "message": {"role": "assistant", "content": "hi"}}
_OK_CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}


@pytest.mark.parametrize("vendor,item,said", [
    ("anthropic", _anthropic("hello"), "`content` is a `str`"),
    ("anthropic", _anthropic(["x"]), "`content` holds a `str`"),
    ("anthropic", _anthropic([{"type": "text", "text": None}]), "the `text` of a `text` block is None"),
    ("anthropic", _anthropic([{"type": "text", "text": "hi"}], output_tokens=-1),
     "`output_tokens` is -1"),
    ("ollama", _ollama([1]), "a body that is a `list`"),
    ("ollama", _ollama(dict(_OK_OLLAMA, prompt_eval_count=-3)), "`prompt_eval_count` is -3"),
    ("openai", _openai(content=5), "`message.content` is 5"),
    ("openai", _openai(content=[{"type": "image_url", "image_url": {"url": "x"}}]),
     "`message.content` is a list of parts other than text parts"),
    ("openai", _openai(content=["hi"]), "`message.content` is a list of parts"),
    ("openai", Response(200, dict(json.loads(json.dumps(_openai(content="hi").body)),
                                  usage={"prompt_tokens": -5, "completion_tokens": 2})),
     "`prompt_tokens` is -5"),
])
def test_a_wrongly_shaped_field_is_a_malformed_reply_naming_it(vendor, item, said):
    assert said in str(malformed(vendor, item))


@pytest.mark.parametrize("chunk,said", [
    (dict(_OK_CHUNK, choices="zz"), "`choices` is a `str`"),
    (dict(_OK_CHUNK, choices=["zz"]), "`choices` holds a `str`"),
    (dict(_OK_CHUNK, choices=[{"index": 0, "delta": "zz"}]), "`delta` holds a `str`"),
    (dict(_OK_CHUNK, choices=[{"index": 0, "delta": {"content": 5}}]), "`delta.content` is 5"),
])
def test_a_wrongly_shaped_openai_stream_chunk_is_a_malformed_reply(chunk, said):
    chunks = [_sse(_OK_CHUNK), _sse(chunk), "data: [DONE]\n\n"]
    exc = malformed("openai", Response(200, chunks=chunks, content_type=SSE), stream=True)
    assert said in str(exc)


@pytest.mark.parametrize("event,said", [
    ({"type": "content_block_start", "index": 1, "content_block": "x"}, "`content_block` holds"),
    ({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": None}},
     "the `text` of a `text` block is None"),
    ({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": None}},
     "the `text` of a `text_delta` is None"),
])
def test_a_wrongly_shaped_anthropic_stream_event_is_a_malformed_reply(event, said):
    chunks = VENDORS["anthropic"].stream(Turn("Hello there"))
    chunks = chunks[:3] + [_sse(event, event["type"])] + chunks[3:]
    exc = malformed("anthropic", Response(200, chunks=chunks, content_type=SSE), stream=True)
    assert said in str(exc)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_content_as_a_list_of_text_parts_is_their_text_joined(stream):
    parts = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]
    if stream:
        chunk = dict(_OK_CHUNK, choices=[{"index": 0, "delta": {"content": parts},
                                          "finish_reason": "stop"}])
        item = Response(200, chunks=[_sse(chunk), "data: [DONE]\n\n"], content_type=SSE)
    else:
        item = _openai(content=parts)
    assert call("openai", item, stream=stream).text == "Hello there"


def test_tool_arguments_nested_deeper_than_the_decoder_goes_are_an_unread_call():
    """Arguments 5,000 levels deep escaped as `unexpected RecursionError` (the run ended); now
    the call is answered as invalid, as for any arguments that are not a JSON object."""
    from afp_dsl.providers._http import read_call
    from afp_dsl.providers.base import UnreadCall
    deep = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    call = read_call("openai", "c1", "lookup", deep)
    assert isinstance(call, UnreadCall) and "nested too deep to read" in call.problem, call
