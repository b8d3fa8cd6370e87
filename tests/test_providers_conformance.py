"""Provider adapters against semantics.md §11, found by a conformance audit: a stream cut short
or a dropped connection is an error, never a partial answer; Anthropic's id-less tool calls,
cache tokens and context-window stop; arguments cut at the token limit name `max_tokens`;
credentials in a base URL never reach a message; a used-up quota is not a rate limit; a 200
whose body is an error shows the server's message. All against local fake servers."""
from __future__ import annotations

import json
import socketserver

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request, ToolCall
from tests.fakes.clients import KEY, make
from tests.fakes.server import FakeServer, Response, free_port
from tests.fakes.vendors import VENDORS, AnthropicWire, OllamaWire, OpenAIWire, Turn, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(60)

ALL = list(VENDORS)
SSE, NDJSON = "text/event-stream", "application/x-ndjson"


def call(vendor: str, item, *, stream: bool = False, n: int = 3, **kw):
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        p = make(vendor, srv.url, stream=stream, **kw)
        return p.complete(Request("s", [Message("user", "x")], call_number=n))


def fail(vendor: str, item, **kw) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(vendor, item, **kw)
    exc = info.value
    assert KEY not in str(exc) and exc.__cause__ is None
    return exc


# ---------------------------------------------------------------- streams cut short
CUT = {"openai": (OpenAIWire, 3, SSE),        # role chunk + two text pieces: no finish reason
       "anthropic": (AnthropicWire, 5, SSE),  # start, ping, block start, two deltas: no stop
       "ollama": (OllamaWire, 2, NDJSON)}     # two text lines: no `"done": true`


@pytest.mark.parametrize("vendor", ALL)
def test_a_stream_that_ends_before_its_last_event_is_an_error_not_a_reply(vendor):
    wire, n, ctype = CUT[vendor]
    chunks = wire.stream(Turn("Hello there, how are you"))[:n]
    exc = fail(vendor, Response(200, chunks=chunks, content_type=ctype), stream=True)
    assert isinstance(exc, h.ServerError) and exc.transient
    assert "the stream ended before" in str(exc) and "--retries" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_a_connection_dropped_in_the_middle_of_a_stream_is_transient_and_named(vendor,
                                                                              monkeypatch):
    monkeypatch.setattr(socketserver.BaseServer, "handle_error", lambda *a: None)
    wire, n, ctype = CUT[vendor]

    def chunks():
        yield from wire.stream(Turn("Hello there, how are you"))[:n]
        raise ConnectionResetError("the fake server drops the connection")
    exc = fail(vendor, Response(200, chunks=chunks(), content_type=ctype), stream=True)
    assert isinstance(exc, h.ServerUnreachableError) and exc.transient, exc
    assert "unexpected" not in str(exc)


# ---------------------------------------------------------------- Anthropic mapping
def _anthropic_message(content: list, stop: str = "tool_use", **usage) -> Response:
    return Response(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                          "content": content, "stop_reason": stop, "stop_sequence": None,
                          "usage": {"input_tokens": 5, "output_tokens": 3, **usage}})


def _anthropic_stream_without_ids() -> Response:
    chunks = AnthropicWire.stream(Turn("", (("X", "a", {"k": 1}), ("X", "b", {}))))
    chunks = [c.replace('"id": "X", ', "") for c in chunks]
    assert not any('"X"' in c for c in chunks)
    return Response(200, chunks=chunks, content_type=SSE)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tool_calls_without_an_id_get_the_mock_ids(stream):
    item = (_anthropic_stream_without_ids() if stream else _anthropic_message(
        [{"type": "tool_use", "name": "a", "input": {"k": 1}},
         {"type": "tool_use", "id": "", "name": "b", "input": {}}]))
    r = call("anthropic", item, stream=stream, n=4)
    assert [(c.id, c.name, dict(c.arguments)) for c in r.tool_calls] == [
        ("call-4-1", "a", {"k": 1}), ("call-4-2", "b", {})]  # not "None" and ""


