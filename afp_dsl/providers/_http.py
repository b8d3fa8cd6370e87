"""Shared plumbing of the vendor adapters: tool-call arguments, events and the adapter base.

Role:       one place for what every adapter does alike: parsing tool-call arguments, telling
            a streamed answer that is no event stream (`check_event_stream`), the event
            hook (`subscribe`) that streaming and resilience feed, and `Adapter`, which holds
            the options every adapter takes (`timeout`, `stream`, `max_reply_bytes`) and turns
            whatever a vendor SDK raises into a classified `_errors` failure, secrets scrubbed.
Emits:      provider events `llm.chunk`, `llm.retry`, `llm.fallback`, `llm.circuit` (as
            `ProviderEvent` values to subscribers and the bounded `events` list).
Invariants: no message ever holds a secret (`scrub`); events never change a reply.
"""
from __future__ import annotations

import asyncio
import collections
import json
from typing import Any, Callable, Mapping

import attrs

from ..frozen import a_type, thaw
from ..trace import finite
from ._deadline import Watchdog, is_http_transport_error, sdk_http_client
from ._errors import (BadToolArgumentsError, ProviderFailure, body_error, clip, error_reply,
                      malformed, reply_cut, scrub, too_large)
from ._limits import ReplyTooLarge, Tally, size_hook
from ._options import MAX_TIMEOUT, a, count, flag, seconds, text
from .base import Provider, ProviderError, Request, ToolCall, UnreadCall

MAX_EVENTS = 1000


# ---------------------------------------------------------------- tool-call arguments
def read_call(provider: str, call_id: str, tool: str, raw: Any, *, cut: bool = False) -> ToolCall:
    """The `ToolCall`, or an `UnreadCall` for arguments that are not a JSON object: the run goes
    on and the model reads that its call was not executed, as for any invalid arguments
    (semantics §7). Arguments `cut` off at the token limit still end the run with
    `BadToolArgumentsError` naming `max_tokens`: asking again would only cut them again."""
    try:
        return ToolCall(call_id, tool, parse_arguments(provider, tool, raw, cut=cut))
    except BadToolArgumentsError:
        if cut:
            raise
        return UnreadCall(call_id, tool, {}, f"not a JSON object ({_shape(raw)})")


def parse_arguments(provider: str, tool: str, raw: Any, *, cut: bool = False) -> dict:
    """A tool call's arguments as a dict; a JSON string is decoded; anything else is an error
    (naming the token limit when the reply was `cut` there: the arguments were cut off too)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # (nested deeper than the decoder goes)
            value = None
        if isinstance(value, dict):
            return value
    fix = ("the reply was cut off at the token limit; raise max_tokens" if cut
           else "retry, or use a model with better tool-calling support")
    raise BadToolArgumentsError(  # (never quoting them: they may hold a secret, semantics §9)
        f"{provider}: the model called `{tool}` with arguments that are not a JSON object "
        f"({_shape(raw)}); {fix}", provider=provider)


def _shape(raw: Any) -> str:
    """What a tool call's arguments are, without a word of them."""
    if not isinstance(raw, str):
        return a_type(raw)
    try:
        value = json.loads(raw)
    except RecursionError:
        return f"{len(raw)} characters of JSON nested too deep to read"
    except ValueError:
        return f"{len(raw)} characters that are not valid JSON"
    return {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean",
            type(None): "JSON null"}.get(type(value), "a JSON number")


def reply_meta(reply: Any) -> tuple[str | None, str | None]:
    """The id and the model a vendor's reply (or stream chunk) names itself by, each as text or
    None (Ollama's replies carry no id)."""
    rid, model = getattr(reply, "id", None), getattr(reply, "model", None)
    return (rid if isinstance(rid, str) and rid else None,
            model if isinstance(model, str) and model else None)


def is_model(value: Any) -> bool:
    """Whether the SDK parsed `value` into one of its models (a pydantic model): the SDKs build
    replies without validating them, so a field of the wrong shape stays the raw JSON it was."""
    return hasattr(type(value), "model_fields")


