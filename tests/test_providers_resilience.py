"""with_retry, with_fallback, with_circuit_breaker: bounded, visible, no real sleeping."""
from __future__ import annotations

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, Provider, ProviderError, Reply, Request
from afp_dsl.providers.mock import mock
from afp_dsl.providers.resilience import (CircuitOpenError, with_circuit_breaker, with_fallback,
                                          with_retry)

pytestmark = pytest.mark.timeout(60)
REQ = Request("", [Message("user", "hi")])


class Script(Provider):
    """Raises or returns the scripted items in order; counts calls."""

    def __init__(self, *items, name="fake"):
        self.items, self.calls, self.name = list(items), 0, name

    def complete(self, request):
        self.calls += 1
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return Reply(text=item)


def rate_limited(after=None):
    return h.RateLimitedError("rate limited", retry_after=after, status=429)


class Sleeps(list):
    def __call__(self, seconds):
        self.append(seconds)


# ---------------------------------------------------------------- retry
def test_retry_backs_off_exponentially_and_reports_each_retry():
    sleeps = Sleeps()
    inner = Script(h.ServerError("boom"), h.ProviderTimeoutError("slow"), "ok")
    p = with_retry(inner, 3, 0.5, sleep=sleeps)
    assert p.complete(REQ).text == "ok"
    assert sleeps == [0.5, 1.0] and inner.calls == 3
    assert [(e.kind, e.data["attempt"], e.data["error"]) for e in p.events] == [
        ("llm.retry", 1, "server_error"), ("llm.retry", 2, "timeout")]


def test_retry_honours_retry_after():
    sleeps = Sleeps()
    p = with_retry(Script(rate_limited(7), "ok"), 3, 0.5, sleep=sleeps)
    assert p.complete(REQ).text == "ok" and sleeps == [7.0]


def test_retry_is_bounded_and_says_so():
    sleeps = Sleeps()
    inner = Script(*[h.ServerError("server error 503") for _ in range(5)])
    with pytest.raises(h.ServerError, match=r"gave up after 3 attempts") as info:
        with_retry(inner, 3, 0.1, sleep=sleeps).complete(REQ)
    assert inner.calls == 3 and len(sleeps) == 2 and info.value.__cause__ is None


def test_retry_does_not_wait_for_a_retry_after_beyond_max_delay():
    sleeps = Sleeps()
    inner = Script(rate_limited(3600), "ok")
    with pytest.raises(h.RateLimitedError):
        with_retry(inner, 5, 0.1, sleep=sleeps, max_delay=60).complete(REQ)
    assert sleeps == [] and inner.calls == 1


@pytest.mark.parametrize("error", [h.MissingKeyError("k"), h.ModelNotFoundError("m"),
                                   h.BadToolArgumentsError("a"), ProviderError("plain")])
def test_retry_leaves_permanent_errors_alone(error):
    sleeps = Sleeps()
    inner = Script(error, "ok")
    with pytest.raises(type(error)):
        with_retry(inner, 3, sleep=sleeps).complete(REQ)
    assert inner.calls == 1 and sleeps == []


def test_retry_against_a_real_429_with_retry_after():
    pytest.importorskip("openai")
    from tests.fakes.clients import make
    from tests.fakes.server import FakeServer
    from tests.fakes.vendors import VENDORS, Turn, scripted
    wire = VENDORS["openai"]
    sleeps = Sleeps()
    with FakeServer(scripted(wire, [wire.error(429, "slow", (("retry-after", "2"),)),
                                    Turn("done")])) as srv:
        p = with_retry(make("openai", srv.url), 3, 0.5, sleep=sleeps)
        assert p.complete(REQ).text == "done"
    assert sleeps == [2.0] and len(srv.requests) == 2


# ---------------------------------------------------------------- fallback
def test_fallback_uses_the_backup_and_reports_it():
    primary, backup = Script(h.ServerUnreachableError("down"), name="openai"), mock(["from backup"])
    p = with_fallback(primary, backup)
    assert p.complete(REQ).text == "from backup"
    [event] = p.events
    assert event.kind == "llm.fallback"
    assert (event.data["from"], event.data["to"], event.data["error"]) == (
        "openai", "mock", "unreachable")


def test_fallback_is_not_used_when_the_primary_answers():
    backup = Script("never")
    assert with_fallback(Script("primary"), backup).complete(REQ).text == "primary"
    assert backup.calls == 0


def test_when_both_fail_the_error_names_both():
    p = with_fallback(Script(h.ServerError("first down"), name="openai"),
                      Script(h.ServerUnreachableError("second down"), name="ollama"))
    with pytest.raises(h.ServerUnreachableError) as info:
        p.complete(REQ)
    assert "second down" in str(info.value) and "first down" in str(info.value)


def test_inner_events_reach_the_outer_wrapper():
    sleeps = Sleeps()
    inner = with_retry(Script(h.ServerError("x"), h.ServerError("y"), name="a"), 2, sleep=sleeps)
    outer = with_fallback(inner, Script("b", name="b"))
    seen = []
    outer.subscribe(seen.append)
    assert outer.complete(REQ).text == "b"
    assert [e.kind for e in seen] == ["llm.retry", "llm.fallback"]


