"""OpenAI, Anthropic and Ollama adapters end to end against local fake servers (127.0.0.1):
a two-iteration tool exchange (plain and streamed), the exact request bodies, every error."""
from __future__ import annotations

import pytest

from afp_dsl.frozen import freeze
from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request, ToolSpec
from tests.fakes.clients import KEY, make
from tests.fakes.server import FakeServer, Hang, Response, free_port
from tests.fakes.vendors import REPLY_MODEL, VENDORS, Turn, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(60)

SCHEMA = {"type": "object",
          "properties": {"order_id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
                         "address": {"type": "object",
                                     "properties": {"zip": {"type": "string", "minLength": 5}}}},
          "required": ["order_id"], "additionalProperties": False}
TOOLS = (ToolSpec("lookup_order", "Look up an order.", freeze(SCHEMA)),)
ALL = list(VENDORS)


def exchange(vendor: str, stream: bool):
    turns = [Turn("Looking.", (("call-1-1", "lookup_order", {"order_id": "AB-12"}),), (20, 9)),
             Turn("Order AB-12 is found.", (), (31, 6))]
    with FakeServer(scripted(VENDORS[vendor], turns)) as srv:
        p = make(vendor, srv.url, stream=stream)
        chunks: list = []
        p.subscribe(chunks.append)
        first = p.complete(Request("Be brief.", [Message("user", "where is AB-12?")], TOOLS,
                                   None, 1))
        history = [Message("user", "where is AB-12?"),
                   Message("assistant", first.text, first.tool_calls),
                   Message("tool", '{"status": "found"}', tool_call_id=first.tool_calls[0].id,
                           name="lookup_order")]
        second = p.complete(Request("Be brief.", history, TOOLS, None, 2))
    return first, second, srv.bodies, chunks


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_a_two_iteration_tool_exchange_maps_both_ways(vendor, stream):
    first, second, _, _ = exchange(vendor, stream)
    assert first.text == "Looking." and first.stop_reason == "tool_use"
    assert [(c.id, c.name, dict(c.arguments)) for c in first.tool_calls] == [
        ("call-1-1", "lookup_order", {"order_id": "AB-12"})]
    assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 9)
    assert second.text == "Order AB-12 is found." and second.tool_calls == ()
    assert second.stop_reason == "stop"
    assert (second.usage.input_tokens, second.usage.output_tokens) == (31, 6)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_keeps_the_id_and_the_model_the_server_named(vendor, stream):
    first, second, bodies, _ = exchange(vendor, stream)
    assert bodies[0]["model"] == "m"  # asked for "m"; the server answered as a dated snapshot
    rid = {"openai": "chatcmpl-1", "anthropic": "msg_1", "ollama": None}[vendor]
    assert [(r.response_id, r.response_model) for r in (first, second)] == \
        [(rid, REPLY_MODEL)] * 2


@pytest.mark.parametrize("vendor", ALL)
def test_streaming_gives_the_same_reply_and_reports_chunks(vendor):
    plain = exchange(vendor, False)
    streamed = exchange(vendor, True)
    assert plain[:2] == streamed[:2]
    assert plain[3] == []
    texts = [e.data["text"] for e in streamed[3] if e.kind == "llm.chunk"]
    assert "".join(texts) == "Looking." + "Order AB-12 is found."
    assert len(texts) > 2 and all(e.provider == vendor for e in streamed[3])


def test_openai_request_body_shape():
    _, _, bodies, _ = exchange("openai", False)
    first, second = bodies
    assert first["model"] == "m"
    assert first["messages"] == [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "where is AB-12?"}]
    assert first["tools"] == [{"type": "function", "function": {
        "name": "lookup_order", "description": "Look up an order.", "parameters": SCHEMA}}]
    assert second["messages"][2:] == [
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call-1-1", "type": "function",
             "function": {"name": "lookup_order", "arguments": '{"order_id": "AB-12"}'}}]},
        {"role": "tool", "tool_call_id": "call-1-1", "content": '{"status": "found"}'}]
    assert "stream" not in first


def test_openai_streaming_asks_for_usage():
    _, _, bodies, _ = exchange("openai", True)
    assert bodies[0]["stream"] is True
    assert bodies[0]["stream_options"] == {"include_usage": True}


