"""A total deadline for each HTTP call of the vendor SDKs: `timeout=` bounds the whole call.

Role:       `deadline_hooks(http, timeout)` gives httpx `event_hooks` (for `httpx` or `httpx2`,
            the module the SDK sends with) that stamp each request with a monotonic deadline and
            wrap the response body so that every chunk read after the deadline raises that
            module's `ReadTimeout`. The SDKs' own `timeout=` limits each socket read only, so a
            server trickling one byte a second, or a stream of keep-alive comments, would hang a
            run forever. (The adapters turn SDK retries off, so one LLM call is one request.)
            `sdk_http_client(sdk, timeout)` is an OpenAI/Anthropic SDK client with these
            hooks; `is_http_timeout(exc)` recognises a timeout wherever it surfaces.
Emits:      nothing; a late call raises `ReadTimeout`, which the adapters map to the transient
            `ProviderTimeoutError`.
Invariants: the clock is injected (`time.monotonic` by default) and read only here, at the
            effect boundary; the deadline is checked when the headers arrive and after each
            body chunk, and the per-read timeout still cuts off a silent server, so a call
            outlives its deadline by at most one read; a timed-out body is closed at once.
"""
from __future__ import annotations

import sys
import time
from types import ModuleType
from typing import Any, Callable, Iterator

Clock = Callable[[], float]
_KEY = "afp.deadline"  # the request extension holding the deadline (httpcore ignores it)
_STREAM_CLASSES: dict[str, type] = {}


def deadline_hooks(http: ModuleType, timeout: float, clock: Clock = time.monotonic) -> dict:
    """httpx `event_hooks` that fail a request with `http.ReadTimeout` once `timeout` seconds
    have passed since it was sent: checked when the headers arrive and after each body chunk."""

    def on_request(request: Any) -> None:
        request.extensions[_KEY] = clock() + timeout

    def on_response(response: Any) -> None:
        deadline = response.request.extensions.get(_KEY)
        if deadline is None:
            return
        _check(http, response.request, deadline, timeout, clock)
        response.stream = _stream_class(http)(response.stream, response.request, deadline,
                                              timeout, clock)

    return {"request": [on_request], "response": [on_response]}


def sdk_http_client(sdk: ModuleType, timeout: float) -> Any:
    """The OpenAI/Anthropic SDK's own default httpx client (its limits and redirects) with the
    deadline hooks, for `http_client=`; works whichever httpx flavour the SDK is built on."""
    cls = sdk.DefaultHttpxClient
    return cls(event_hooks=deadline_hooks(http_module(cls), timeout))


def http_module(client_cls: type) -> ModuleType:
    """The httpx flavour (`httpx` or `httpx2`) a client class derives from."""
    for base in client_cls.__mro__:
        root = base.__module__.split(".")[0]
        if root in ("httpx", "httpx2"):
            return sys.modules[root]
    raise TypeError(f"{client_cls.__name__} is not an httpx client")


def is_http_timeout(exc: BaseException) -> bool:
    """Whether `exc` is a timeout of `httpx` or `httpx2` (only modules already imported can
    have raised one, so nothing is imported here)."""
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.TimeoutException):
            return True
    return False


def _check(http: ModuleType, request: Any, deadline: float, timeout: float,
           clock: Clock) -> None:
    if clock() > deadline:
        raise http.ReadTimeout(f"no complete reply within {timeout:g}s (the deadline of the "
                               f"whole call)", request=request)


def _stream_class(http: ModuleType) -> type:
    """A `SyncByteStream` subclass of `http` (httpx checks the type before reading a body)."""
    cls = _STREAM_CLASSES.get(http.__name__)
    if cls is None:
        cls = type("DeadlineStream", (_DeadlineStream, http.SyncByteStream), {"_http": http})
        _STREAM_CLASSES[http.__name__] = cls
    return cls


class _DeadlineStream:
    """A response body that raises `ReadTimeout` at the first chunk read after the deadline
    (keep-alive comments and trickled bytes are chunks too) and then closes the connection."""

    _http: ModuleType

    def __init__(self, inner: Any, request: Any, deadline: float, timeout: float, clock: Clock):
        self._inner, self._request = inner, request
        self._deadline, self._timeout, self._clock = deadline, timeout, clock

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            try:
                _check(self._http, self._request, self._deadline, self._timeout, self._clock)
            except Exception:
                self.close()
                raise
            yield chunk

    def close(self) -> None:
        self._inner.close()
