"""Host implementations of the `std/tools` module (`impl = python("afp_dsl.stdtools:NAME")`).

Role:       `current_time` (through the run's Effects clock), `calculate` (safe arithmetic over
            an `ast` walk, no eval), `json_lookup` (a small path syntax over a fact or JSON
            text) and `http_get` (off unless hosts are allow-listed).
Emits:      nothing; a refused or failed call raises `ToolError`, which the pipeline turns into
            a tool failure the model reads.
Invariants: no wall-clock read here: `current_time` asks the run's Effects clock; bounded
            input, exponent, result size, nesting, response size and time; `http_get` only
            talks to allow-listed hosts, redirects included, and never through a proxy.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import os
import re
import urllib.error
import urllib.request
import warnings
from datetime import datetime, timezone
from typing import Any, Callable, Iterable
from urllib.parse import urljoin, urlsplit


class ToolError(Exception):
    """A refusal or failure with a message meant for the model."""


# ---------------------------------------------------------------- current_time
def current_time(tz: str | None = None, _context: Any = None) -> dict:
    """The current time as the run's Effects clock tells it: a clock whose `now()` answers a
    `datetime` is a wall clock (ISO-8601 answer); any other answer is a logical tick."""
    if _context is None:
        raise ToolError("current_time needs the run context: bind it through `python(...)` or "
                        "a host callable that declares `_context`")
    now = _context.now()
    if not isinstance(now, datetime):
        return {"clock": "logical", "tick": now,
                "note": "this run's clock is logical: no calendar time is available"}
    if now.tzinfo is None:  # a naive reading is UTC (never the machine's local time)
        now = now.replace(tzinfo=timezone.utc)
    if tz:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        try:
            now = now.astimezone(ZoneInfo(tz))
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f"unknown time zone `{tz}`: use an IANA name like "
                            f"`Europe/Paris` or `UTC`") from None
    else:
        now = now.astimezone(timezone.utc)
    return {"clock": "wall", "iso": now.isoformat(timespec="seconds"),
            "weekday": now.strftime("%A"), "timezone": str(now.tzinfo)}


# ---------------------------------------------------------------- calculate
MAX_EXPRESSION_CHARS = 500
MAX_RESULT_BITS = 4096  # integers up to ~1233 decimal digits
MAX_DEPTH = 60

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def calculate(expression: str) -> dict:
    """Evaluate arithmetic: numbers, + - * / // % **, unary minus, parentheses."""
    return {"expression": expression, "result": evaluate_arithmetic(expression)}


def evaluate_arithmetic(expression: str) -> int | float:
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("empty expression: write arithmetic like `(2 + 3) * 4`")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression too long ({len(expression)} characters, at most "
                        f"{MAX_EXPRESSION_CHARS})")
    try:
        with warnings.catch_warnings():  # e.g. "invalid decimal literal": a refusal, not a warning
            warnings.simplefilter("ignore")
            tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolError("not an arithmetic expression: use numbers, + - * / // % ** and "
                        "parentheses") from None
    return _finite(_eval(tree.body, 0))