def test_anthropic_request_body_shape():
    _, _, bodies, _ = exchange("anthropic", False)
    first, second = bodies
    assert first["system"] == "Be brief." and first["max_tokens"] == 4096
    assert first["tools"] == [{"name": "lookup_order", "description": "Look up an order.",
                               "input_schema": SCHEMA}]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "call-1-1", "name": "lookup_order",
         "input": {"order_id": "AB-12"}}]
    assert second["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call-1-1", "content": '{"status": "found"}'}]


def test_ollama_request_body_keeps_the_whole_schema():
    _, _, bodies, _ = exchange("ollama", False)
    first, second = bodies
    assert first["stream"] is False
    assert first["tools"][0]["function"]["parameters"] == SCHEMA  # the SDK model would drop it
    assert second["messages"][2:] == [
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"function": {"name": "lookup_order", "arguments": {"order_id": "AB-12"}}}]},
        {"role": "tool", "content": '{"status": "found"}', "tool_name": "lookup_order"}]


def test_anthropic_merges_consecutive_tool_results_into_one_user_turn():
    from afp_dsl.providers.anthropic import to_messages
    from afp_dsl.providers.base import ToolCall
    calls = (ToolCall("a", "t", {}), ToolCall("b", "t", {}))
    out = to_messages([Message("user", "hi"), Message("assistant", "", calls),
                       Message("tool", "1", tool_call_id="a"),
                       Message("tool", "2", tool_call_id="b"), Message("user", "and?")])
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert [b["type"] for b in out[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert out[1]["content"][0]["type"] == "tool_use"  # no empty text block


def test_the_adapter_model_wins_over_the_request_model():
    with FakeServer(scripted(VENDORS["openai"], [Turn("a"), Turn("b")])) as srv:
        make("openai", srv.url, model="mine").complete(Request("", [Message("user", "x")],
                                                               model="spec-model"))
        make("openai", srv.url, model=None).complete(Request("", [Message("user", "x")],
                                                             model="spec-model"))
    assert [b["model"] for b in srv.bodies] == ["mine", "spec-model"]


def test_ollama_gives_tool_calls_the_mock_ids():
    with FakeServer(scripted(VENDORS["ollama"], [
            Turn("", (("", "a", {}), ("", "b", {"x": 1})))])) as srv:
        r = make("ollama", srv.url).complete(Request("", [Message("user", "x")], call_number=4))
    assert [c.id for c in r.tool_calls] == ["call-4-1", "call-4-2"]


# ---------------------------------------------------------------- errors
def fail(vendor: str, item, *, stream: bool = False, timeout: float = 5.0, **kw) -> ProviderError:
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        p = make(vendor, srv.url, stream=stream, timeout=timeout, **kw)
        with pytest.raises(ProviderError) as info:
            p.complete(Request("s", [Message("user", "x")], TOOLS))
    exc = info.value
    assert KEY not in str(exc) and KEY not in repr(exc)
    assert exc.__cause__ is None and exc.__suppress_context__
    return exc


@pytest.mark.parametrize("vendor,var", [("openai", "OPENAI_API_KEY"),
                                        ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_missing_key_names_the_variable(vendor, var):
    from afp_dsl.providers.anthropic import anthropic
    from afp_dsl.providers.openai import openai
    with pytest.raises(h.MissingKeyError, match=var):
        (openai if vendor == "openai" else anthropic)("m", env={})


def test_openai_needs_no_key_for_a_local_server():
    with FakeServer(scripted(VENDORS["openai"], [Turn("hi")])) as srv:
        from afp_dsl.providers.openai import openai
        p = openai(env={"OPENAI_BASE_URL": srv.url + "/v1"})
        assert p.complete(Request("", [Message("user", "x")])).text == "hi"
    assert srv.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize("vendor", ALL)
def test_a_server_not_listening(vendor):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(h.ServerUnreachableError) as info:
        make(vendor, url).complete(Request("", [Message("user", "x")]))
    assert url in str(info.value) and KEY not in str(info.value)
    if vendor == "ollama":
        assert "`ollama serve`" in str(info.value)
    assert info.value.transient


@pytest.mark.parametrize("vendor", ALL)
def test_an_unknown_model(vendor):
    exc = fail(vendor, VENDORS[vendor].error(404, "model 'nope' not found"), model="nope")
    assert isinstance(exc, h.ModelNotFoundError) and "`nope`" in str(exc)
    if vendor == "ollama":
        assert "run `ollama pull nope`" in str(exc)
    else:
        assert "--model" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_a_rate_limit_carries_retry_after(vendor):
    exc = fail(vendor, VENDORS[vendor].error(429, "slow down", (("retry-after", "7"),)))
    assert isinstance(exc, h.RateLimitedError) and exc.transient and exc.status == 429
    assert "--retries" in str(exc)
    assert exc.retry_after == 7 and "retry after 7s" in str(exc)  # (ollama: read by a hook)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error(vendor, status):
    exc = fail(vendor, VENDORS[vendor].error(status, "upstream exploded"))
    assert isinstance(exc, h.ServerError) and exc.status == status and exc.transient
    assert f"server error {status}" in str(exc) and "upstream exploded" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_a_timeout_never_hangs(vendor):
    exc = fail(vendor, Hang(), timeout=0.3)
    assert isinstance(exc, h.ProviderTimeoutError) and "0.3s" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("body", [
    Response(200, "<html>proxy login</html>", content_type="text/html"),
    Response(200, "{not json"),
    Response(200, {"unexpected": True})])
def test_a_malformed_body(vendor, body):
    exc = fail(vendor, body)
    assert isinstance(exc, h.MalformedReplyError), exc
    assert "check that the URL points at the right API" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_tool_arguments_that_are_not_json(vendor, stream):
    """Every adapter's call comes back with the arguments unread (`problem`), so the run
    answers the call as invalid and the model may call again (semantics §7, ecosystem.md:
    "return the error to the model"), never quoting them: they may hold a secret (semantics
    §9). (Ollama's arguments are an object on the wire: here a string that is not JSON.)"""
    turn = Turn("", (("c1", "lookup_order", '{"order_id": "AB-'),))
    with FakeServer(scripted(VENDORS[vendor], [turn])) as srv:
        r = make(vendor, srv.url, stream=stream).complete(Request("s", [Message("user", "x")], TOOLS))
    (call,) = r.tool_calls
    cid = "call-0-1" if vendor == "ollama" else "c1"  # (Ollama's calls have no ids: the mock's)
    assert (call.id, call.name, call.arguments) == (cid, "lookup_order", {})
    assert call.problem == "not a JSON object (17 characters that are not valid JSON)"
    assert type(call).__name__ == "UnreadCall"


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_reads_each_call_of_a_reply_on_its_own(stream):
    """Arguments of a type other than an object: a JSON string of an object is read (as the
    other adapters read theirs), `null` is no arguments, a list or a number is unread; the
    other calls of the reply go through as they came."""
    turn = Turn("", (("", "lookup_order", '{"order_id": "AB-1"}'), ("", "lookup_order", None),
                     ("", "lookup_order", [1, 2]), ("", "lookup_order", {"order_id": "AB-2"}),
                     ("", "lookup_order", 7)))
    with FakeServer(scripted(VENDORS["ollama"], [turn])) as srv:
        r = make("ollama", srv.url, stream=stream).complete(
            Request("s", [Message("user", "x")], TOOLS))
    assert [(type(c).__name__, dict(c.arguments), getattr(c, "problem", None))
            for c in r.tool_calls] == [
        ("ToolCall", {"order_id": "AB-1"}, None), ("ToolCall", {}, None),
        ("UnreadCall", {}, "not a JSON object (a `list`)"),
        ("ToolCall", {"order_id": "AB-2"}, None),
        ("UnreadCall", {}, "not a JSON object (an `int`)")]


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_with_neither_text_nor_tool_calls(vendor, stream):
    exc = fail(vendor, Turn(""), stream=stream)
    assert isinstance(exc, h.EmptyReplyError) and "neither text nor tool calls" in str(exc)


@pytest.mark.parametrize("vendor,stop", [("openai", "length"), ("anthropic", "max_tokens"),
                                         ("ollama", "length")])
def test_an_empty_reply_cut_by_the_token_limit_says_raise_max_tokens(vendor, stop):
    exc = fail(vendor, Turn("", (), stop=stop))
    assert "raise max_tokens" in str(exc)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_rejected_key_is_never_echoed(vendor):
    exc = fail(vendor, VENDORS[vendor].error(401, f"Incorrect API key provided: {KEY}"))
    assert isinstance(exc, h.AuthenticationError)
    assert "[redacted]" in str(exc)
    assert ("OPENAI_API_KEY" if vendor == "openai" else "ANTHROPIC_API_KEY") in str(exc)


@pytest.mark.parametrize("status", [401, 403])
def test_ollama_names_a_rejected_key_and_never_echoes_it(monkeypatch, status):
    """The ollama SDK sends OLLAMA_API_KEY from the process environment as a bearer token: a
    server (or proxy) that refuses it was a bad request, quoting the key back."""
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)
    exc = fail("ollama", VENDORS["ollama"].error(status, f"invalid key Bearer {KEY}"))
    assert isinstance(exc, h.AuthenticationError) and exc.status == status
    assert "OLLAMA_API_KEY" in str(exc) and "[redacted]" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_the_key_is_not_in_the_repr(vendor):
    assert KEY not in repr(make(vendor, "http://127.0.0.1:9"))


def test_async_complete_matches_complete():
    import asyncio
    with FakeServer(scripted(VENDORS["anthropic"], [Turn("same"), Turn("same")])) as srv:
        p = make("anthropic", srv.url)
        req = Request("", [Message("user", "x")])
        assert asyncio.run(p.acomplete(req)) == p.complete(req)


def test_an_openai_compatible_server_with_llama_cpp_quirks():
    """llama.cpp / vLLM / LM Studio style: no key, no tool-call id, finish_reason `stop` with
    tool calls, no usage, model name ignored."""
    def handle(rec):
        return Response(200, {"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {
                "name": "lookup_order", "arguments": '{"order_id":"AB-12"}'}}]}}]})
    with FakeServer(handle) as srv:
        from afp_dsl.providers.openai import openai
        p = openai("local-model", base_url=srv.url + "/v1", env={}, timeout=5)
        r = p.complete(Request("", [Message("user", "x")], TOOLS, call_number=3))
    assert [(c.id, c.name, dict(c.arguments)) for c in r.tool_calls] == [
        ("call-3-1", "lookup_order", {"order_id": "AB-12"})]
    assert r.stop_reason == "tool_use" and r.usage.input_tokens == 0
    assert srv.requests[0].path == "/v1/chat/completions"


