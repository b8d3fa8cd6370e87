"""Typed provider errors: what each failure is, and a message that names the fix.

Role:       the `ProviderError` subclasses the adapters raise (`transient` ones are worth
            retrying), the helpers that keep secrets and long server text out of their messages,
            and the classification of the OpenAI and Anthropic SDKs' exceptions (`map_sdk_error`)
            and of error bodies that arrive as replies.
Emits:      nothing; builds exceptions, never raises them.
Invariants: no message holds a secret when built through `scrub`/`shown_url`; text from a
            server is cut to a few hundred characters (`clip`).
"""
from __future__ import annotations

import html
import re
from typing import Any, Iterable, Mapping

from ._deadline import is_http_timeout, is_http_transport_error
from .base import ProviderError

_SERVER_TEXT = 300


# ---------------------------------------------------------------- errors
class ProviderFailure(ProviderError):
    """A classified provider error. `transient` ones are worth retrying (rate limits, 5xx,
    timeouts, an unreachable server); `retry_after` is the server's hint in seconds."""

    kind = "failure"
    transient = False

    def __init__(self, message: str, *, provider: str | None = None, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.retry_after = retry_after

    def with_message(self, message: str) -> "ProviderFailure":
        """The same error (class, status, retry_after) with another message."""
        return type(self)(message, provider=self.provider, status=self.status,
                          retry_after=self.retry_after)


class MissingKeyError(ProviderFailure):
    kind = "missing_key"


class AuthenticationError(ProviderFailure):
    kind = "auth"


class ServerUnreachableError(ProviderFailure):
    kind = "unreachable"
    transient = True


class ModelNotFoundError(ProviderFailure):
    kind = "model_not_found"


class RateLimitedError(ProviderFailure):
    kind = "rate_limited"
    transient = True


class QuotaExceededError(RateLimitedError):
    """A 429 that waiting does not cure: the account's quota or credit is used up."""

    kind = "quota_exceeded"
    transient = False


class ServerError(ProviderFailure):
    kind = "server_error"
    transient = True


class ProviderTimeoutError(ProviderFailure):
    kind = "timeout"
    transient = True


class BadRequestError(ProviderFailure):
    kind = "bad_request"


class MalformedReplyError(ProviderFailure):
    kind = "malformed_reply"


class ReplyTooLargeError(MalformedReplyError):
    """A reply larger than the adapter's `max_reply_bytes`: an endless body, a runaway stream."""

    kind = "reply_too_large"


class BadToolArgumentsError(ProviderFailure):
    kind = "bad_tool_arguments"


class EmptyReplyError(ProviderFailure):
    kind = "empty_reply"


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and bool(getattr(exc, "transient", False))


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (4+ characters) replaced by `[redacted]`."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "[redacted]")
    return text


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials a base URL may carry: the password of its user info (or a user name
    alone, used as a token), and the values of its query (`?api-key=...`)."""
    from urllib.parse import parse_qsl, urlsplit
    try:
        parts = urlsplit(url or "")
        user, password = parts.username, parts.password
        query = [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    except ValueError:
        return ()
    return tuple(x for x in (password or user, *query) if x)


def shown_url(url: str) -> str:
    """`url` as an error message shows it: user info and query replaced by `[redacted]`."""
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured URL"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "[redacted]@" + netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "[redacted]" if parts.query else "",
                       ""))


def clip(text: Any, limit: int = _SERVER_TEXT) -> str:
    """Server-provided text, on one line and at most `limit` characters; an HTML page (a proxy's
    or gateway's error page) as its title, not its markup."""
    text = _page_title(str(text)) or " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_HTML = re.compile(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title)\b", re.I | re.S)
_TITLE = re.compile(r"<(title|h1)\b[^>]*>(.*?)</\1\s*>", re.I | re.S)


def _page_title(text: str) -> str | None:
    """`an HTML page: TITLE` when `text` is an HTML document (its `<title>`, else its first
    `<h1>`, else its words), else None (text that only quotes one is left as it is)."""
    if not _HTML.match(text[:4096]):
        return None
    found = sorted(_TITLE.findall(text[:65536]), key=lambda m: m[0].lower() != "title")
    words = found[0][1] if found else re.sub(r"<script\b.*?</script>|<style\b.*?</style>|<[^>]*>",
                                             " ", text[:65536], flags=re.I | re.S)
    words = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", words)).split())
    return f"an HTML page: {words}" if words else "an HTML page"


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after`: a number of seconds, or an HTTP date
    (RFC 9110), counted from the response's own `date` header (no local clock: a date without
    one is ignored)."""
    if headers is None:
        return None
    for key, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(key)
        if raw is None:
            continue
        value: float | None
        try:
            value = float(raw) / scale
        except (TypeError, ValueError):
            value = _date_gap(raw, headers.get("date")) if key == "retry-after" else None
        if value is not None and value >= 0:
            return value
    return None


def _date_gap(later: Any, now: Any) -> float | None:
    """Seconds from the HTTP date `now` to the HTTP date `later` (0 when it has passed)."""
    from email.utils import parsedate_to_datetime
    try:
        return max(0.0, (parsedate_to_datetime(later) - parsedate_to_datetime(now)).total_seconds())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


_EMPTY_FIX = {"length": "raise max_tokens",
              "content_filter": "the model declined to answer (a content filter or a refusal): "
                                "rephrase the request or the system prompt, or use another model"}


def empty_reply(provider: str, stop: str) -> EmptyReplyError:
    fix = _EMPTY_FIX.get(stop, "retry, or check the model and its prompt")
    return EmptyReplyError(f"{provider}: the reply has neither text nor tool calls (stop reason "
                           f"`{stop}`); {fix}", provider=provider)


# ---------------------------------------------------------------- OpenAI/Anthropic SDK errors
def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and err.get("message"):
            return clip(err["message"])
        if isinstance(err, str):
            return clip(err)
    if isinstance(body, str) and body.strip():  # (a body that is no JSON: a proxy's page or text)
        return clip(body)
    return clip(getattr(exc, "message", None) or exc)


def map_sdk_error(exc: Exception, sdk: Any, *, provider: str, key_env: str, url: str,
                  model: str, timeout: float, url_hint: str) -> ProviderFailure:
    """Classify an exception of the OpenAI or Anthropic SDK (they share their error classes)."""
    if isinstance(exc, sdk.APITimeoutError) or is_http_timeout(exc):  # the latter: mid-stream
        return ProviderTimeoutError(f"{provider}: no complete reply from {url} within "
                                    f"{timeout:g}s; check the server, or raise timeout=...",
                                    provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        return ServerUnreachableError(f"{provider}: cannot connect to {url}; is the server "
                                      f"running? ({url_hint})", provider=provider)
    if is_http_transport_error(exc):  # raised unwrapped while reading a streamed body
        return reply_cut(provider, url, exc)
    if isinstance(exc, sdk.APIStatusError):
        return _status_error(exc, provider=provider, key_env=key_env, model=model)
    if isinstance(exc, sdk.APIError):  # an error event inside a stream
        return mid_reply(provider, _detail(exc))
    if isinstance(exc, ValueError):  # JSONDecodeError, pydantic ValidationError
        return malformed(provider, url, exc)
    return ProviderFailure(f"{provider}: unexpected {type(exc).__name__}: {clip(exc)}",
                           provider=provider)


def _status_error(exc: Any, *, provider: str, key_env: str, model: str) -> ProviderFailure:
    status, detail = int(exc.status_code), _detail(exc)
    kw: dict[str, Any] = {"provider": provider, "status": status}
    if status < 400:  # the HTTP status was fine; an error event arrived inside the stream
        if "rate_limit" in _error_type(exc):
            return RateLimitedError(f"{provider}: rate limited mid-reply: {detail}; wait, or "
                                    f"run with --retries N", provider=provider)
        return mid_reply(provider, detail)
    if status == 401:
        return AuthenticationError(f"{provider}: the server rejected the API key ({status}: "
                                   f"{detail}); check {key_env}", **kw)
    if status == 403:  # (a valid key without access: a model, project or region it may not use)
        return AuthenticationError(f"{provider}: the server refused access (403: {detail}); "
                                   f"check that the key in {key_env} may use model `{model}` "
                                   f"(its project, organization or region)", **kw)
    if status == 404:
        return ModelNotFoundError(f"{provider}: model `{model}` not found ({detail}); choose a "
                                  f"model you can use with --model (or model=...), and check "
                                  f"the base URL", **kw)
    if status == 429 and "insufficient_quota" in (_error_type(exc), _error_code(exc)):
        return QuotaExceededError(f"{provider}: the account's quota is used up (429: {detail}); "
                                  f"check the plan and billing of the key in {key_env}; "
                                  f"retrying does not help", **kw)
    after = parse_retry_after(getattr(getattr(exc, "response", None), "headers", None))
    when = f", retry after {after:g}s" if after is not None else ""
    if status == 429:
        return RateLimitedError(f"{provider}: rate limited (429{when}): {detail}; wait, or "
                                f"run with --retries N", retry_after=after, **kw)
    if status == 408:  # (the SDKs retry it: the server gave up waiting, nothing was done)
        return ProviderTimeoutError(f"{provider}: the server timed out the request (408{when}: "
                                    f"{detail}); try again, or run with --retries N",
                                    retry_after=after, **kw)
    if status >= 500:  # (503 and Anthropic's 529 "overloaded" often say when to come back)
        return ServerError(f"{provider}: server error {status}{when}: {detail}; try again "
                           f"later, or run with --retries N or --fallback PROVIDER",
                           retry_after=after, **kw)
    fix = (_TOO_LONG if _error_code(exc) == "context_length_exceeded"
           or any(w in detail.lower() for w in _TOO_LONG_WORDS)
           else "check the model name and the tool schemas")
    return BadRequestError(f"{provider}: the server refused the request ({status}: {detail}); "
                           f"{fix}", **kw)


_TOO_LONG = ("the prompt is longer than the model's context window: shorten the conversation or "
             "the tool results (`max_result_chars`), or use a model with a larger context")
_TOO_LONG_WORDS = ("maximum context length", "prompt is too long", "context window",
                   "context_length_exceeded")


def _error_type(exc: Any, field: str = "type") -> str:
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, Mapping) else None
    return str(err.get(field) or "") if isinstance(err, Mapping) else ""


def _error_code(exc: Any) -> str:
    return _error_type(exc, "code")


def reply_cut(provider: str, url: str, exc: BaseException) -> ServerUnreachableError:
    """The connection broke after the server had begun to answer (its body closed before its
    end, a chunked stream cut off): transient, as a connection that never opened is."""
    return ServerUnreachableError(f"{provider}: the reply from {url} was cut off before its "
                                  f"end: the connection broke ({clip(exc, 160)}); try again, "
                                  f"or run with --retries N", provider=provider)


def stream_cut(provider: str, what: str) -> ServerError:
    """A streamed reply that ended before its last event (a proxy or the server cut it): the
    text so far is no answer, so it is never returned as one."""
    return mid_reply(provider, f"the stream ended before {what}")


def mid_reply(provider: str, detail: str) -> ServerError:
    return ServerError(f"{provider}: the server failed in the middle of the reply: {detail}; "
                       f"try again, or run with --retries N", provider=provider)


def body_error(body: Any) -> str | None:
    """The server's message when a reply parsed from a 200 response is an error object
    (`{"error": {"message": ...}}` or `{"error": "..."}`, as gateways and proxies answer),
    else None. `body` is the SDK's parsed reply (its unknown keys in `model_extra`) or a dict."""
    extra = body if isinstance(body, Mapping) else getattr(body, "model_extra", None)
    err = extra.get("error") if isinstance(extra, Mapping) else None
    if isinstance(err, Mapping):
        err = err.get("message") or err.get("type") or err
    return clip(err) if err else None


def error_reply(provider: str, detail: str) -> ServerError:
    """A 200 response whose body is an error: the server's message, never "not the API"."""
    return ServerError(f"{provider}: the server answered with an error instead of a reply: "
                       f"{detail}; try again, or run with --retries N", provider=provider)


def malformed(provider: str, url: str, what: Any) -> MalformedReplyError:
    return MalformedReplyError(f"{provider}: the reply from {url} is not what the API returns "
                               f"({clip(what, 160)}); check that the URL points at the right "
                               f"API", provider=provider)


def too_large(provider: str, url: str, limit: int, what: str) -> ReplyTooLargeError:
    return ReplyTooLargeError(f"{provider}: the reply from {url} is too large: {what} passed "
                              f"the limit of {limit} bytes ({limit / 2**20:g} MiB); if such "
                              f"replies are expected, raise the adapter's max_reply_bytes= "
                              f"(e.g. max_reply_bytes={limit * 2}), else check the server",
                              provider=provider)
