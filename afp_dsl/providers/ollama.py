"""The Ollama adapter (`/api/chat`) over the official `ollama` SDK.

Role:       `ollama(model, host=...)`: maps a `Request` to an `/api/chat` body (system message,
            OpenAI-style function tools with the full JSON Schema, assistant `tool_calls` with
            object arguments, `tool` messages naming their tool) and the reply back to a `Reply`.
Emits:      `llm.chunk` events when streaming (NDJSON); typed `ProviderError`s (see `_http`).
Invariants: every call has a total deadline, `timeout=` (see `_deadline`), not only a
            per-read timeout; tool-call ids, which Ollama lacks, are `call-N-I` (the
            mock's scheme); streaming and non-streaming give the same `Reply`.
"""
from __future__ import annotations

import json
import os
import threading
from typing import Any, Mapping

from ..frozen import thaw
from . import _options as check
from .base import Reply, Request, Usage
from ._deadline import deadline_hooks, watch_client
from ._errors import (AuthenticationError, BadRequestError, BadToolArgumentsError,
                      ModelNotFoundError, ProviderFailure, ProviderTimeoutError, RateLimitedError,
                      ServerError, ServerUnreachableError, body_error, clip, empty_reply,
                      error_reply, malformed, mid_reply, parse_retry_after, stream_cut)
from ._http import Adapter, call_id, echoed_arguments, read_call, reply_meta, token_count
from ._limits import DEFAULT_MAX_REPLY_BYTES, size_hook

DEFAULT_MODEL = "llama3.2"
DEFAULT_HOST = "http://127.0.0.1:11434"


def _sdk() -> Any:
    try:
        import ollama as sdk
    except ImportError:
        raise ProviderFailure('ollama: the `ollama` package is not installed; run '
                              'pip install "afp-dsl[ollama]"', provider="ollama") from None
    except ValueError:  # (its import builds a client from $OLLAMA_HOST, and may quote it)
        raise ValueError("$OLLAMA_HOST is not a server address such as `http://127.0.0.1:11434`; "
                         "fix it or unset it") from None
    return sdk


def _check_host(url: Any, *, given: bool) -> None:
    """A ValueError, before any request, when the SDK made of `host` (or $OLLAMA_HOST) no http(s)
    address of a real host name (`ftp://x`, a blank, a name with spaces): the SDK completes
    what it is given (scheme, port) and accepts these. The value is not quoted: it may hold
    credentials."""
    host = url.host or ""
    if url.scheme in ("http", "https") and host and "%" not in host and not host.isspace():
        return
    raise ValueError(("`host` is not" if given else "$OLLAMA_HOST is not") + " a server address "
                     "such as `http://127.0.0.1:11434`" + ("" if given else "; fix it or unset it"))