def test_ollama_model_without_tool_support():
    exc = fail("ollama", VENDORS["ollama"].error(
        400, "registry.ollama.ai/library/gemma:2b does not support tools"), model="gemma:2b")
    assert isinstance(exc, h.BadRequestError)
    assert "model `gemma:2b` does not support tools" in str(exc)


def test_openai_non_function_tool_call_is_malformed():
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "x", "input": "y"}}]}}]}
    exc = fail("openai", Response(200, body))
    assert isinstance(exc, h.MalformedReplyError) and "`custom`" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_an_error_in_the_middle_of_a_stream(vendor):
    exc = fail(vendor, VENDORS[vendor].broken_stream("engine fell over"), stream=True)
    assert isinstance(exc, h.ServerError) and exc.transient
    assert "failed in the middle of the reply: engine fell over" in str(exc)


def _ndjson(*lines) -> Response:
    import json
    return Response(200, chunks=[json.dumps(x) + "\n" for x in lines],
                    content_type="application/x-ndjson")


@pytest.mark.parametrize("body,said", [
    (_ndjson({"error": {"message": "gateway says no"}}), "an error instead of a reply"),
    (Response(200, {"error": {"message": "gateway says no"}}), "an error instead of a reply"),
    (_ndjson({"error": "gateway says no"}), "an error instead of a reply"),
    (_ndjson(VENDORS["ollama"].reply(Turn("Hel")) | {"done": False},
             {"error": {"message": "gateway says no", "type": "overloaded"}}),
     "failed in the middle of the reply")])
