"""A cap on the size of a model's reply: `max_reply_bytes=` bounds what one call reads.

Role:       `size_hook(limit, streamed)` makes an httpx response hook that wraps the body so
            that reading past the limit raises `ReplyTooLarge`: for a plain reply, its bytes;
            for a streamed one, the bytes of one event (SSE) or line (NDJSON), which is what the
            SDKs' decoders buffer; `Tally` counts what a streamed reply adds up to (text,
            tool-call arguments, reasoning) against the same limit. `Adapter` turns
            `ReplyTooLarge` into the `ReplyTooLargeError` naming the limit and how to raise it.
Emits:      nothing.
Invariants: a body is never read more than one network chunk past the limit, and its
            connection is closed when the limit is reached; an endless reply ends the call.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Iterator

from ._deadline import stream_class

DEFAULT_MAX_REPLY_BYTES = 32 * 2**20  # far above any model's output (a 20 MB reply passes)
_EVENT_TYPES = ("text/event-stream", "application/x-ndjson", "application/jsonl", "")


class ReplyTooLarge(Exception):
    """Raised inside a read: the reply passed `limit` bytes (`what` says which part of it)."""

    def __init__(self, limit: int, what: str):
        super().__init__(f"{what} passed {limit} bytes")
        self.limit, self.what = limit, what


class Tally:
    """The bytes (UTF-8) of the pieces a streamed reply accumulates, up to `limit`."""

    def __init__(self, limit: int):
        self.limit, self.total = limit, 0

    def add(self, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.total += len(piece) if piece.isascii() else \
                len(piece.encode("utf-8", "surrogatepass"))
            if self.total > self.limit:
                raise ReplyTooLarge(self.limit, "the text, tool-call arguments and reasoning "
                                                "it streamed")


def size_hook(limit: int, streamed: str | None) -> Callable[[ModuleType], Callable]:
    """For `sdk_http_client(also=...)`: given the httpx flavour, a response hook bounding the
    body. `streamed` is how the adapter's stream ends an event ("sse": a blank line,
    "ndjson": a line break), None for an adapter that does not stream. A body that is no
    stream (an error object, HTML from a proxy) is bounded as a whole."""

    def hook_for(http: ModuleType) -> Callable:
        def on_response(response: Any) -> None:
            ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
            per_event = streamed if ctype in _EVENT_TYPES else None
            response.stream = stream_class(http, _BoundedBody)(response.stream, limit, per_event)
        return on_response

    return hook_for


class _BoundedBody:
    """A response body that raises `ReplyTooLarge`, and closes, once it has passed `limit`
    bytes in all (`per_event` None) or since the last end of an event."""

    _http: ModuleType

    def __init__(self, inner: Any, limit: int, per_event: str | None):
        self._inner, self._limit, self._per_event = inner, limit, per_event

    def __iter__(self) -> Iterator[bytes]:
        pending, tail = 0, b""
        for chunk in self._inner:
            if self._per_event is None:
                pending += len(chunk)
            else:
                pending, tail = _since_event_end(pending, tail, chunk, self._per_event == "sse")
            if pending > self._limit:
                self.close()
                raise ReplyTooLarge(self._limit, "its body" if self._per_event is None else
                                    "one event of its stream")
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _since_event_end(pending: int, tail: bytes, chunk: bytes, sse: bool) -> tuple[int, bytes]:
    """The bytes read since the last end of an event (a blank line in SSE, whose lines end in
    CR, LF or CRLF; a line break in NDJSON), after `chunk`; `tail`, the last bytes before
    it, finds an end split across two chunks."""
    joined = tail + chunk
    text = joined.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if sse else joined
    end = text.rfind(b"\n\n" if sse else b"\n")
    if end < 0:
        return pending + len(chunk), joined[-3:]
    return len(text) - end - (2 if sse else 1), joined[-3:]
