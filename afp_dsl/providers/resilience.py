"""Visible resilience around any provider: retry with backoff, fallback, circuit breaker.

Role:       `with_retry(p, max_attempts, backoff)`, `with_fallback(primary, backup)`,
            `with_circuit_breaker(p, failures, cool_down)`; each is a Provider wrapping another.
Emits:      `llm.retry` (attempt, delay, error), `llm.fallback` (from, to, error) and
            `llm.circuit` (state open | half_open | closed) events, plus the inner provider's
            events re-published, to subscribers and each wrapper's `events` list.
Invariants: sleeping and the clock are injected (tests never sleep); attempts and delays are
            bounded (a retry-after beyond `max_delay` is not waited for); the reply of a
            successful attempt is returned unchanged.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from . import _options as check
from .base import Provider, ProviderError, Reply, Request, error_kind, requested_model
from ._errors import ProviderFailure, clip, is_transient
from ._http import Observable, forward_events


class CircuitOpenError(ProviderFailure):
    """The breaker is open: the provider is not called until the cool-down has passed."""

    kind = "circuit_open"


_kind = error_kind


def _with_note(exc: ProviderError, note: str) -> ProviderError:
    message = f"{exc} ({note})"
    if isinstance(exc, ProviderFailure):
        return exc.with_message(message)
    return ProviderError(message)


class _Wrapper(Observable, Provider):
    def __init__(self, *inner: Provider):
        self._init_events()
        self._first = inner[0] if inner else None
        for p in inner:
            forward_events(p, self)

    def model_for(self, request: Request) -> str | None:
        """The model the (first) wrapped provider asks for."""
        return requested_model(self._first, request)

    async def acomplete(self, request: Request) -> Reply:
        return await asyncio.to_thread(self.complete, request)


class RetryProvider(_Wrapper):
    """Retries transient errors (rate limits, 5xx, timeouts, unreachable servers); the delay
    before attempt k+1 is the server's retry-after if given, else backoff * 2**(k-1), capped
    at `max_delay`. A retry-after longer than `max_delay` ends the retries at once, and the
    error says it was not waited for."""

    def __init__(self, inner: Provider, max_attempts: int = 3, backoff: float = 0.5, *,
                 max_delay: float = 30.0, sleep: Callable[[float], None] = time.sleep,
                 retry_on: Callable[[BaseException], bool] = is_transient):
        super().__init__(check.provider("p", inner))
        self.inner = inner
        self.max_attempts = check.count("max_attempts", max_attempts, example="max_attempts=3")
        self.backoff = check.seconds("backoff", backoff, zero=True, example=0.5)
        self.max_delay = check.seconds("max_delay", max_delay, zero=True)
        self.sleep = check.function("sleep", sleep, example="sleep=time.sleep")
        self.retry_on = check.function("retry_on", retry_on, example="retry_on=is_transient")
        self.name = getattr(inner, "name", "provider")

    def complete(self, request: Request) -> Reply:
        attempt = 1
        while True:
            try:
                return self.inner.complete(request)
            except ProviderError as exc:
                delay = self._delay(exc, attempt)
                if delay is None:
                    raise self._given_up(exc, attempt) from None
                self._emit("llm.retry", attempt=attempt, of=self.max_attempts, delay=delay,
                           error=_kind(exc), message=str(exc))
                self.sleep(delay)
                attempt += 1

    def _given_up(self, exc: ProviderError, attempt: int) -> ProviderError:
        """`exc` saying why it was not retried (further), when it was retryable."""
        notes = [f"gave up after {attempt} attempts"] if attempt > 1 else []
        after = getattr(exc, "retry_after", None)
        if attempt < self.max_attempts and self.retry_on(exc) and after is not None:
            notes.append(f"not retried: the server asked to wait {after:g}s, longer than the "
                         f"retry limit (max_delay={self.max_delay:g}s); try again later")
        return _with_note(exc, "; ".join(notes)) if notes else exc

    def _delay(self, exc: ProviderError, attempt: int) -> float | None:
        if attempt >= self.max_attempts or not self.retry_on(exc):
            return None
        after = getattr(exc, "retry_after", None)
        if after is not None:
            return float(after) if after <= self.max_delay else None
        return min(self.backoff * 2 ** (attempt - 1), self.max_delay)


class FallbackProvider(_Wrapper):
    """Calls `primary`; on any ProviderError calls `backup` (and reports the switch)."""

    def __init__(self, primary: Provider, backup: Provider, *,
                 when: Callable[[BaseException], bool] = lambda exc: True):
        super().__init__(check.provider("primary", primary), check.provider("backup", backup))
        self.primary, self.backup = primary, backup
        self.when = check.function("when", when, example="when=lambda exc: True")
        self.name = getattr(primary, "name", "provider")

    def complete(self, request: Request) -> Reply:
        try:
            return self.primary.complete(request)
        except ProviderError as exc:
            if not self.when(exc):
                raise
            first = exc
        src, dst = getattr(self.primary, "name", "primary"), getattr(self.backup, "name", "backup")
        self._emit("llm.fallback", **{"from": src, "to": dst, "error": _kind(first),
                                      "message": str(first),
                                      "model": requested_model(self.backup, request)})
        try:
            return self.backup.complete(request)
        except ProviderError as exc:
            raise _with_note(exc, f"after the fallback from {src}, which failed: "
                                  f"{clip(first, 200)}") from None


class CircuitBreakerProvider(_Wrapper):
    """After `failures` consecutive transient errors the circuit opens: calls fail fast with
    CircuitOpenError for `cool_down` seconds; then one trial call (half-open) closes it on
    success or reopens it on failure. Other errors pass through and are not counted."""

    def __init__(self, inner: Provider, failures: int = 5, cool_down: float = 30.0, *,
                 clock: Callable[[], float] = time.monotonic,
                 counts: Callable[[BaseException], bool] = is_transient):
        super().__init__(check.provider("p", inner))
        self.inner = inner
        self.threshold = check.count("failures", failures, example="failures=5")
        self.cool_down = check.seconds("cool_down", cool_down, zero=True)
        self.clock = check.function("clock", clock, example="clock=time.monotonic")
        self.counts = check.function("counts", counts, example="counts=is_transient")
        self.name = getattr(inner, "name", "provider")
        self.state, self.failures, self.opened_at = "closed", 0, 0.0
        self.last_error: str | None = None

    def complete(self, request: Request) -> Reply:
        if self.state == "open":
            waited = self.clock() - self.opened_at
            if waited < self.cool_down:
                raise CircuitOpenError(
                    f"{self.name}: not called: the circuit is open after {self.failures} "
                    f"failures in a row (last: {clip(self.last_error, 200)}); it retries in "
                    f"{self.cool_down - waited:.3g}s", provider=self.name)
            self._set("half_open")
        try:
            reply = self.inner.complete(request)
        except ProviderError as exc:
            if self.counts(exc):
                self._failed(exc)
            raise
        if self.state != "closed" or self.failures:
            self.failures = 0
            self._set("closed")
        return reply

    def _failed(self, exc: ProviderError) -> None:
        self.failures += 1
        self.last_error = str(exc)
        if self.state == "half_open" or self.failures >= self.threshold:
            self.opened_at = self.clock()
            self._set("open")

    def _set(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self._emit("llm.circuit", state=state, failures=self.failures,
                       cool_down=self.cool_down)


def with_retry(p: Provider, max_attempts: int = 3, backoff: float = 0.5,
               **kw: Any) -> RetryProvider:
    """Retry transient failures of `p`; see RetryProvider (`sleep=`, `max_delay=`)."""
    return RetryProvider(p, max_attempts, backoff, **kw)


def with_fallback(primary: Provider, backup: Provider, **kw: Any) -> FallbackProvider:
    """Use `backup` when `primary` fails; see FallbackProvider."""
    return FallbackProvider(primary, backup, **kw)


def with_circuit_breaker(p: Provider, failures: int = 5, cool_down: float = 30.0,
                         **kw: Any) -> CircuitBreakerProvider:
    """Stop calling `p` for `cool_down` seconds after `failures` failures; see
    CircuitBreakerProvider (`clock=`)."""
    return CircuitBreakerProvider(p, failures, cool_down, **kw)