# ---------------------------------------------------------------- circuit breaker
class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_breaker_opens_after_n_failures_and_fails_fast():
    clock, inner = Clock(), Script(*[h.ServerError("503") for _ in range(3)], "late")
    p = with_circuit_breaker(inner, failures=3, cool_down=30, clock=clock)
    for _ in range(3):
        with pytest.raises(h.ServerError):
            p.complete(REQ)
    with pytest.raises(CircuitOpenError, match=r"open after 3 failures.*retries in 30s"):
        p.complete(REQ)
    assert inner.calls == 3 and p.state == "open"
    assert [e.data["state"] for e in p.events] == ["open"]


def test_the_breaker_half_opens_after_the_cool_down_and_closes_on_success():
    clock, inner = Clock(), Script(h.ServerError("a"), h.ServerError("b"), "ok")
    p = with_circuit_breaker(inner, failures=2, cool_down=10, clock=clock)
    for _ in range(2):
        with pytest.raises(h.ServerError):
            p.complete(REQ)
    clock.now += 9.5
    with pytest.raises(CircuitOpenError):
        p.complete(REQ)
    clock.now += 1
    assert p.complete(REQ).text == "ok" and p.state == "closed"
    assert [e.data["state"] for e in p.events] == ["open", "half_open", "closed"]


def test_a_failed_trial_reopens_the_circuit():
    clock = Clock()
    inner = Script(h.ServerError("a"), h.ServerError("b"), "never")
    p = with_circuit_breaker(inner, failures=1, cool_down=5, clock=clock)
    with pytest.raises(h.ServerError):
        p.complete(REQ)
    clock.now += 5
    with pytest.raises(h.ServerError):
        p.complete(REQ)
    with pytest.raises(CircuitOpenError):
        p.complete(REQ)
    assert inner.calls == 2


def test_the_breaker_ignores_errors_that_are_not_the_services():
    inner = Script(h.BadToolArgumentsError("bad"), h.BadToolArgumentsError("bad"), "ok")
    p = with_circuit_breaker(inner, failures=1, cool_down=5, clock=Clock())
    for _ in range(2):
        with pytest.raises(h.BadToolArgumentsError):
            p.complete(REQ)
    assert p.complete(REQ).text == "ok" and p.state == "closed"


def test_circuit_open_is_a_provider_error_but_distinct():
    assert issubclass(CircuitOpenError, ProviderError)
    assert not issubclass(CircuitOpenError, h.ServerError)


# ---------------------------------------------------------------- arguments
def _ok():
    return mock(["x"])


@pytest.mark.parametrize("build,error,said", [
    (lambda: with_retry("openai"), TypeError, "`p` must be a model provider"),
    (lambda: with_retry(None), TypeError, "`p` must be a model provider"),
    (lambda: with_retry(_ok(), max_attempts="3"), TypeError, "`max_attempts` takes a whole"),
    (lambda: with_retry(_ok(), max_attempts=2.5), TypeError, "`max_attempts` takes a whole"),
    (lambda: with_retry(_ok(), max_attempts=0), ValueError, "`max_attempts` must be at least 1"),
    (lambda: with_retry(_ok(), backoff=-1), ValueError, "`backoff` must be a finite number"),
    (lambda: with_retry(_ok(), backoff="x"), TypeError, "`backoff` takes a number of seconds"),
    (lambda: with_retry(_ok(), max_delay=-1), ValueError, "`max_delay` must be a finite"),
    (lambda: with_retry(_ok(), max_delay=float("inf")), ValueError, "`max_delay` must be"),
    (lambda: with_retry(_ok(), sleep=5), TypeError, "`sleep` takes a function"),
    (lambda: with_retry(_ok(), retry_on=None), TypeError, "`retry_on` takes a function"),
    (lambda: with_fallback(_ok(), None), TypeError, "`backup` must be a model provider"),
    (lambda: with_fallback("ollama:llama3.2", _ok()), TypeError,
     "`primary` must be a model provider.*a name\\?"),
    (lambda: with_fallback(_ok(), _ok(), when=1), TypeError, "`when` takes a function"),
    (lambda: with_circuit_breaker(5), TypeError, "`p` must be a model provider"),
    (lambda: with_circuit_breaker(_ok(), failures=0), ValueError, "`failures` must be at least"),
    (lambda: with_circuit_breaker(_ok(), failures="x"), TypeError, "`failures` takes a whole"),
    (lambda: with_circuit_breaker(_ok(), cool_down=-1), ValueError, "`cool_down` must be"),
    (lambda: with_circuit_breaker(_ok(), clock=0), TypeError, "`clock` takes a function"),
    (lambda: with_circuit_breaker(_ok(), counts="all"), TypeError, "`counts` takes a function"),
])
def test_a_wrapper_refuses_a_bad_argument_when_built(build, error, said):
    """Not at run time, as `'str' object has no attribute 'complete'` or a negative sleep."""
    with pytest.raises(error, match=said):
        build()


def test_a_wrapper_takes_zero_delays_and_cool_down():
    assert with_retry(_ok(), backoff=0, max_delay=0).max_delay == 0.0
    assert with_circuit_breaker(_ok(), cool_down=0).cool_down == 0.0
