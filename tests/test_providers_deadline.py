"""`timeout=` is a deadline for the whole LLM call, not only for each socket read: a server that
trickles bytes, or a stream of keep-alive comments only, ends in ProviderTimeoutError (all three
adapters, plain and streamed), which `with_retry` retries; and the deadline hooks, on a fake
clock."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from afp_dsl.providers import _deadline as d
from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, Request
from afp_dsl.providers.resilience import with_retry
from tests.fakes.clients import make
from tests.fakes.server import FakeServer, Response

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.timeout(120)

TIMEOUT = 1.0   # the adapters' timeout= in these tests (seconds)
GAP = 0.2       # the server sends something this often: each read is far below TIMEOUT
BOUND = 20.0    # a call that has not ended by then hangs (generous; it ends near 1-2 s)
REQUEST = Request("Be brief.", [Message("user", "hi")], (), None, 1)


def trickling(piece: bytes, content_type: str):
    """A handler answering 200 and then `piece` every GAP seconds until the server stops."""
    stop = threading.Event()

    def pieces():
        while not stop.is_set():
            yield piece
            time.sleep(GAP)

    def handler(_rec):
        return Response(chunks=pieces(), content_type=content_type)

    return handler, stop


def ends(fn) -> BaseException | None:
    """Run `fn` in a daemon thread; the exception it raised, or fail if it is still running
    after BOUND seconds (the bug: it never ends)."""
    box: dict = {}

    def run():
        try:
            fn()
            box["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BOUND)
    assert not worker.is_alive(), f"the call still runs after {BOUND:g}s: it hangs"
    return box["error"]


def call_slow_server(vendor: str, stream: bool, piece: bytes, content_type: str):
    handler, stop = trickling(piece, content_type)
    with FakeServer(handler) as srv:
        try:
            p = make(vendor, srv.url, stream=stream, timeout=TIMEOUT)
            return ends(lambda: p.complete(REQUEST))
        finally:
            stop.set()


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_trickling_server_times_out(vendor, stream):
    exc = call_slow_server(vendor, stream, b" ", "application/json")
    assert isinstance(exc, h.ProviderTimeoutError), repr(exc)
    assert exc.transient and f"within {TIMEOUT:g}s" in str(exc) and "timeout=" in str(exc)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_keep_alive_only_stream_times_out(vendor):
    exc = call_slow_server(vendor, True, b": keepalive\n\n", "text/event-stream")
    assert isinstance(exc, h.ProviderTimeoutError), repr(exc)
    assert "timeout=" in str(exc)


def test_a_deadline_timeout_is_retried():
    handler, stop = trickling(b" ", "application/json")
    with FakeServer(handler) as srv:
        try:
            inner = make("openai", srv.url, timeout=TIMEOUT)
            p = with_retry(inner, max_attempts=2, sleep=lambda _s: None)
            exc = ends(lambda: p.complete(REQUEST))
        finally:
            stop.set()
    assert isinstance(exc, h.ProviderTimeoutError) and "gave up after 2 attempts" in str(exc)
    assert [e.kind for e in p.events if e.kind == "llm.retry"] == ["llm.retry"]
    assert len(srv.requests) == 2


# ---------------------------------------------------------------- the hooks, on a fake clock
class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Body(httpx.SyncByteStream):
    """A body that advances the fake clock by `step` per chunk and records its closing."""

    def __init__(self, clock: Clock, step: float, pieces: int):
        self.clock, self.step, self.pieces, self.closed = clock, step, pieces, False

    def __iter__(self):
        for _ in range(self.pieces):
            self.clock.now += self.step
            yield b"x"

    def close(self) -> None:
        self.closed = True


def _client(clock: Clock, bodies: list, step: float, pieces: int):
    def reply(_req):
        bodies.append(Body(clock, step, pieces))
        return httpx.Response(200, stream=bodies[-1])

    return httpx.Client(transport=httpx.MockTransport(reply),
                        event_hooks=d.deadline_hooks(httpx, 5.0, clock))


def test_hooks_fail_a_body_that_outlives_the_deadline_and_close_it():
    clock, bodies = Clock(), []
    client = _client(clock, bodies, 1.0, 100)
    with pytest.raises(httpx.ReadTimeout, match="within 5s"):
        client.get("http://test/")
    assert clock.now == 106.0  # the first chunk after the deadline ends it
    with client.stream("GET", "http://test/") as response:
        with pytest.raises(httpx.ReadTimeout):
            response.read()
        assert bodies[-1].closed  # the connection is released at once, not at the end


def test_hooks_let_a_timely_reply_through():
    clock, bodies = Clock(), []
    assert _client(clock, bodies, 1.0, 4).get("http://test/").content == b"xxxx"


def test_hooks_fail_late_headers():
    clock = Clock()

    def slow(req):
        clock.now += 6.0
        return httpx.Response(200, content=b"{}")

    client = httpx.Client(transport=httpx.MockTransport(slow),
                          event_hooks=d.deadline_hooks(httpx, 5.0, clock))
    with pytest.raises(httpx.ReadTimeout):
        client.get("http://test/")


def test_is_http_timeout_knows_both_flavours():
    assert d.is_http_timeout(httpx.ReadTimeout("x"))
    assert not d.is_http_timeout(TimeoutError("x")) and not d.is_http_timeout(ValueError())
    assert d.http_module(httpx.Client) is httpx


# ---------------------------------------------------------------- headers trickled
class HeaderTrickler:
    """A raw TCP server: for the first `trickled` connections, a status line and then one byte
    of a header every GAP seconds (the headers never end); later connections get `answer`, a
    whole HTTP response. Counts the connections it accepted."""

    def __init__(self, trickled: int = 10 ** 6, answer: bytes = b""):
        self.trickled, self.answer, self.accepted = trickled, answer, 0
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._one, args=(conn, self.accepted), daemon=True).start()

    def _one(self, conn: socket.socket, nth: int) -> None:
        try:
            conn.recv(65536)
            if nth > self.trickled:
                conn.sendall(self.answer)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self.stop.is_set():
                conn.sendall(b"x")
                time.sleep(GAP)
        except OSError:
            pass
        finally:
            conn.close()

    def __enter__(self) -> "HeaderTrickler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_server_trickling_its_headers_times_out(vendor, stream):
    """No hook runs before the headers end: the watchdog cuts the call off at the deadline."""
    with HeaderTrickler() as srv:
        p = make(vendor, srv.url, stream=stream, timeout=TIMEOUT)
        started = time.monotonic()
        exc = ends(lambda: p.complete(REQUEST))
        took = time.monotonic() - started
    assert isinstance(exc, h.ProviderTimeoutError), repr(exc)
    assert exc.transient and f"within {TIMEOUT:g}s" in str(exc) and "timeout=" in str(exc)
    assert took < TIMEOUT + 5 * GAP + 2.0, took  # the deadline, and at most one read more


def test_after_a_header_timeout_the_next_call_opens_a_new_connection():
    body = json.dumps({"id": "c", "object": "chat.completion", "model": "m", "created": 0,
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "hello"}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    with HeaderTrickler(trickled=1, answer=answer) as srv:
        p = make("openai", srv.url, timeout=TIMEOUT)
        assert isinstance(ends(lambda: p.complete(REQUEST)), h.ProviderTimeoutError)
        reply = p.complete(REQUEST)
    assert reply.text == "hello" and srv.accepted == 2
    assert not p.watchdog.fired


class FakeTimer:
    """`threading.Timer` that fires only when the test says so."""

    made: list = []

    def __init__(self, interval, function, args=()):
        self.interval, self.function, self.args = interval, function, args
        self.cancelled = self.daemon = False
        FakeTimer.made.append(self)

    def fire(self) -> None:
        self.function(*self.args)

    def start(self) -> None:
        pass

    def cancel(self) -> None:
        self.cancelled = True


def test_the_watchdog_fires_only_while_armed():
    closed = []
    dog = d.Watchdog(5.0, lambda: closed.append(1), timer=FakeTimer)
    dog.arm()
    first = FakeTimer.made[-1]
    assert first.interval == 5.0 and first.daemon
    dog.disarm()
    assert first.cancelled
    first.fire()  # a timer that ran out just as it was cancelled does nothing
    assert not dog.fired and closed == []
    dog.arm()
    FakeTimer.made[-1].fire()
    assert dog.fired and closed == [1]
    dog.arm()  # the next request starts clean
    assert not dog.fired and FakeTimer.made[-2] is not FakeTimer.made[-1]


def test_a_watchdog_whose_close_fails_still_reports_the_timeout():
    def broken():
        raise OSError("already closed")

    dog = d.Watchdog(1.0, broken, timer=FakeTimer)
    dog.arm()
    FakeTimer.made[-1].fire()
    assert dog.fired
    assert isinstance(dog.timeout_error(), TimeoutError)  # no transport: the builtin timeout
    dog.http = httpx
    assert d.is_http_timeout(dog.timeout_error())


def test_each_thread_has_its_own_watch():
    """Calls from two threads at once (as `acomplete` makes them): one call's headers arriving
    does not disarm the other's timer, and only the thread whose call was cut off sees it."""
    dog = d.Watchdog(1.0, lambda: None, timer=FakeTimer)
    armed = threading.Event()
    seen: dict = {}

    def other():
        dog.arm()
        seen["timer"] = FakeTimer.made[-1]
        armed.set()

    worker = threading.Thread(target=other)
    worker.start()
    armed.wait(5)
    worker.join(5)
    dog.arm()
    dog.disarm()  # this thread's headers arrived
    assert not seen["timer"].cancelled
    seen["timer"].fire()  # the other thread's call ran out
    assert not dog.fired  # not this thread's


