"""A total deadline for each HTTP call of the vendor SDKs: `timeout=` bounds the whole call.

Role:       `deadline_hooks(http, timeout)` gives httpx `event_hooks` (for `httpx` or `httpx2`,
            the module the SDK sends with) that stamp each request with a monotonic deadline and
            wrap the response body so that every chunk read after the deadline raises that
            module's `ReadTimeout`. The SDKs' own `timeout=` limits each socket read only, so a
            server trickling one byte a second, or a stream of keep-alive comments, would hang a
            run forever. (The adapters turn SDK retries off, so one LLM call is one request.)
            Before the headers have all arrived no hook runs, so a `Watchdog` (a timer armed
            when the request is sent, disarmed when the headers arrive or the call ends)
            closes the connections of the client's transports once the deadline passes
            (`watch_client`): a server trickling its *headers* is cut off too, and the adapter
            reports the failure as the timeout it is (`Watchdog.fired`).
            `sdk_http_client(sdk, timeout, watchdog, also)` is an OpenAI/Anthropic SDK client
            with these hooks (and `also`, such as `_limits`' size cap); `is_http_timeout(exc)`
            recognises a timeout wherever it surfaces, `is_http_transport_error(exc)` any other
            broken connection.
Emits:      nothing; a late call raises `ReadTimeout`, which the adapters map to the transient
            `ProviderTimeoutError`.
Invariants: the clock is injected (`time.monotonic` by default) and read only here, at the
            effect boundary; the deadline is checked when the headers arrive and after each
            body chunk, and the per-read timeout still cuts off a silent server, so a call
            outlives its deadline by at most one read; a timed-out body is closed at once.
"""
from __future__ import annotations

import sys
import threading
import time
from types import ModuleType
from typing import Any, Callable, Iterator

Clock = Callable[[], float]
_KEY = "afp.deadline"  # the request extension holding the deadline (httpcore ignores it)
_STREAM_CLASSES: dict[tuple, type] = {}


class Watchdog:
    """The deadline of the header phase: `arm()` when a request is sent starts a timer of
    `timeout` seconds; if it runs out before `answered()` (the headers arrived, which `heard`
    then says) or `disarm()` (the call ended), `close` runs (the client's own transport: its open connections are closed, so the blocked
    read ends at the latest one read later) and `fired` stays True in that thread until its next
    `arm()`. Each thread has its own timer (an adapter may serve calls from several threads at
    once, as `acomplete` does); closing the transport also drops the connections of the other
    calls in flight, which fail as transient connection errors.
    Speed: one timer thread per model call, which takes seconds anyway."""

    def __init__(self, timeout: float, close: Callable[[], Any] | None = None,
                 timer: Callable[..., Any] = threading.Timer):
        self.timeout, self.close, self._timer_cls = timeout, close, timer
        self.http: ModuleType | None = None  # the httpx flavour of the watched transport
        self._local = threading.local()
        self._lock = threading.Lock()

    @property
    def fired(self) -> bool:
        """Whether this thread's last armed call was cut off."""
        arm = getattr(self._local, "arm", None)
        return arm is not None and arm.fired

    @property
    def heard(self) -> bool:
        """Whether the response headers of this thread's last armed call arrived: a connection
        that breaks after that broke in the middle of a reply, not before the server answered."""
        arm = getattr(self._local, "arm", None)
        return arm is not None and arm.heard

    def answered(self) -> None:
        """The headers arrived: noted (`heard`), and the timer disarmed."""
        arm = getattr(self._local, "arm", None)
        if arm is not None:
            arm.heard = True
        self.disarm()

    def arm(self) -> None:
        self.disarm()
        arm = _Arm()
        arm.timer = self._timer_cls(_delay(self.timeout), self._fire, (arm,))
        arm.timer.daemon = True
        self._local.arm = arm
        arm.timer.start()

    def disarm(self) -> None:
        arm = getattr(self._local, "arm", None)
        if arm is not None and not arm.done:
            with self._lock:
                arm.done = True
            arm.timer.cancel()

    def timeout_error(self) -> Exception:
        """What a call cut off by this watchdog failed with, as the adapters classify it: the
        `ReadTimeout` of the transport's httpx flavour."""
        message = f"no response headers within {self.timeout:g}s (the deadline of the whole call)"
        return self.http.ReadTimeout(message) if self.http is not None else TimeoutError(message)

    def _fire(self, arm: "_Arm") -> None:
        with self._lock:
            if arm.done:  # disarmed meanwhile
                return
            arm.done = arm.fired = True
        if self.close is not None:
            try:
                self.close()
            except Exception:  # noqa: BLE001 - closing is best effort; the read still ends
                pass


