"""Checks of the options the adapters, the resilience wrappers and `make_provider` take.

Role:       each function returns the option's value or raises at once: `TypeError` for a
            value of the wrong type, `ValueError` for one out of range, naming the parameter,
            what it takes and what it got, so a mistake never surfaces later, at run time.
Emits:      nothing.
Invariants: a bool is never taken for a number.
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any, Mapping

MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: far beyond any LLM call, and any platform's timers


def a(value: Any) -> str:
    """`value` as a message names what was given instead: its type, or the value itself for
    a number or None."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} `{kind}`"


def seconds(name: str, value: Any, *, zero: bool = False, at_most: float | None = None,
            example: float = 30) -> float:
    """A finite number of seconds above 0 (or 0 too, with `zero`), at most `at_most`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` takes a number of seconds (e.g. `{name}={example:g}`), not "
                        f"{a(value)}")
    value = float(value)
    low = "0 or more" if zero else "above 0"
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero) \
            or (at_most is not None and value > at_most):
        high = f" and at most {at_most:g} ({at_most / 86400:g} days)" if at_most else ""
        raise ValueError(f"`{name}` must be a finite number of seconds, {low}{high}, such as "
                         f"`{name}={example:g}`, not {value!r}")
    return value


def count(name: str, value: Any, *, least: int = 1, example: str) -> int:
    """An int of at least `least`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`{name}` takes a whole number (e.g. `{example}`), not {a(value)}")
    if value < least:
        raise ValueError(f"`{name}` must be at least {least} (e.g. `{example}`), not {value}")
    return value


def text(name: str, value: Any, *, example: str) -> str | None:
    """A `str`, or None for the default."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"`{name}` takes a `str` (e.g. `{example}`) or None, not {a(value)}")
    return value


def mapping(name: str, value: Any, *, example: str) -> Mapping | None:
    """A mapping, or None for none."""
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"`{name}` takes a mapping (e.g. `{example}`) or None, not {a(value)}")
    return value


def arguments(name: str, value: Any, *, example: str) -> dict:
    """A mapping of keyword-argument names to values (None for none), as a new dict."""
    if mapping(name, value, example=example) is None:
        return {}
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise TypeError(f"`{name}` keys must be argument names (a `str`, e.g. `{example}`), "
                        f"not {a(bad[0])}")
    return dict(value)


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"`{name}` takes True or False, not {a(value)}")
    return value


def function(name: str, value: Any, *, example: str) -> Any:
    if not callable(value):
        raise TypeError(f"`{name}` takes a function (e.g. `{example}`), not {a(value)}")
    return value


def provider(name: str, value: Any) -> Any:
    """A model provider: anything with a `complete(request)` method."""
    if not callable(getattr(value, "complete", None)):
        hint = " (a name? build it with `make_provider(...)` or `openai(...)`)" \
            if isinstance(value, str) else ""
        raise TypeError(f"`{name}` must be a model provider such as `openai(\"gpt-4o-mini\")` "
                        f"or `mock()` (an object with a `complete(request)` method), not "
                        f"{a(value)}{hint}")
    return value


def http_url(value: str, *, given: bool, env_name: str, example: str) -> str:
    """`value` (a `base_url`, from the argument when `given`, else from `env_name`) if it is an
    http(s) URL with a host; else a ValueError naming where it came from. The value itself is
    not quoted: it may hold credentials."""
    import urllib.parse  # (only adapters built with a URL pay for it)
    try:
        parts = urllib.parse.urlsplit(value)
        host = parts.hostname
    except ValueError:  # (an invalid port or IPv6 literal)
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        if given:
            raise ValueError(f"`base_url` is not an http(s) URL with a host; pass one such as {example}")
        raise ValueError(f"${env_name} is not an http(s) URL with a host; set it to one such as "
                         f"`http://127.0.0.1:8080/v1`, or unset it")
    return value