class OllamaProvider(Adapter):
    name = "ollama"
    default_model = DEFAULT_MODEL

    def __init__(self, model: str | None = None, *, host: str | None = None,
                 timeout: float = 120.0, stream: bool = False,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
                 options: Mapping[str, Any] | None = None, keep_alive: str | None = None,
                 env: Mapping[str, str] | None = None):
        env = os.environ if check.mapping("env", env, example="env=os.environ") is None else env
        check.text("host", host, example='host="http://127.0.0.1:11434"')
        check.mapping("options", options, example='options={"num_ctx": 8192}')
        if keep_alive is not None and (isinstance(keep_alive, bool)
                                       or not isinstance(keep_alive, (str, int, float))):
            raise TypeError(f"`keep_alive` takes a duration such as `keep_alive=\"5m\"` or a "
                            f"number of seconds, or None, not {check.a(keep_alive)}")
        # the SDK sends OLLAMA_API_KEY (read from the process environment) as a bearer token:
        # a server that quotes it back must not put it in an error message
        super().__init__(model, timeout=timeout, stream=stream, max_reply_bytes=max_reply_bytes,
                         secrets=(os.environ.get("OLLAMA_API_KEY"), env.get("OLLAMA_API_KEY")))
        self._last = threading.local()  # the headers of this thread's last response
        self.options, self.keep_alive = dict(options or {}), keep_alive
        sdk = _sdk()
        import httpx  # what the `ollama` SDK sends with (installed with it)
        # httpx's `timeout=` limits each socket read; the hooks add the deadline of the whole
        # call (a trickling server or a slow NDJSON stream would hang otherwise) and the cap on
        # the reply's size.
        hooks = deadline_hooks(httpx, self.timeout, watchdog=self.watchdog)
        bound = size_hook(self.max_reply_bytes, "ndjson" if self.stream else None)(httpx)
        # (`_note` keeps the headers of an error response: the SDK's errors do not)
        hooks["response"] = [self._note, *hooks["response"], bound]
        try:
            self._client = sdk.Client(host=host or env.get("OLLAMA_HOST") or DEFAULT_HOST,
                                      timeout=self.timeout, event_hooks=hooks)
        except ValueError:  # (the SDK's parse error may quote the host: credentials too)
            raise ValueError("`host` (or OLLAMA_HOST) is not a server address such as "
                             "`http://127.0.0.1:11434`") from None
        watch_client(self._client._client, self.watchdog)  # (the SDK's httpx client)
        self.host = self.shown_url = str(self._client._client.base_url).rstrip("/")
        _check_host(self._client._client.base_url, given=bool(host))

    def _note(self, response: Any) -> None:
        self._last.headers = response.headers

    # ------------------------------------------------------------ request
    def body(self, request: Request) -> dict:
        """The JSON body of `POST /api/chat` for `request` (without `stream`)."""
        body: dict[str, Any] = {"model": self.model_for(request),
                                "messages": to_messages(request.system, request.messages)}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description,
                "parameters": _schema(t.schema)}} for t in request.tools]
        if self.options:
            body["options"] = self.options
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        return body

    def _call(self, request: Request) -> Reply:
        body = dict(self.body(request), stream=self.stream)
        # `Client.chat` re-validates tools through a pydantic model that drops nested schemas
        # and keywords such as `pattern` and `minimum`; post the body as built instead.
        acc = _Folded()
        if not self.stream:
            self._add(acc, self._client._request_raw("POST", "/api/chat", json=body).json(),
                      "a body")
            return self._finish(request, acc)
        self._chunks(body, acc)
        if acc.last is not None and not acc.last.done:  # no `"done": true` line: cut short
            raise stream_cut(self.name, "its last line (`\"done\": true`) arrived")
        return self._finish(request, acc)

    def _chunks(self, body: dict, acc: "_Folded") -> None:
        """The NDJSON lines of a streamed `/api/chat` added to `acc`, read as the SDK's
        `_request(stream=True)` reads them, except that an error line of any shape is the
        server's message: the SDK's `ResponseError` takes text only, and `{"error": {...}}`
        makes it raise a TypeError."""
        tally = self.tally()
        with self._client._client.stream("POST", "/api/chat", json=body) as response:
            if not response.is_success:
                response.read()
                raise _sdk().ResponseError(response.text, response.status_code)
            for line in filter(str.strip, response.iter_lines()):
                part = json.loads(line)
                error = body_error(part) if isinstance(part, Mapping) else None
                if error is not None:
                    raise (mid_reply if acc.last is not None else error_reply)(self.name, error)
                text, called = self._add(acc, part, "a line")
                tally.add(text)
                tally.add(line if called else "")  # (a line of calls: their arguments)
                if text:
                    self._emit("llm.chunk", text=text)

    def _add(self, acc: "_Folded", part: Any, what: str) -> tuple[str, bool]:
        """Add a reply (or one line of a streamed one) to `acc`: its text, and whether it
        called tools."""
        if not isinstance(part, Mapping):
            raise malformed(self.name, self.host, f"{what} that is {check.a(part)}, not a JSON "
                                                  f"object")
        chat, wire_args = _chat_response(_sdk(), part)
        msg = chat.message
        if msg is None:
            raise malformed(self.name, self.host, "a reply without a message")
        calls = [(tc.function.name, wire_args.get(k, tc.function.arguments))
                 for k, tc in enumerate(msg.tool_calls or ())]
        acc.text.append(msg.content or "")
        acc.calls += calls
        acc.last = chat
        return msg.content or "", bool(calls)

    # ------------------------------------------------------------ reply
    def _finish(self, request: Request, acc: "_Folded") -> Reply:
        last = acc.last
        if last is None:
            raise malformed(self.name, self.host, "an empty stream")
        done = getattr(last, "done_reason", None) or "stop"
        calls = tuple(read_call(self.name, call_id(request, i), str(name), args,
                                cut=done == "length")
                      for i, (name, args) in enumerate(acc.calls))
        stop = "tool_use" if calls else ("length" if done == "length" else "stop")
        joined = "".join(acc.text)
        if not joined and not calls:
            raise empty_reply(self.name, stop)
        usage = Usage(*(token_count(self.name, self.host, getattr(last, k, None), k)
                        for k in ("prompt_eval_count", "eval_count")))
        return Reply(joined, calls, usage, stop, *reply_meta(last))

    def _map(self, exc: Exception, request: Request) -> ProviderFailure:
        sdk, model, p = _sdk(), self.model_for(request), self.name
        if isinstance(exc, sdk.ResponseError):
            return _response_error(exc, model, getattr(self._last, "headers", None))
        if isinstance(exc, ConnectionError):
            return ServerUnreachableError(
                f"ollama: cannot connect to {self.host}; start it with `ollama serve` (or set "
                f"OLLAMA_HOST to where it listens)", provider=p)
        import httpx
        if isinstance(exc, httpx.TimeoutException):
            return ProviderTimeoutError(
                f"ollama: no complete reply from {self.host} within {self.timeout:g}s; a first "
                f"call may be loading the model: raise timeout=..., or check `ollama ps`",
                provider=p)
        if isinstance(exc, httpx.TransportError):
            return ServerUnreachableError(f"ollama: the connection to {self.host} failed "
                                          f"({clip(exc)}); is `ollama serve` running?",
                                          provider=p)
        if _is_arguments_error(exc):
            return BadToolArgumentsError(
                "ollama: the model called a tool with arguments that are not a JSON object; "
                "retry, or use a model with better tool-calling support", provider=p)
        error = _rejected_body_error(exc)
        if error is not None:  # a 200 carrying `{"error": "..."}`, refused by the SDK's model
            return error_reply(p, error)
        if isinstance(exc, ValueError):
            return malformed(p, self.host, exc)
        return super()._map(exc, request)