def _delay(timeout: float) -> float:
    """`timeout` as a timer can wait it: capped at the longest wait the platform allows (a
    longer one overflows in the timer's thread); 0, at once, when it is no number of seconds
    (NaN, negative: the adapters refuse those, but a deadline never becomes a hang)."""
    return min(timeout, threading.TIMEOUT_MAX) if timeout >= 0 else 0.0


class _Arm:
    """One armed call of a `Watchdog`: its timer, and whether it ended (`done`) or fired."""

    __slots__ = ("timer", "done", "fired", "heard")

    def __init__(self) -> None:
        self.timer: Any = None
        self.done = self.fired = self.heard = False


def deadline_hooks(http: ModuleType, timeout: float, clock: Clock = time.monotonic,
                   watchdog: Watchdog | None = None) -> dict:
    """httpx `event_hooks` that fail a request with `http.ReadTimeout` once `timeout` seconds
    have passed since it was sent: checked when the headers arrive and after each body chunk;
    before the headers, by `watchdog` (armed here, disarmed when they arrive)."""

    def on_request(request: Any) -> None:
        request.extensions[_KEY] = clock() + timeout
        if watchdog is not None:
            watchdog.arm()

    def on_response(response: Any) -> None:
        if watchdog is not None:
            watchdog.answered()
        deadline = response.request.extensions.get(_KEY)
        if deadline is None:
            return
        _check(http, response.request, deadline, timeout, clock)
        response.stream = stream_class(http, _DeadlineStream)(response.stream, response.request,
                                                             deadline, timeout, clock)

    return {"request": [on_request], "response": [on_response]}


def sdk_http_client(sdk: ModuleType, timeout: float, watchdog: Watchdog | None = None,
                    also: Callable[[ModuleType], Callable] | None = None) -> Any:
    """The OpenAI/Anthropic SDK's own default httpx client (its limits, redirects, socket
    options and proxies from the environment) with the deadline hooks, for `http_client=`;
    works whichever httpx flavour the SDK is built on. With a `watchdog`, it may close the
    client's transports (`watch_client`); `also(http)` makes a response hook run after them."""
    cls = sdk.DefaultHttpxClient
    hooks = deadline_hooks(http_module(cls), timeout, watchdog=watchdog)
    if also is not None:
        hooks["response"].append(also(http_module(cls)))
    client = cls(event_hooks=hooks)
    if watchdog is not None:
        watch_client(client, watchdog)
    return client


def watch_client(client: Any, watchdog: Watchdog) -> None:
    """Let `watchdog` close the connections of `client`'s transports when it fires: the default
    one and those mounted for proxies from the environment. httpx has no public accessor for
    them, so this reads its `_transport` and `_mounts` (the same since httpx 0.18); a client
    without them leaves the watchdog unable to cut a call, only to name its failure (`fired`).
    The client's transports are left as its library made them (socket options, limits)."""
    watchdog.http = http_module(type(client))
    mounts = getattr(client, "_mounts", None)
    found = [getattr(client, "_transport", None)] + (list(mounts.values()) if isinstance(mounts, dict) else [])
    transports = [t for t in found if callable(getattr(t, "close", None))]
    if transports:
        watchdog.close = lambda: _close_all(transports)


def _close_all(transports: list) -> None:
    for transport in transports:
        try:
            transport.close()
        except Exception:  # noqa: BLE001 - best effort: the others still close
            pass


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


def is_http_transport_error(exc: BaseException) -> bool:
    """Whether `exc` is a transport failure of `httpx` or `httpx2` that is not a timeout: the
    connection refused, reset, or closed in the middle of a streamed body (which the SDKs let
    through unwrapped)."""
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.TransportError) \
                and not isinstance(exc, module.TimeoutException):
            return True
    return False


def _check(http: ModuleType, request: Any, deadline: float, timeout: float,
           clock: Clock) -> None:
    if clock() > deadline:
        raise http.ReadTimeout(f"no complete reply within {timeout:g}s (the deadline of the "
                               f"whole call)", request=request)


def stream_class(http: ModuleType, body: type) -> type:
    """`body` (a response body wrapper) as a `SyncByteStream` subclass of `http`: httpx checks
    the type before reading a body."""
    key = (http.__name__, body)
    cls = _STREAM_CLASSES.get(key)
    if cls is None:
        cls = type(body.__name__.lstrip("_"), (body, http.SyncByteStream), {"_http": http})
        _STREAM_CLASSES[key] = cls
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