def models(provider: str, url: str, value: Any, what: str) -> list:
    """`value`, a list of SDK models (None: none), or a MalformedReplyError naming `what`."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise malformed(provider, url, f"`{what}` is {a(value)}, not a list of objects")
    for item in value:
        model(provider, url, item, what)
    return value


def model(provider: str, url: str, value: Any, what: str) -> Any:
    """`value`, an SDK model, or a MalformedReplyError naming `what`."""
    if not is_model(value):
        raise malformed(provider, url, f"`{what}` holds {a(value)} where an object belongs")
    return value


def token_count(provider: str, url: str, value: Any, field: str) -> int:
    """A usage count of a reply: None is 0, anything `int` takes is that whole number; a
    negative count, or anything else, is a MalformedReplyError naming the field."""
    if value is None:
        return 0
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        n = None
    if n is None or n < 0:
        raise malformed(provider, url, f"the usage count `{field}` is {clip(repr(value), 40)}, "
                                       f"not a whole number of 0 or more")
    return n


def echoed_arguments(arguments: Any) -> Any:
    """A tool call's arguments as the history sends them back: plain JSON data, a NaN or an
    infinity (Python's `json` reads them in a reply; the call is then answered invalid) as the
    string "NaN", "Infinity" or "-Infinity", as the trace writes them: no API takes them bare."""
    return finite(thaw(arguments))


def dump_arguments(arguments: Any) -> str:
    return json.dumps(echoed_arguments(arguments), ensure_ascii=False)


def call_id(request: Request, index: int) -> str:
    """The id of a tool call the server gave none (the mock's scheme: call-N-I)."""
    return f"call-{request.call_number}-{index + 1}"




def check_event_stream(provider: str, url: str, response: Any) -> None:
    """Raise for a 200 answer to a streamed request that is no event stream, which the SDKs'
    SSE decoders read as a stream without events: a body that is an error object is the
    server's message (`error_reply`), anything else (HTML from a proxy, JSON) not that API
    (`malformed`). An event stream under another content type is read here and left to the
    SDK, which reads the body again from memory."""
    ctype = response.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() in ("", "text/event-stream"):
        return
    text = response.read().decode("utf-8", "replace")
    if any(line.startswith(("data:", "event:")) for line in text.splitlines()):
        return
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    error = body_error(body) if isinstance(body, Mapping) else None
    if error is not None:
        raise error_reply(provider, error)
    raise malformed(provider, url, f"a body of type `{ctype}`, not an event stream: {text}")


# ---------------------------------------------------------------- events
@attrs.frozen
class ProviderEvent:
    """What a provider reports besides its reply: `kind` is `llm.chunk` (data: text) or a
    resilience event (`llm.retry`, `llm.fallback`, `llm.circuit`); data is JSON-able."""

    kind: str
    provider: str
    data: Mapping[str, Any]


Hook = Callable[[ProviderEvent], None]


class Observable:
    """`subscribe(hook)` to receive every event (returns an unsubscribe function); `events`
    keeps the last MAX_EVENTS. Hook exceptions propagate: they are the subscriber's bugs."""

    def _init_events(self) -> None:
        self.events: collections.deque[ProviderEvent] = collections.deque(maxlen=MAX_EVENTS)
        self._hooks: list[Hook] = []

    def subscribe(self, hook: Hook) -> Callable[[], None]:
        self._hooks.append(hook)
        return lambda: self._hooks.remove(hook) if hook in self._hooks else None

    def _emit(self, kind: str, **data: Any) -> None:
        self._publish(ProviderEvent(kind, getattr(self, "name", "provider"), data))

    def _publish(self, event: ProviderEvent) -> None:
        self.events.append(event)
        for hook in list(self._hooks):
            hook(event)


def forward_events(source: Any, target: Observable) -> None:
    """Re-publish `source`'s events on `target` (wrappers pass inner events outward)."""
    if hasattr(source, "subscribe"):
        source.subscribe(target._publish)


# ---------------------------------------------------------------- adapter base
class Adapter(Observable, Provider):
    """A vendor adapter: `_call(request)` does the SDK work, `_map(exc)` classifies foreign
    exceptions. Anything unclassified becomes a plain ProviderError naming its type."""

    name = "provider"
    default_model = ""
    shown_url = ""  # the server's URL as messages show it (set by the subclass)

    def __init__(self, model: str | None, *, timeout: float, stream: bool,
                 max_reply_bytes: int, secrets: tuple[str | None, ...] = ()):
        self._init_events()
        self.model = text("model", model, example=f'model="{self.default_model}"')
        self.timeout = seconds("timeout", timeout, at_most=MAX_TIMEOUT)
        self.stream = flag("stream", stream)
        self.max_reply_bytes = count("max_reply_bytes", max_reply_bytes,
                                     example="max_reply_bytes=64 * 2**20")
        self._secrets = secrets
        self.watchdog = Watchdog(self.timeout)  # wired to the SDK client by the subclass

    def model_for(self, request: Request) -> str:
        """The adapter's own model wins, then the request's (the spec's), then the default."""
        return self.model or request.model or self.default_model

    def complete(self, request: Request):
        try:
            return self._call(request)
        except Exception as exc:  # noqa: BLE001 - the adapter boundary: classify everything
            raise self._failure(exc, request) from None
        finally:
            self.watchdog.disarm()

    def _failure(self, exc: Exception, request: Request) -> Exception:
        if self.watchdog.fired:  # cut off before the headers: whatever the read then raised
            exc = self.watchdog.timeout_error()
        if isinstance(exc, ProviderError) and not isinstance(exc, ProviderFailure):
            return ProviderError(scrub(str(exc), self._secrets))
        mapped = exc if isinstance(exc, ProviderFailure) else \
            self._too_large(exc) or self._cut_off(exc) or self._map(exc, request)
        return mapped.with_message(scrub(str(mapped), self._secrets))

    def _http_client(self, sdk: Any) -> Any:
        """The OpenAI/Anthropic SDK's own httpx client, bounded by `timeout` (the whole call)
        and `max_reply_bytes` (an SSE stream's events, or a plain reply's body)."""
        return sdk_http_client(sdk, self.timeout, self.watchdog, also=size_hook(
            self.max_reply_bytes, "sse" if self.stream else None))

    def tally(self) -> Tally:
        """A count of what one streamed reply accumulates, against `max_reply_bytes`."""
        return Tally(self.max_reply_bytes)

    def _too_large(self, exc: Exception) -> ProviderFailure | None:
        """The reply passed `max_reply_bytes` (the SDKs may wrap that as a connection error)."""
        big = next((e for e in (exc, exc.__cause__, exc.__context__)
                    if isinstance(e, ReplyTooLarge)), None)
        return None if big is None else too_large(self.name, self.shown_url, big.limit, big.what)

    def _cut_off(self, exc: Exception) -> ProviderFailure | None:
        """A broken connection after the response headers had arrived (the SDKs may wrap it as
        a connection error, as if the server never answered): the reply was cut off."""
        if not self.watchdog.heard:
            return None
        broken = next((e for e in (exc, exc.__cause__, exc.__context__)
                       if e is not None and is_http_transport_error(e)), None)
        return None if broken is None else reply_cut(self.name, self.shown_url, broken)

    async def acomplete(self, request: Request):
        return await asyncio.to_thread(self.complete, request)

    def _call(self, request: Request):  # pragma: no cover - interface
        raise NotImplementedError

    def _map(self, exc: Exception, request: Request) -> ProviderFailure:
        return ProviderFailure(f"{self.name}: unexpected {type(exc).__name__}: {clip(exc)}",
                               provider=self.name)

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, stream={self.stream})"