def test_ollama_shows_an_error_object_in_a_stream(body, said):
    """An error line of any shape (the SDK's `ResponseError` takes only text) is the server's
    message, transient as any server error, whether it comes first or mid-stream."""
    exc = fail("ollama", body, stream=True)
    assert isinstance(exc, h.ServerError) and exc.transient, exc
    assert said in str(exc) and "gateway says no" in str(exc)


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_shows_the_message_of_an_error_object_in_a_5xx(stream):
    exc = fail("ollama", Response(503, {"error": {"message": "gateway says no"}}), stream=stream)
    assert isinstance(exc, h.ServerError) and "server error 503: gateway says no;" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("body", [
    Response(200, "<html>proxy login</html>", content_type="text/html"),
    Response(200, "{not json"),
    Response(200, {"unexpected": True})])
def test_a_malformed_body_when_streaming(vendor, body):
    """Not an event stream (HTML from a proxy, broken JSON): the wrong API, as unstreamed;
    never a transient "stream ended before a finish reason" that retries would repeat."""
    exc = fail(vendor, body, stream=True)
    assert isinstance(exc, h.MalformedReplyError) and not exc.transient, exc
    assert "check that the URL points at the right API" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("body", [{"error": {"message": "gateway says no"}},
                                  {"type": "error", "error": {"type": "overloaded_error",
                                                              "message": "gateway says no"}}])