class _Folded:
    """What a reply, or the lines of a streamed one read so far, add up to: the text pieces,
    the tool calls (name, arguments) and the last line (its stop reason and usage). Only these
    are kept: a stream's lines are not."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[tuple] = []
        self.last: Any = None


def _response_error(exc: Any, model: str, headers: Any = None) -> ProviderFailure:
    error = getattr(exc, "error", exc)  # (a dict when the body was `{"error": {...}}`)
    status, detail = int(getattr(exc, "status_code", 0) or 0), body_error({"error": error})
    detail = detail or clip(error)
    kw: dict[str, Any] = {"provider": "ollama", "status": status}
    if status < 400:  # an error line inside the NDJSON stream (status -1)
        return mid_reply("ollama", detail)
    low = detail.lower()
    if "model" in low and ("not found" in low or "pull" in low):  # (Ollama's own words for it)
        return ModelNotFoundError(f"ollama: model `{model}` is not installed ({detail}); run "
                                  f"`ollama pull {model}`", **kw)
    if status == 404:  # (any other 404: not an Ollama chat endpoint at that address)
        return ProviderFailure(f"ollama: the server answered 404 ({detail}): it has no Ollama "
                               f"chat endpoint; check the base URL (OLLAMA_HOST, or the "
                               f"provider's host)", **kw)
    if "does not support tools" in detail:
        return BadRequestError(f"ollama: model `{model}` does not support tools; pick a model "
                               f"with tool support (e.g. llama3.2, qwen2.5) and `ollama pull` "
                               f"it", **kw)
    if status in (401, 403):
        return AuthenticationError(f"ollama: the server rejected the credentials ({status}: "
                                   f"{detail}); check OLLAMA_API_KEY, or the proxy in front of "
                                   f"the server", **kw)
    wait = parse_retry_after(headers)
    when = f", retry after {wait:g}s" if wait is not None else ""  # (as `_errors` words it)
    if status == 429:
        return RateLimitedError(f"ollama: rate limited (429{when}): {detail}; wait, or run with "
                                f"--retries N", retry_after=wait, **kw)
    if status == 408:  # (the server, or a proxy in front of it, gave up waiting: transient)
        return ProviderTimeoutError(f"ollama: the server timed out the request (408{when}: "
                                    f"{detail}); try again, or run with --retries N",
                                    retry_after=wait, **kw)
    if status >= 500:
        return ServerError(f"ollama: server error {status}{when}: {detail}; check the `ollama "
                           f"serve` log, or run with --retries N", retry_after=wait, **kw)
    return BadRequestError(f"ollama: the server refused the request ({status}: {detail}); "
                           f"check the model name and the tool schemas", **kw)


def _chat_response(sdk: Any, part: Any) -> tuple[Any, dict[int, Any]]:
    """A reply (or stream line) as the SDK's `ChatResponse`, and the arguments of its tool
    calls that are not an object, by position, as they came: the SDK refuses the whole reply
    for one such call, whereas the call is answered as invalid and the model may call again
    (`read_call`, as the other adapters do; semantics §7)."""
    calls = part.get("message") if isinstance(part, Mapping) else None
    calls = calls.get("tool_calls") if isinstance(calls, Mapping) else None
    wire: dict[int, Any] = {}
    if isinstance(calls, list):
        for k, c in enumerate(calls):
            f = c.get("function") if isinstance(c, Mapping) else None
            if isinstance(f, Mapping) and not isinstance(f.get("arguments"), Mapping):
                wire[k] = f.get("arguments")  # (none at all, or null: no arguments)
        if wire:
            fixed = [dict(c, function=dict(c["function"], arguments={})) if k in wire else c
                     for k, c in enumerate(calls)]
            part = dict(part, message=dict(part["message"], tool_calls=fixed))
    return sdk.ChatResponse(**part), wire


def _rejected_body_error(exc: Exception) -> str | None:
    """The server's message when the SDK's reply model refused a body that is an error object
    (pydantic keeps the refused input on each error)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        inputs = [e.get("input") for e in errors() if not e.get("loc")[1:]]
    except Exception:  # noqa: BLE001 - not a pydantic error after all
        return None
    return next((d for d in map(body_error, inputs) if d), None)