# ---------------------------------------------------------------- proxies from the environment
def _proxy_env(monkeypatch, url: str) -> None:
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, url)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_a_proxy_from_the_environment_is_still_used(vendor, monkeypatch):
    """The adapters keep the clients their SDKs make (proxies from the environment, socket
    options); the watchdog only learns their transports. The request must reach the proxy."""
    from urllib.parse import urlsplit

    import attrs as attrs_
    from tests.fakes.vendors import VENDORS, Turn, scripted

    inner = scripted(VENDORS[vendor], [Turn("via the proxy")])

    def proxy(rec):  # a forward proxy sees the absolute URL: serve its path
        return inner(attrs_.evolve(rec, path=urlsplit(rec.path).path))

    with FakeServer(proxy) as srv:
        _proxy_env(monkeypatch, srv.url)
        p = make(vendor, "http://upstream.invalid:9", timeout=5.0)
        reply = p.complete(REQUEST)
    assert reply.text == "via the proxy"
    assert srv.requests and srv.requests[0].path.startswith("http://upstream.invalid:9/")


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_a_proxy_trickling_its_headers_is_cut_off_too(vendor, monkeypatch):
    with HeaderTrickler() as srv:
        _proxy_env(monkeypatch, srv.url)
        p = make(vendor, "http://upstream.invalid:9", timeout=TIMEOUT)
        exc = ends(lambda: p.complete(REQUEST))
    assert isinstance(exc, h.ProviderTimeoutError), repr(exc)
    assert srv.accepted >= 1