def test_a_200_error_object_when_streaming_shows_its_message(vendor, body):
    exc = fail(vendor, Response(200, body), stream=True)
    assert isinstance(exc, h.ServerError) and exc.transient, exc
    assert "gateway says no" in str(exc)


def test_an_event_stream_with_another_content_type_still_streams():
    """Some OpenAI-compatible servers label their SSE `text/plain`: the events decide."""
    wire = VENDORS["openai"]
    chunks = wire.stream(Turn("Hello there"))
    with FakeServer(lambda rec: Response(200, chunks=chunks, content_type="text/plain")) as srv:
        reply = make("openai", srv.url, stream=True).complete(
            Request("", [Message("user", "x")]))
    assert reply.text == "Hello there"


@pytest.mark.parametrize("vendor", ALL)
def test_the_sdk_never_retries_behind_our_back(vendor):
    wire = VENDORS[vendor]
    with FakeServer(scripted(wire, [wire.error(503, "busy"), wire.error(429, "slow"),
                                    Turn("late")])) as srv:
        p = make(vendor, srv.url)
        for _ in range(2):
            with pytest.raises(ProviderError):
                p.complete(Request("", [Message("user", "x")]))
        assert len(srv.requests) == 2


def test_anthropic_marks_a_failed_tool_result_as_an_error():
    """The Messages API's `is_error` on a `tool_result`: set for a call that failed or was
    refused, left out for an answer (an absence is one)."""
    from afp_dsl.providers.anthropic import to_messages
    from afp_dsl.providers.base import ToolCall
    calls = (ToolCall("a", "t", {}), ToolCall("b", "t", {}))
    out = to_messages([Message("user", "hi"), Message("assistant", "", calls),
                       Message("tool", "boom", tool_call_id="a", is_error=True),
                       Message("tool", "ok", tool_call_id="b")])
    first, second = out[2]["content"]
    assert first["is_error"] is True and "is_error" not in second


def test_the_loop_flags_failed_and_refused_results_and_a_checkpoint_keeps_the_flag():
    import afp_dsl as afp
    from afp_dsl.state import RunState
    spec = ('agent g { tools = [bad, good] }\ntool bad { description = "b" input { n: integer } }\n'
            'tool good { description = "g" impl = returns("fine") }\n'
            'tool later { description = "l" check_in = true impl = returns("x") }')
    spec = spec.replace("tools = [bad, good]", "tools = [bad, good, later]")
    agent = afp.load(spec).agent(provider=afp.providers.mock(
        [[("bad", {"n": "x"}), ("good", {})], [("later", {})], "done"]))
    r = agent.run("go")
    assert r.paused
    history = RunState.from_checkpoint(r.checkpoint.data["state"]).history
    flags = [(m.name, m.is_error) for m in history if m.role == "tool"]
    assert flags == [("bad", True), ("good", False)]


# ---------------------------------------------------------------- options
def _adapter(vendor: str, **kw):
    from afp_dsl.providers.anthropic import anthropic
    from afp_dsl.providers.ollama import ollama
    from afp_dsl.providers.openai import openai
    kw.setdefault("env", {"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-x"})
    return {"openai": openai, "anthropic": anthropic, "ollama": ollama}[vendor](
        kw.pop("model", "m"), **kw)


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("kw,error,said", [
    ({"env": 5}, TypeError, "`env` takes a mapping"),
    ({"model": 5}, TypeError, "`model` takes a `str`"),
    ({"stream": "yes"}, TypeError, "`stream` takes True or False"),
    ({"max_reply_bytes": "32M"}, TypeError, "`max_reply_bytes` takes a whole number"),
    ({"max_reply_bytes": 0}, ValueError, "`max_reply_bytes` must be at least 1"),
])
def test_an_adapter_refuses_a_bad_common_option(vendor, kw, error, said):
    with pytest.raises(error, match=said):
        _adapter(vendor, **kw)


