"""std/tools implementations: the arithmetic evaluator (hostile inputs included), the path lookup,
the `_context` hook and the Effects clock, and `http_get` against a local server only.

Nothing here touches the outside network: every URL is 127.0.0.1 (a local `http.server` in a
thread) or a `.invalid` host that is refused before any connection is attempted.
"""
from __future__ import annotations

import http.server
import socket
import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

import afp_dsl as afp
from tests.fakes.server import QuietServer
from afp_dsl import stdtools
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers.mock import MockProvider
from afp_dsl.runtime import ToolContext
from afp_dsl.stdtools import (ToolError, calculate, evaluate_arithmetic, json_lookup, lookup,
                              parse_path)


# ---------------------------------------------------------------- calculate
@pytest.mark.parametrize("expr,value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("2 ** 10", 1024), ("-3 // 2", -2), ("7 % 3", 1),
    ("1 / 4", 0.25), ("-(-5)", 5), ("+4", 4), ("2 ** -1", 0.5), ("1.5e3 + 0.5", 1500.5),
    ("(10 ** 300) // 10 ** 299", 10), ("  42  ", 42), ("2 ** 3 ** 2", 512),
])
def test_calculate_evaluates_arithmetic(expr, value):
    assert evaluate_arithmetic(expr) == value
    assert calculate(expr) == {"expression": expr, "result": value}


@pytest.mark.parametrize("expr,fragment", [
    ("__import__('os').system('true')", "function call"),
    ("().__class__.__bases__", "attribute access"),
    ("x + 1", "`x` is not allowed"),
    ("abs(-1)", "function call"),
    ("lambda: 1", "lambda"),
    ("[1, 2][0]", "subscript"),
    ("[i for i in range(10)]", "listcomp"),
    ("'a' * 3", "not str values"),
    ("True + 1", "not bool values"),
    ("1j * 1j", "not complex values"),
    ("1 if 1 else 2", "ifexp"),
    ("1 << 100000", "lshift operator"),
    ("~1", "invert operator"),
    ("1 < 2", "compare"),
    ("(yield)", "`yield` is not allowed"),
    ("import os", "not an arithmetic expression"),
    ("1; 2", "not an arithmetic expression"),
])
def test_calculate_refuses_everything_but_arithmetic(expr, fragment):
    with pytest.raises(ToolError) as info:
        evaluate_arithmetic(expr)
    assert fragment in str(info.value)