def test_anthropic_ids_given_by_the_adapter_round_trip_on_tool_use_and_tool_result():
    from afp_dsl.providers.anthropic import to_messages
    r = call("anthropic", _anthropic_message([{"type": "tool_use", "name": "a", "input": {}}]),
             n=2)
    out = to_messages([Message("user", "x"), Message("assistant", r.text, r.tool_calls),
                       Message("tool", "ok", tool_call_id=r.tool_calls[0].id)])
    assert out[1]["content"][0]["id"] == out[2]["content"][0]["tool_use_id"] == "call-2-1"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_input_tokens_include_the_prompt_cache(stream):
    """The Messages API counts cache reads and writes apart from `input_tokens`; OpenAI's
    `prompt_tokens` (and OTel's `gen_ai.usage.input_tokens`) include them."""
    cache = {"cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}
    if stream:
        chunks = AnthropicWire.stream(Turn("hi", usage=(5, 3)))
        chunks[0] = chunks[0].replace('"output_tokens": 1}',
                                      '"output_tokens": 1, ' + json.dumps(cache)[1:])
        item = Response(200, chunks=chunks, content_type=SSE)
    else:
        item = _anthropic_message([{"type": "text", "text": "hi"}], "end_turn", **cache)
    r = call("anthropic", item, stream=stream)
    assert (r.usage.input_tokens, r.usage.output_tokens) == (125, 3)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_context_window_stop_maps_to_length(stream):
    r = call("anthropic", Turn("partial", stop="model_context_window_exceeded"), stream=stream)
    assert r.stop_reason == "length"


# ---------------------------------------------------------------- arguments cut off
@pytest.mark.parametrize("vendor,stop,stream", [("openai", "length", False),
                                                ("openai", "length", True),
                                                ("anthropic", "max_tokens", True)])
def test_arguments_cut_at_the_token_limit_name_max_tokens(vendor, stop, stream):
    exc = fail(vendor, Turn("", (("c1", "a", '{"order_id": "AB-'),), stop=stop), stream=stream)
    assert isinstance(exc, h.BadToolArgumentsError)
    assert "raise max_tokens" in str(exc) and "better tool-calling" not in str(exc)


# ---------------------------------------------------------------- credentials in URLs
@pytest.mark.parametrize("vendor,var", [("openai", "OPENAI_BASE_URL"),
                                        ("anthropic", "ANTHROPIC_BASE_URL")])
def test_credentials_in_a_base_url_never_reach_a_message(vendor, var):
    from afp_dsl.providers.registry import make_provider
    port = free_port()
    url = f"http://proxyuser:pw-canary-31337@127.0.0.1:{port}" + (
        "/v1" if vendor == "openai" else "") + "?api-key=qs-canary-4242"
    env = {var: url, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    p = make_provider(f"{vendor}:m", env=env, timeout=5)
    with pytest.raises(h.ServerUnreachableError) as info:
        p.complete(Request("", [Message("user", "x")]))
    text = str(info.value)
    assert "pw-canary" not in text and "qs-canary" not in text and KEY not in text
    assert f"127.0.0.1:{port}" in text and "[redacted]@" in text


def test_url_secrets_and_shown_url():
    assert h.url_secrets("http://u:p4ss@h:1/v1?k=abcd&x=") == ("p4ss", "abcd")
    assert h.url_secrets("https://tok3n@h") == ("tok3n",)
    assert h.url_secrets("http://127.0.0.1:1/v1") == ()
    assert h.shown_url("http://u:p@h:1/v1?k=v") == "http://[redacted]@h:1/v1?[redacted]"
    assert h.shown_url("https://api.openai.com/v1") == "https://api.openai.com/v1"


# ---------------------------------------------------------------- a quota is not a rate limit
def test_openai_insufficient_quota_names_billing_and_is_not_retried():
    body = {"error": {"message": "You exceeded your current quota, please check your plan and "
                                 "billing details.", "type": "insufficient_quota",
                      "code": "insufficient_quota"}}
    exc = fail("openai", Response(429, body, (("retry-after", "1"),)))
    assert isinstance(exc, h.QuotaExceededError) and isinstance(exc, h.RateLimitedError)
    assert not exc.transient and exc.kind == "quota_exceeded" and exc.status == 429
    assert "OPENAI_API_KEY" in str(exc) and "billing" in str(exc)


def test_an_ordinary_rate_limit_stays_transient():
    exc = fail("openai", OpenAIWire.error(429, "Rate limit reached", (("retry-after", "2"),)))
    assert type(exc) is h.RateLimitedError and exc.transient and exc.retry_after == 2


# ---------------------------------------------------------------- a 200 with an error body
@pytest.mark.parametrize("vendor,body", [
    ("openai", {"error": {"message": "upstream canary-err", "type": "server_error"}}),
    ("anthropic", {"type": "error", "error": {"type": "api_error",
                                              "message": "upstream canary-err"}}),
    ("ollama", {"error": "upstream canary-err"})])
def test_a_200_whose_body_is_an_error_shows_the_servers_message(vendor, body):
    exc = fail(vendor, Response(200, body))
    assert isinstance(exc, h.ServerError), exc
    assert "upstream canary-err" in str(exc) and "right API" not in str(exc)


def test_a_200_that_is_not_the_api_is_still_malformed():
    for vendor in ALL:
        assert isinstance(fail(vendor, Response(200, {"unexpected": True})),
                          h.MalformedReplyError)


def test_tool_call_ids_still_win_when_the_server_gives_them():
    r = call("anthropic", Turn("", (("toolu_1", "a", {}),)))
    assert [c.id for c in r.tool_calls] == ["toolu_1"]
    assert isinstance(r.tool_calls[0], ToolCall)
