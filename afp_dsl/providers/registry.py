"""Resolve a provider name (`openai`, `ollama:llama3.2`, ...) to a configured Provider.

Role:       `make_provider(name, model=, retries=, fallback=, env=)` for `afpc run --provider`
            and embedding code; keys and hosts come from the usual environment variables.
Emits:      `ProviderError` naming the known providers (did-you-mean) or the missing extra/key.
Invariants: reads only `env` (never os.environ directly when `env` is given); the model in a
            `NAME:MODEL` form wins over `model`; retries wrap each side of a fallback.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping

from ..suggest import closest
from . import _options as check
from .base import Provider, ProviderError

NAMES = ("mock", "openai", "anthropic", "ollama")


def split_name(spec: str) -> tuple[str, str | None]:
    """`"ollama:llama3.2"` → `("ollama", "llama3.2")`; `"openai"` → `("openai", None)`."""
    if not isinstance(spec, str):
        raise TypeError(f"a provider name takes a `str` such as \"openai\" or "
                        f"\"ollama:llama3.2\" (NAME:MODEL), not {check.a(spec)}")
    name, _, model = spec.strip().partition(":")
    return name.strip().lower(), (model.strip() or None)


def make_provider(name: str, *, model: str | None = None, retries: int = 0,
                  fallback: str | None = None, env: Mapping[str, str] | None = None,
                  script: list | None = None, stream: bool = False,
                  timeout: float | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> Provider:
    """The provider `name` (or `NAME:MODEL`), retried `retries` more times on transient errors,
    falling back to `fallback` (also `NAME[:MODEL]`) when it fails. `script` feeds the mock."""
    check.text("model", model, example='model="gpt-4o-mini"')
    check.text("fallback", fallback, example='fallback="ollama:llama3.2"')
    env = os.environ if check.mapping("env", env, example="env=os.environ") is None else env
    if isinstance(retries, bool) or not isinstance(retries, int):
        raise TypeError(f"`retries` takes a whole number (e.g. `retries=2`), not "
                        f"{check.a(retries)}")
    if retries < 0:
        raise ProviderError("--retries must be 0 or more")
    primary = _retried(_one(name, model, env, script, stream, timeout), retries, sleep)
    if not fallback:
        return primary
    from .resilience import with_fallback
    backup = _retried(_one(fallback, None, env, script, stream, timeout), retries, sleep)
    return with_fallback(primary, backup)


def _retried(p: Provider, retries: int, sleep: Callable[[float], None]) -> Provider:
    if retries <= 0:
        return p
    from .resilience import with_retry
    return with_retry(p, retries + 1, sleep=sleep)


def _one(spec: str, model: str | None, env: Mapping[str, str], script: list | None,
         stream: bool, timeout: float | None) -> Provider:
    name, named_model = split_name(spec)
    model = named_model or model
    kw: dict[str, Any] = {"env": env, "stream": stream}
    if timeout is not None:
        kw["timeout"] = timeout
    if name == "mock":
        from .mock import mock
        return mock(script, model=model)
    if name == "openai":
        from .openai import openai
        return openai(model, **kw)
    if name == "anthropic":
        from .anthropic import anthropic
        return anthropic(model, **kw)
    if name == "ollama":
        from .ollama import ollama
        return ollama(model, **kw)
    close = closest(name, NAMES)
    hint = f"; did you mean `{close}`?" if close else ""
    raise ProviderError(f"unknown provider `{name}`{hint} (known: {', '.join(NAMES)}; "
                        f"add a model as NAME:MODEL, e.g. ollama:llama3.2)")