def _eval(node: ast.AST, depth: int) -> int | float:
    if depth > MAX_DEPTH:
        raise ToolError(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            raise ToolError(f"only numbers are allowed, not {type(node.value).__name__} values")
        return _bounded(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _bounded(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("the result is too large") from None
    raise ToolError(f"`{_what(node)}` is not allowed: only numbers, + - * / // % ** and "
                    f"parentheses")


def _what(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return "function call"
    if isinstance(node, ast.Attribute):
        return "attribute access"
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return type(node.op).__name__.lower() + " operator"
    return type(node).__name__.lower()


def _check_power(base: int | float, exp: int | float) -> None:
    if abs(exp) > 10_000:
        raise ToolError("exponent too large (at most 10000 in absolute value)")
    if isinstance(base, int) and isinstance(exp, int) and exp > 0:
        if max(base.bit_length(), 1) * exp > MAX_RESULT_BITS + 64 and abs(base) > 1:
            raise ToolError(f"the result would be too large (over {MAX_RESULT_BITS} bits)")


def _bounded(value: Any) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ToolError(f"the result is too large (over {MAX_RESULT_BITS} bits)")
    return value


def _finite(value: int | float) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result is not a finite number")
    return value


# ---------------------------------------------------------------- json_lookup
_SEGMENT = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(-?\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def parse_path(path: str) -> list[str | int]:
    """`a.b[0].c`, `items[-1]`, `["key with dots"]`; `` or `$` is the whole document."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    out: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is None or (m.group(1) is not None and pos > 0 and text[pos] != "."):
            raise ToolError(f"bad path `{path}` at character {pos + 1}: write keys as `a.b`, "
                            f'indexes as `[0]` and other keys as `["a key"]`')
        name, index, quoted = m.groups()
        out.append(name if name is not None else int(index) if index is not None
                   else json.loads(quoted))
        pos = m.end()
    return out


def lookup(data: Any, path: str) -> Any:
    value, walked = data, "$"
    for seg in parse_path(path):
        if isinstance(seg, int):
            if not isinstance(value, list):
                raise ToolError(f"`{walked}` is {_kind(value)}, not a list: cannot take [{seg}]")
            if not -len(value) <= seg < len(value):
                raise ToolError(f"`{walked}` has {len(value)} items: no index {seg}")
            value, walked = value[seg], f"{walked}[{seg}]"
            continue
        if not isinstance(value, dict):
            raise ToolError(f"`{walked}` is {_kind(value)}, not an object: no key `{seg}`")
        if seg not in value:
            keys = ", ".join(f"`{k}`" for k in list(value)[:20]) or "none"
            raise ToolError(f"`{walked}` has no key `{seg}`; its keys: {keys}")
        value, walked = value[seg], f"{walked}.{seg}"
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def json_lookup(path: str, fact: str | None = None, json_text: str | None = None,
                _context: Any = None) -> dict:
    """Look up `path` in a fact of the agent's context (`fact`) or in JSON text (`json_text`)."""
    if (fact is None) == (json_text is None):
        raise ToolError("give exactly one of `fact` (a fact's name) or `json_text` (JSON text)")
    if fact is not None:
        names = _context.fact_names() if _context is not None else ()
        if fact not in names:
            known = ", ".join(f"`{n}`" for n in names) or "none"
            raise ToolError(f"no fact `{fact}` in this agent's context; facts: {known}")
        data = _context.fact(fact)
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                raise ToolError(f"fact `{fact}` is text, not JSON data") from None
    else:
        try:
            data = json.loads(json_text, parse_constant=_not_json, parse_float=_finite_float)
        except _NotFinite as exc:
            raise ToolError(f"`json_text` is not valid JSON: {exc}") from None
        except (ValueError, RecursionError):
            raise ToolError("`json_text` is not valid JSON") from None
    return {"path": path, "value": lookup(data, path)}


class _NotFinite(ValueError):
    """NaN, Infinity (Python's `json` reads them, JSON has none) or a number too large for a
    float (`1e400`): none of them could be recorded as JSON."""


def _not_json(name: str) -> None:
    raise _NotFinite(f"`{name}` is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"the number `{text}` is out of range")
    return value


# ---------------------------------------------------------------- http_get
ALLOW_ENV = "AFP_HTTP_ALLOW"
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 256_000
MAX_REDIRECTS = 5


def parse_allow(entries: str | Iterable[str] | None) -> tuple[str, ...]:
    """`"api.example.com, 127.0.0.1:8080"` → lower-case `host` / `host:port` entries."""
    if entries is None:
        return ()
    items = entries.split(",") if isinstance(entries, str) else list(entries)
    return tuple(e.strip().lower() for e in items if e and e.strip())


def host_allowed(url: str, allow: tuple[str, ...]) -> bool:
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    port = port or (443 if parts.scheme == "https" else 80)
    return host in allow or f"{host}:{port}" in allow


class _Redirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, allow: tuple[str, ...]):
        self.allow = allow

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = urljoin(req.full_url, newurl)
        if not host_allowed(target, self.allow):
            fp.close()
            raise ToolError(f"refused a redirect to `{urlsplit(target).hostname or target}`: "
                            f"that host is not on the allow-list")
        return super().redirect_request(req, fp, code, msg, headers, target)


def make_http_get(allow: str | Iterable[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Callable[..., dict]:
    """An `http_get` bound to an allow-list (None: read `AFP_HTTP_ALLOW` at each call)."""
    fixed = None if allow is None else parse_allow(allow)

    def http_get(url: str) -> dict:
        hosts = fixed if fixed is not None else parse_allow(os.environ.get(ALLOW_ENV))
        if not hosts:
            raise ToolError(f"http_get is off: no host is allowed (set {ALLOW_ENV}=host1,host2 "
                            f"or bind `make_http_get(allow=[...])`)")
        if not host_allowed(url, hosts):
            host = _host_of(url) if _scheme_of(url) in ("http", "https") else ""
            raise ToolError(f"refused: `{host}` is not on the allow-list" if host else
                            "refused: only http:// and https:// URLs with a host are allowed")
        return _fetch(url, hosts, timeout, max_bytes)

    return http_get


def _scheme_of(url: str) -> str:
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def _fetch(url: str, hosts: tuple[str, ...], timeout: float, max_bytes: int) -> dict:
    redirects = _Redirects(hosts)
    redirects.max_redirections = MAX_REDIRECTS
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), redirects)
    request = urllib.request.Request(url, headers={"User-Agent": "afp-http-get/1"})
    try:
        with opener.open(request, timeout=timeout) as resp:
            body = resp.read(max_bytes + 1)
            final, status = resp.geturl(), resp.status
            ctype = resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        raise ToolError(f"GET {url} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ToolError):
            raise exc.reason from None
        raise ToolError(f"GET {url} failed: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise ToolError(f"GET {url} failed: {exc or type(exc).__name__}") from None
    truncated = len(body) > max_bytes
    charset = "utf-8"
    m = re.search(r"charset=([\w-]+)", ctype)
    if m:
        charset = m.group(1)
    try:
        text = body[:max_bytes].decode(charset, errors="replace")
    except LookupError:
        text = body[:max_bytes].decode("utf-8", errors="replace")
    return {"url": final, "status": status, "content_type": ctype, "body": text,
            "truncated": truncated}


http_get = make_http_get()