def _is_arguments_error(exc: Exception) -> bool:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return False
    try:
        return any("arguments" in map(str, e.get("loc", ())) for e in errors())
    except Exception:  # noqa: BLE001 - not a pydantic error after all
        return False


def _schema(schema: Mapping[str, Any]) -> dict:
    out = thaw(schema) if schema else {}
    return out if out else {"type": "object", "properties": {}}


def to_messages(system: str, messages: Any) -> list[dict]:
    """`/api/chat` messages; a tool result names its tool (looked up by call id)."""
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    names: dict[str, str] = {}
    for m in messages:
        if m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                item["tool_calls"] = [{"function": {"name": c.name,
                                                    "arguments": echoed_arguments(c.arguments)}}
                                      for c in m.tool_calls]
                names.update((c.id, c.name) for c in m.tool_calls)
            out.append(item)
        elif m.role == "tool":
            item = {"role": "tool", "content": m.content}
            name = m.name or names.get(m.tool_call_id or "")
            if name:
                item["tool_name"] = name
            out.append(item)
        else:
            out.append({"role": "user", "content": m.content})
    return out


def ollama(model: str | None = None, **kw: Any) -> OllamaProvider:
    """An Ollama provider (`OLLAMA_HOST`, default http://127.0.0.1:11434); see OllamaProvider."""
    return OllamaProvider(model, **kw)