def test_watch_client_closes_every_transport_and_survives_a_failing_one():
    closed = []

    class T:
        def __init__(self, name, fails=False):
            self.name, self.fails = name, fails

        def close(self):
            closed.append(self.name)
            if self.fails:
                raise OSError("gone")

    class Client(httpx.Client):
        pass

    client = Client()
    client._transport = T("default", fails=True)
    client._mounts = {"http://": T("proxy"), "https://": None}
    dog = d.Watchdog(1.0, timer=FakeTimer)
    d.watch_client(client, dog)
    assert dog.http is httpx
    dog.arm()
    FakeTimer.made[-1].fire()
    assert dog.fired and closed == ["default", "proxy"]


@pytest.mark.parametrize("timeout", [1e12, float("inf"), float("nan"), -1.0])
def test_the_watchdog_timer_never_overflows(timeout, monkeypatch):
    """A timer longer than the platform can wait is capped; one that is no number of seconds
    runs out at once (never a hang, never a traceback from the timer's thread)."""
    dog = d.Watchdog(timeout, timer=FakeTimer)
    dog.arm()
    assert 0 <= FakeTimer.made[-1].interval <= threading.TIMEOUT_MAX
    errors: list = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    dog = d.Watchdog(timeout)  # a real timer: its thread waits without an OverflowError
    dog.arm()
    time.sleep(0.05)
    dog.disarm()
    assert errors == []


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("timeout,error", [
    (float("inf"), ValueError), (float("nan"), ValueError), (1e12, ValueError),
    (0, ValueError), (-1, ValueError), (None, TypeError), ("30", TypeError),
    (True, TypeError)])
def test_an_adapter_refuses_a_timeout_that_is_no_deadline(vendor, timeout, error):
    with pytest.raises(error, match=r"`timeout` (takes|must be).* seconds"):
        make(vendor, "http://127.0.0.1:9", timeout=timeout)


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "ollama"])
def test_an_adapter_takes_a_timeout_of_a_week(vendor):
    assert make(vendor, "http://127.0.0.1:9", timeout=7 * 24 * 3600).timeout == 604800.0