@pytest.mark.parametrize("vendor,kw,error,said", [
    ("openai", {"base_url": 5}, TypeError, "`base_url` takes a `str`"),
    ("openai", {"api_key": 5}, TypeError, "`api_key` takes a `str`"),
    ("openai", {"params": 5}, TypeError, "`params` takes a mapping"),
    ("openai", {"params": {1: 2}}, TypeError, "`params` keys must be"),
    ("openai", {"max_tokens": "x"}, TypeError, "`max_tokens` takes a whole number"),
    ("openai", {"max_tokens": 0}, ValueError, "`max_tokens` must be at least 1"),
    ("openai", {"name": 5}, TypeError, "`name` takes a `str`"),
    ("anthropic", {"base_url": 5}, TypeError, "`base_url` takes a `str`"),
    ("anthropic", {"params": 5}, TypeError, "`params` takes a mapping"),
    ("anthropic", {"max_tokens": "4096"}, TypeError, "`max_tokens` takes a whole number"),
    ("anthropic", {"max_tokens": -5}, ValueError, "`max_tokens` must be at least 1"),
    ("ollama", {"host": 5}, TypeError, "`host` takes a `str`"),
    ("ollama", {"options": 5}, TypeError, "`options` takes a mapping"),
    ("ollama", {"keep_alive": [5]}, TypeError, "`keep_alive` takes"),
    ("ollama", {"host": "::::"}, ValueError, "`host` .* is not a server address"),
])
def test_an_adapter_refuses_a_bad_option_of_its_own(vendor, kw, error, said):
    with pytest.raises(error, match=said):
        _adapter(vendor, **kw)


def test_an_adapter_takes_its_documented_options():
    assert _adapter("openai", max_tokens=None, params={"temperature": 0}).params == \
        {"temperature": 0}
    assert _adapter("anthropic", max_tokens=1).max_tokens == 1
    p = _adapter("ollama", keep_alive="5m", options={"num_ctx": 4096}, model=None)
    assert (p.keep_alive, p.options, p.model) == ("5m", {"num_ctx": 4096}, None)
    assert _adapter("ollama", keep_alive=300).keep_alive == 300


def test_unread_arguments_survive_a_checkpoint_and_are_answered_invalid_after_resume():
    """A call whose arguments the adapter could not read (`ToolCall.problem`) waits in the
    checkpoint behind a check-in; after the resume it is still answered as invalid, never run
    with the `{}` that stands for its arguments."""
    import afp_dsl as afp
    from afp_dsl.providers.base import Reply, ToolCall, UnreadCall
    from afp_dsl.state import RunState
    spec = ('agent g { tools = [later, good] }\n'
            'tool good { description = "g" impl = returns("fine") }\n'
            'tool later { description = "l" check_in = true impl = returns("x") }')
    unread = UnreadCall("c2", "good", {}, "not a JSON object (5 characters that are not valid JSON)")
    agent = afp.load(spec).agent(provider=afp.providers.mock(
        [Reply("", (ToolCall("c1", "later", {}), unread), stop_reason="tool_use"), "done"]))
    r = agent.run("go")
    assert r.paused
    pending = RunState.from_checkpoint(r.checkpoint.data["state"]).pending.calls
    assert [getattr(c, "problem", None) for c in pending] == [None, unread.problem]
    done = agent.resume(r.checkpoint, afp.approve(r.checkin, by="maya"))
    returned = {e.payload["call_id"]: e.payload for e in done.trace.events
                if e.kind == "tool.returned"}
    assert returned["c1"]["status"] == "success"
    assert returned["c2"]["status"] == "invalid" and returned["c2"]["executed"] is False


def test_ollama_404_from_a_server_that_is_not_ollama_names_the_base_url():
    """A 404 without Ollama's "model … not found" said "run `ollama pull`"; the other vendors
    already said "check the base URL"."""
    exc = fail("ollama", Response(404, {"error": "no route /api/chat"}), model="llama3.2")
    assert not isinstance(exc, h.ModelNotFoundError)
    assert "check the base URL" in str(exc) and "ollama pull" not in str(exc)
