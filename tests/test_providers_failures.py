"""Failures a provider audit found misnamed or unbounded: a reply cut off after the server had
answered is said to be cut off (not "cannot connect"); a retry-after beyond `max_delay` says why
it was not waited for; a reply larger than `max_reply_bytes` ends the call (plain and streamed)
without reading it all into memory first. All against local fake servers."""
from __future__ import annotations

import json
import socketserver

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request
from afp_dsl.providers.resilience import with_retry
from tests.fakes.clients import KEY, make
from tests.fakes.server import FakeServer, Response
from tests.fakes.vendors import VENDORS, Turn, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(60)

ALL = list(VENDORS)
REQUEST = Request("s", [Message("user", "x")], call_number=1)
CTYPE = {(False, v): "application/json" for v in ALL} | {
    (True, "openai"): "text/event-stream", (True, "anthropic"): "text/event-stream",
    (True, "ollama"): "application/x-ndjson"}


def fail(vendor: str, item, *, wrap=None, **kw) -> ProviderError:
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        p = make(vendor, srv.url, **kw)
        with pytest.raises(ProviderError) as info:
            (wrap(p) if wrap else p).complete(REQUEST)
    exc = info.value
    assert KEY not in str(exc) and "unexpected" not in str(exc) and exc.__cause__ is None
    return exc


# ---------------------------------------------------------------- a reply cut off
def _cut_body(vendor: str, stream: bool) -> Response:
    """The first part of a reply (mid-way through its JSON, or its first event), then the
    connection closes: the server had answered."""
    wire = VENDORS[vendor]
    text = wire.stream(Turn("Hello there"))[0] if stream else json.dumps(wire.reply(Turn("Hi")))

    def chunks():
        yield text[: len(text) // 2]
        raise ConnectionResetError("the fake server drops the connection")
    return Response(200, chunks=chunks(), content_type=CTYPE[stream, vendor])


@pytest.mark.parametrize("vendor", ALL)
@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_off_mid_way_says_so_and_is_transient(vendor, stream, monkeypatch):
    monkeypatch.setattr(socketserver.BaseServer, "handle_error", lambda *a: None)
    exc = fail(vendor, _cut_body(vendor, stream), stream=stream)
    assert isinstance(exc, h.ServerUnreachableError) and exc.transient, exc
    assert "was cut off" in str(exc) and "--retries" in str(exc)
    assert "cannot connect" not in str(exc) and "is the server running" not in str(exc)
    assert "ollama serve" not in str(exc)


# ---------------------------------------------------------------- a retry-after beyond max_delay
@pytest.mark.parametrize("vendor", ALL)
def test_a_retry_after_beyond_max_delay_says_why_it_was_not_waited_for(vendor):
    sleeps: list = []
    exc = fail(vendor, VENDORS[vendor].error(429, "slow down", (("retry-after", "120"),)),
               wrap=lambda p: with_retry(p, 3, max_delay=30, sleep=sleeps.append))
    assert isinstance(exc, h.RateLimitedError) and sleeps == []
    assert "not retried: the server asked to wait 120s, longer than the retry limit " \
           "(max_delay=30s)" in str(exc)


# ---------------------------------------------------------------- a reply larger than the limit
LIMIT = 2**20  # the tests' max_reply_bytes: 1 MiB
MiB = b"x" * 2**20


def endless(head: list, piece) -> tuple:
    """A handler answering `head`, then `piece` (bytes, or a function of the count) until the
    server stops, with the event that stops it."""
    import itertools
    import threading
    stop = threading.Event()

    def chunks():
        yield from head
        for n in itertools.count():
            if stop.is_set():
                return
            yield piece(n) if callable(piece) else piece
    return chunks, stop


def too_large(vendor: str, head: list, piece, *, stream: bool) -> h.ReplyTooLargeError:
    chunks, stop = endless(head, piece)
    response = Response(200, chunks=chunks(), content_type=CTYPE[stream, vendor])
    try:
        exc = fail(vendor, response, stream=stream, timeout=30, max_reply_bytes=LIMIT)
    finally:
        stop.set()
    assert isinstance(exc, h.ReplyTooLargeError) and isinstance(exc, h.MalformedReplyError), exc
    assert not exc.transient and "127.0.0.1" in str(exc)
    assert f"the limit of {LIMIT} bytes (1 MiB)" in str(exc) and "max_reply_bytes=" in str(exc)
    return exc


@pytest.mark.parametrize("vendor", ALL)
def test_an_endless_body_ends_the_call_at_max_reply_bytes(vendor):
    exc = too_large(vendor, [b'{"id": "'], MiB, stream=False)
    assert "its body passed" in str(exc)


# The text pieces of each vendor's stream: the events before the first, and the one repeated.
_PIECES = {"openai": (1, 1), "anthropic": (3, 3), "ollama": (0, 0)}


@pytest.mark.parametrize("vendor", ALL)
def test_an_endless_stream_of_text_ends_the_call_at_max_reply_bytes(vendor):
    events = VENDORS[vendor].stream(Turn("y" * 3000))
    before, piece = _PIECES[vendor]
    exc = too_large(vendor, events[:before], events[piece].encode(), stream=True)
    assert "the text, tool-call arguments and reasoning it streamed passed" in str(exc)


def test_endless_streamed_tool_arguments_end_the_call_at_max_reply_bytes():
    events = VENDORS["openai"].stream(Turn("", (("c1", "lookup", "z" * 3000),)))
    exc = too_large("openai", events[:2], events[2].encode(), stream=True)
    assert "tool-call arguments" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_one_endless_event_of_a_stream_ends_the_call_at_max_reply_bytes(vendor):
    start = {"openai": b'data: {"choices": [{"delta": {"content": "',
             "anthropic": b'event: content_block_delta\ndata: {"type": "content_block_delta", '
                          b'"index": 0, "delta": {"type": "text_delta", "text": "',
             "ollama": b'{"message": {"role": "assistant", "content": "'}[vendor]
    exc = too_large(vendor, [start], MiB, stream=True)
    assert "one event of its stream passed" in str(exc)


@pytest.mark.parametrize("vendor", ALL)
def test_a_20_mb_reply_is_within_the_default_limit(vendor):
    text = "x" * 20_000_000
    with FakeServer(scripted(VENDORS[vendor], [Turn(text)])) as srv:
        assert make(vendor, srv.url, timeout=60).complete(REQUEST).text == text


@pytest.mark.parametrize("vendor", ALL)
def test_a_20_mb_streamed_reply_is_within_the_default_limit(vendor):
    wire = VENDORS[vendor]
    text = "x" * 20_000_000
    with FakeServer(scripted(wire, [Turn(text)])) as srv:  # (three pieces of about 6.7 MB)
        assert make(vendor, srv.url, timeout=60, stream=True).complete(REQUEST).text == text