@pytest.mark.parametrize("expr,fragment", [
    ("9 ** 9 ** 9", "exponent too large"),
    ("2 ** 100000", "exponent too large"),
    ("10 ** 5000", "too large"),
    ("(10 ** 1000) ** 5", "too large"),
    ("(9 ** 1000) * (9 ** 1000) * (9 ** 1000) * (9 ** 1000) * (9 ** 1000)", "too large"),
    ("2.0 ** 5000", "too large"),
    ("1e308 * 10", "not a finite number"),
    ("10 ** 400 / 3", "too large"),
    ("(-8) ** 0.5", "not a real number"),
    ("1 / 0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("0 ** -1", "division by zero"),
    ("1 + " * 200 + "1", "too long"),
    ("(" * 100 + "1" + "+1)" * 100, "nested too deeply"),
    ("-" * 400 + "1", "nested too deeply"),
    ("", "empty expression"),
    ("   ", "empty expression"),
])
def test_calculate_bounds_hostile_inputs(expr, fragment):
    with pytest.raises(ToolError) as info:
        evaluate_arithmetic(expr)
    assert fragment in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789+-*/%().e ejx_ab'\"[],:", max_size=80))
def test_calculate_never_raises_anything_but_a_tool_error(text):
    try:
        value = evaluate_arithmetic(text)
    except ToolError:
        return
    assert type(value) in (int, float)


# ---------------------------------------------------------------- path lookup
DOC = {"order": {"id": "AB-12", "lines": [{"sku": "X1", "qty": 2}, {"sku": "Y7", "qty": 5}]},
       "odd key.with dots": True, "0": "zero"}


@pytest.mark.parametrize("path,value", [
    ("order.id", "AB-12"), ("order.lines[0].sku", "X1"), ("order.lines[-1].qty", 5),
    ("$.order.lines[1].sku", "Y7"), ('["odd key.with dots"]', True), ('["0"]', "zero"),
    ("", DOC), ("$", DOC), ("order.lines", DOC["order"]["lines"]),
])
def test_lookup_follows_the_path(path, value):
    assert lookup(DOC, path) == value


@pytest.mark.parametrize("path,fragment", [
    ("order.total", "`$.order` has no key `total`; its keys: `id`, `lines`"),
    ("order.lines[2]", "has 2 items: no index 2"),
    ("order.id[0]", "is a string, not a list"),
    ("order.lines.sku", "is a list, not an object"),
    ("order..id", "bad path"), ("order.lines[0]sku", "bad path"), ("order.0", "bad path"),
    ("order[", "bad path"),
])
def test_lookup_failures_say_what_is_there(path, fragment):
    with pytest.raises(ToolError) as info:
        lookup(DOC, path)
    assert fragment in str(info.value)


def test_parse_path_segments():
    assert parse_path('a.b[0]["c d"][-2]') == ["a", "b", 0, "c d", -2]


def _context(facts=None, now=lambda: 7) -> ToolContext:
    return ToolContext("run-1", "a", "json_lookup", "call-1", 1, now, facts or {})


def test_json_lookup_reads_a_fact_or_json_text():
    ctx = _context({"order": DOC["order"], "note": "plain text"})
    assert json_lookup("lines[1].qty", fact="order", _context=ctx) == {"path": "lines[1].qty",
                                                                        "value": 5}
    assert json_lookup("a[0]", json_text='{"a": [9]}') == {"path": "a[0]", "value": 9}
    missing = "no fact `missing` in this agent's context; facts: `order`, `note`"
    for kwargs, fragment in [({"fact": "missing"}, missing),
                             ({"fact": "note"}, "is text, not JSON"),
                             ({"json_text": "{nope"}, "not valid JSON"),
                             ({"json_text": "[NaN]"}, "not valid JSON"),
                             ({"json_text": '{"x": -Infinity}'}, "not valid JSON"),
                             ({"json_text": '{"x": 1e400}'}, "not valid JSON"),
                             ({}, "exactly one of"),
                             ({"fact": "order", "json_text": "{}"}, "exactly one of")]:
        with pytest.raises(ToolError) as info:
            json_lookup("x", _context=ctx, **kwargs)
        assert fragment in str(info.value)


# ---------------------------------------------------------------- the `_context` hook and the clock
SPEC = textwrap.dedent("""
    import "std/tools" as std_tools
    agent a {
      system  = "s"
      tools   = [std_tools.current_time, std_tools.json_lookup, peek]
      context = [order]
    }
    fact order { data = { lines: [{ qty: 2 }, { qty: 5 }] } }
    tool peek {
      description = "Show what the host sees."
      input { x: string, ... }
    }
""")


class FixedClock:
    """An Effects clock answering one fixed instant (a stand-in for a host's wall clock)."""

    def __init__(self, start: int = 0):
        self.start = start

    def now(self) -> datetime:
        return datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def _run(script, clock=None, tools=None):
    effects = Effects(run_ids=counter_ids("t"))
    if clock is not None:
        effects = Effects(run_ids=counter_ids("t"), clock_factory=clock)
    agent = afp.load(SPEC).agent("a", provider=MockProvider(script), effects=effects,
                                 tools=tools or {})
    return agent.run("go")


def _returned(result, tool):
    return [e.payload for e in result.trace
            if e.kind == "tool.returned" and e.payload["tool"] == tool]


def test_current_time_reads_the_effects_clock():
    logical = _returned(_run([[("current_time", {})], "ok"]), "current_time")[0]
    assert logical["status"] == "success" and logical["result"]["clock"] == "logical"
    assert isinstance(logical["result"]["tick"], int)
    wall = _returned(_run([[("current_time", {"tz": "Europe/Paris"})], "ok"], clock=FixedClock),
                     "current_time")[0]["result"]
    assert wall == {"clock": "wall", "iso": "2026-03-04T06:06:07+01:00", "weekday": "Wednesday",
                    "timezone": "Europe/Paris"}
    bad = _returned(_run([[("current_time", {"tz": "Mars/Olympus"})], "ok"], clock=FixedClock),
                    "current_time")[0]
    assert bad["status"] == "failure"
    assert "unknown time zone `Mars/Olympus`" in bad["result"]["error"]


class NaiveClock(FixedClock):
    """A host clock answering a naive reading (UTC by the tool's contract)."""

    def now(self) -> datetime:
        return datetime(2026, 3, 4, 5, 6, 7)


class KarachiClock(FixedClock):
    """A host clock answering the same instant as FixedClock, in its own zone (+05:00)."""

    def now(self) -> datetime:
        return datetime(2026, 3, 4, 10, 6, 7, tzinfo=timezone(timedelta(hours=5)))


@pytest.fixture
def tokyo_local_time(monkeypatch):
    """The machine's local zone set to +09:00, so that a naive reading taken as local shows."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("clock", [NaiveClock, KarachiClock])
def test_current_time_answers_utc_or_the_zone_asked_whatever_the_clocks_zone(clock,
                                                                             tokyo_local_time):
    """A naive reading is UTC, not the machine's local time; without `tz` the answer is UTC."""
    utc = _returned(_run([[("current_time", {})], "ok"], clock=clock), "current_time")[0]["result"]
    assert utc["iso"] == "2026-03-04T05:06:07+00:00" and utc["timezone"] == "UTC"
    paris = _returned(_run([[("current_time", {"tz": "Europe/Paris"})], "ok"], clock=clock),
                      "current_time")[0]["result"]
    assert paris["iso"] == "2026-03-04T06:06:07+01:00"


def test_json_lookup_reads_the_agents_fact_through_the_context():
    out = _returned(_run([[("json_lookup", {"path": "lines[1].qty", "fact": "order"})], "ok"]),
                    "json_lookup")[0]
    assert out["status"] == "success" and out["result"] == {"path": "lines[1].qty", "value": 5}


def test_a_host_callable_declaring_context_gets_it_and_the_model_cannot_forge_it():
    seen = []

    def peek(x, _context):
        seen.append(_context)
        return "ok"

    _run([[("peek", {"x": "1", "_context": "forged"})], "done"], tools={"peek": peek})
    assert len(seen) == 1 and isinstance(seen[0], ToolContext)
    assert (seen[0].run_id, seen[0].agent, seen[0].tool) == ("t-1", "a", "peek")
    assert seen[0].fact("order") == {"lines": [{"qty": 2}, {"qty": 5}]}
    assert seen[0].fact("nope") is None


def test_a_host_callable_without_context_is_called_as_before():
    got = []
    _run([[("peek", {"x": "1"})], "done"], tools={"peek": lambda x: got.append(x) or "ok"})
    assert got == ["1"]


# ---------------------------------------------------------------- http_get (local server only)
class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list = []

    def do_GET(self):  # noqa: N802 - the http.server name
        type(self).hits.append(self.path)
        port = self.server.server_address[1]
        routes = {
            "/hello": (200, {"Content-Type": "text/plain; charset=utf-8"}, "hello, world".encode()),
            "/big": (200, {"Content-Type": "text/plain"}, b"x" * 5000),
            "/missing": (404, {}, b"no"),
            "/out": (302, {"Location": "http://evil.example.invalid/steal"}, b""),
            "/in": (302, {"Location": f"http://127.0.0.1:{port}/hello"}, b""),
            "/via-localhost": (302, {"Location": f"http://localhost:{port}/hello"}, b""),
        }
        status, headers, body = routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep the test output quiet
        pass


@pytest.fixture
def server():
    _Handler.hits = []
    srv = QuietServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def _refused(fn, url, fragment):
    with pytest.raises(ToolError) as info:
        fn(url)
    assert fragment in str(info.value)


def test_http_get_is_off_by_default(monkeypatch, server):
    monkeypatch.delenv(stdtools.ALLOW_ENV, raising=False)
    _refused(stdtools.http_get, f"http://{server}/hello", "http_get is off")
    _refused(stdtools.make_http_get(allow=[]), f"http://{server}/hello", "http_get is off")
    assert _Handler.hits == []


def test_http_get_fetches_an_allowed_host(monkeypatch, server):
    monkeypatch.setenv(stdtools.ALLOW_ENV, f"example.org, {server}")
    out = stdtools.http_get(f"http://{server}/hello")
    assert out == {"url": f"http://{server}/hello", "status": 200,
                   "content_type": "text/plain; charset=utf-8", "body": "hello, world",
                   "truncated": False}
    by_name = stdtools.make_http_get(allow=["127.0.0.1"])  # a bare host allows any port
    assert by_name(f"http://{server}/hello")["body"] == "hello, world"


def test_http_get_refuses_hosts_not_on_the_list(server):
    get = stdtools.make_http_get(allow=["localhost"])
    _refused(get, f"http://{server}/hello", "`127.0.0.1` is not on the allow-list")
    _refused(get, "http://localhost@evil.example.invalid/", "`evil.example.invalid` is not on")
    _refused(get, "file:///etc/passwd", "only http:// and https://")
    _refused(get, "ftp://localhost/x", "only http:// and https://")
    port_only = stdtools.make_http_get(allow=["127.0.0.1:1"])
    _refused(port_only, f"http://{server}/hello", "not on the allow-list")
    assert _Handler.hits == []


def test_http_get_refuses_redirects_off_the_list_and_follows_those_on_it(server):
    get = stdtools.make_http_get(allow=[server])
    _refused(get, f"http://{server}/out", "refused a redirect to `evil.example.invalid`")
    _refused(get, f"http://{server}/via-localhost", "refused a redirect to `localhost`")
    assert get(f"http://{server}/in")["body"] == "hello, world"
    assert _Handler.hits == ["/out", "/via-localhost", "/in", "/hello"]


def test_http_get_caps_the_size_and_fails_on_http_errors(server):
    get = stdtools.make_http_get(allow=[server], max_bytes=1000)
    out = get(f"http://{server}/big")
    assert out["truncated"] is True and out["body"] == "x" * 1000
    _refused(get, f"http://{server}/missing", "answered HTTP 404")


def test_http_get_times_out_on_a_silent_server():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection into the backlog, never answers
    try:
        port = silent.getsockname()[1]
        get = stdtools.make_http_get(allow=[f"127.0.0.1:{port}"], timeout=0.2)
        _refused(get, f"http://127.0.0.1:{port}/", "failed")
    finally:
        silent.close()
