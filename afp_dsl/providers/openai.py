"""The OpenAI adapter (Chat Completions) over the official `openai` SDK; any compatible server.

Role:       `openai(model, base_url=...)`: maps a `Request` to `chat.completions.create` (system
            message, user/assistant/tool messages, function tools) and the completion back to a
            `Reply` (text, tool calls with JSON-decoded arguments, usage, stop reason).
Emits:      `llm.chunk` events when streaming; typed `ProviderError`s (see `_http`).
Invariants: SDK retries are off (retries are `with_retry`'s, visible); every call has a total
            deadline, `timeout=` (see `_deadline`), not only a per-read timeout;
            streaming and non-streaming give the same `Reply` (a stream cut short is an
            error); neither the key nor credentials in the base URL reach a message.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from . import _options as check
from .base import Reply, Request, Usage
from ._errors import (MissingKeyError, ProviderFailure, body_error, empty_reply, error_reply,
                      malformed, map_sdk_error, shown_url, stream_cut, url_secrets)
from ._http import (Adapter, call_id, check_event_stream, dump_arguments, model, models,
                    read_call, reply_meta, token_count)
from ._limits import DEFAULT_MAX_REPLY_BYTES, Tally

DEFAULT_MODEL = "gpt-4o-mini"
OFFICIAL = "https://api.openai.com/v1"
# (`tool_use` is the stop reason of a reply with calls only: one that names it and calls nothing
# stopped, `stop`)
_STOP = {"stop": "stop", "tool_calls": "stop", "function_call": "stop",
         "length": "length", "content_filter": "content_filter"}


def _sdk() -> Any:
    try:
        import openai as sdk
    except ImportError:
        raise ProviderFailure('openai: the `openai` package is not installed; run '
                              'pip install "afp-dsl[openai]"', provider="openai") from None
    return sdk


class OpenAIProvider(Adapter):
    name = "openai"
    default_model = DEFAULT_MODEL

    def __init__(self, model: str | None = None, *, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 60.0, stream: bool = False,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
                 max_tokens: int | None = None, params: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None, name: str = "openai"):
        env = os.environ if check.mapping("env", env, example="env=os.environ") is None else env
        check.text("api_key", api_key, example='api_key="sk-..."')
        check.text("base_url", base_url, example='base_url="http://127.0.0.1:8080/v1"')
        if not isinstance(name, str) or not name:
            raise TypeError(f"`name` takes a `str` naming the provider in messages (e.g. "
                            f"`name=\"llama.cpp\"`), not {check.a(name)}")
        api_key = api_key or env.get("OPENAI_API_KEY")
        given = bool(base_url)
        base_url = (base_url or env.get("OPENAI_BASE_URL") or OFFICIAL).rstrip("/")
        check.http_url(base_url, given=given, env_name="OPENAI_BASE_URL", example='`base_url="http://127.0.0.1:8080/v1"`')
        super().__init__(model, timeout=timeout, stream=stream, max_reply_bytes=max_reply_bytes,
                         secrets=(api_key, *url_secrets(base_url)))
        self.name, self.base_url = name, base_url
        self.shown_url = shown_url(base_url)  # (what messages show: no credentials)
        if not api_key:
            if base_url == OFFICIAL:
                raise MissingKeyError(
                    "openai: no API key; set OPENAI_API_KEY (or pass api_key=...), or point "
                    "base_url / OPENAI_BASE_URL at a local OpenAI-compatible server",
                    provider=name)
            api_key = "not-needed"  # local servers (llama.cpp, vLLM, LM Studio) ignore it
        self.max_tokens = None if max_tokens is None else check.count(
            "max_tokens", max_tokens, example="max_tokens=1024")
        self.params = check.arguments("params", params, example='params={"temperature": 0}')
        sdk = _sdk()
        # The SDK's `timeout=` limits each socket read; `_http_client` adds the deadline of the
        # whole call (a trickling server or a keep-alive-only stream would hang otherwise) and
        # the cap on the reply's size.
        self._client = sdk.OpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout,
                                  max_retries=0,
                                  http_client=self._http_client(sdk))

    # ------------------------------------------------------------ request
    def body(self, request: Request) -> dict:
        """The keyword arguments of `chat.completions.create` for `request`."""
        kw: dict[str, Any] = {"model": self.model_for(request),
                              "messages": to_messages(request.system, request.messages)}
        if request.tools:
            kw["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description,
                "parameters": _schema(t.schema)}} for t in request.tools]
        if self.max_tokens is not None:
            kw["max_tokens"] = self.max_tokens
        kw.update(self.params)
        return kw

    def _call(self, request: Request) -> Reply:
        kw = self.body(request)
        if self.stream:
            return self._streamed(request, kw)
        completion = self._client.chat.completions.create(**kw)
        return self._reply(request, completion)

    # ------------------------------------------------------------ reply
    def _reply(self, request: Request, completion: Any) -> Reply:
        choices = getattr(completion, "choices", None)
        error = None if choices else body_error(completion)
        if error is not None:  # a 200 carrying `{"error": ...}` (gateways answer so)
            raise error_reply(self.name, error)
        if not choices:
            raise malformed(self.name, self.shown_url, f"no choices in {completion!r}")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise malformed(self.name, self.shown_url, "a choice without a message")
        model(self.name, self.shown_url, message, "message")
        raw_calls = [_raw_call(self, c) for c in self._models(message.tool_calls, "tool_calls")]
        content = self._text(message.content, "message.content")
        refusal = getattr(message, "refusal", None) or ""
        return self._finish(request, content or refusal, raw_calls,
                            _refused(getattr(choice, "finish_reason", None), content, refusal),
                            self._usage(getattr(completion, "usage", None)),
                            reply_meta(completion))

    def _finish(self, request: Request, text: str, raw_calls: list, finish: str | None,
                usage: Usage, meta: tuple = (None, None)) -> Reply:
        cut = finish == "length"  # (arguments cut off at the token limit are not JSON)
        calls = tuple(read_call(self.name, cid or call_id(request, i), str(name), args, cut=cut)
                      for i, (cid, name, args) in enumerate(raw_calls))
        stop = "tool_use" if calls else _STOP.get(finish or "stop", "stop")  # (unknown: stop)
        if not text and not calls:
            raise empty_reply(self.name, stop)
        return Reply(text, calls, usage, stop, *meta)

    def _streamed(self, request: Request, kw: dict) -> Reply:
        acc = _Streamed(self.tally())
        stream = self._client.chat.completions.create(
            **kw, stream=True, stream_options={"include_usage": True})
        with stream:
            check_event_stream(self.name, self.shown_url, stream.response)
            for chunk in stream:
                self._take(acc, chunk)
        if acc.finish is None:  # no chunk said why the reply ended: the stream was cut short
            raise stream_cut(self.name, "a finish reason arrived")
        said, refused = "".join(acc.text), "".join(acc.refusal)
        return self._finish(request, said or refused, acc.calls.raw(),
                            _refused(acc.finish, said, refused), acc.usage, acc.meta)

    def _take(self, acc: "_Streamed", chunk: Any) -> None:
        """Add one stream chunk to what the stream has said so far."""
        if acc.meta == (None, None):
            acc.meta = reply_meta(chunk)
        if getattr(chunk, "usage", None) is not None:
            acc.usage = self._usage(chunk.usage)
        for choice in self._models(getattr(chunk, "choices", None), "choices"):
            acc.finish = choice.finish_reason or acc.finish
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            model(self.name, self.shown_url, delta, "delta")
            for kind, piece in (("text", self._text(delta.content, "delta.content")),
                                ("refusal", getattr(delta, "refusal", None))):
                if piece:
                    acc.tally.add(piece)
                    getattr(acc, kind).append(piece)
                    self._emit("llm.chunk", text=piece)
            for tc in self._models(delta.tool_calls, "tool_calls"):
                acc.tally.add(getattr(tc.function, "arguments", None))
                acc.calls.add(tc)

    def _text(self, content: Any, field: str) -> str:
        """A message's (or delta's) content as text: a list of `{"type": "text", "text": ...}`
        parts (as Mistral-style servers send) is their texts joined; anything else but text
        or null is a MalformedReplyError."""
        if content is None or isinstance(content, str):
            return content or ""
        if isinstance(content, list) and all(map(_text_part, content)):
            return "".join(_part(c, "text") for c in content)
        what = "a list of parts other than text parts" if isinstance(content, list) \
            else check.a(content)
        raise malformed(self.name, self.shown_url, f"`{field}` is {what}, not text")

    def _models(self, value: Any, field: str) -> list:
        return models(self.name, self.shown_url, value, field)

    def _usage(self, usage: Any) -> Usage:
        return Usage(*(token_count(self.name, self.shown_url, getattr(usage, k, None), k)
                       for k in ("prompt_tokens", "completion_tokens")))

    def _map(self, exc: Exception, request: Request) -> ProviderFailure:
        return map_sdk_error(exc, _sdk(), provider=self.name, key_env="OPENAI_API_KEY",
                             url=self.shown_url, model=self.model_for(request),
                             timeout=self.timeout,
                             url_hint="check base_url or OPENAI_BASE_URL")


def _refused(finish: str | None, content: str | None, refusal: str) -> str | None:
    """The finish reason of a reply that is a refusal (`message.refusal`, with no content; its
    finish reason is `stop`): `content_filter`, as the model declined to answer."""
    return "content_filter" if refusal and not content and finish in (None, "stop") else finish


class _Streamed:
    """What a streamed completion has said so far (its size counted by `tally`)."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls = _StreamedCalls()
        self.finish: str | None = None
        self.usage, self.meta = Usage(), (None, None)


def _part(part: Any, key: str) -> Any:
    return part.get(key) if isinstance(part, Mapping) else getattr(part, key, None)


def _text_part(part: Any) -> bool:
    return _part(part, "type") == "text" and isinstance(_part(part, "text"), str)


def _raw_call(p: OpenAIProvider, c: Any) -> tuple:
    fn = getattr(c, "function", None)
    if fn is None:  # e.g. a `custom` tool call: afp declares function tools only
        raise malformed(p.name, p.shown_url, f"a tool call of type `{getattr(c, 'type', '?')}`")
    return c.id, fn.name, fn.arguments


class _StreamedCalls:
    """Tool-call deltas merged into calls, each as [id, name, argument pieces]: by `index`; a
    delta without one (some compatible servers send none) starts a call of its own when it
    carries an id other than the last call's, and otherwise continues the last call."""

    def __init__(self) -> None:
        self.slots: dict[int, list] = {}
        self.last: int | None = None

    def add(self, tc: Any) -> None:
        self.last = key = self._key(tc)
        slot = self.slots.setdefault(key, [None, "", []])
        if tc.id:
            slot[0] = tc.id
        fn = tc.function
        if fn is not None:
            if fn.name:
                slot[1] += fn.name
            if fn.arguments:
                slot[2].append(fn.arguments)

    def _key(self, tc: Any) -> int:
        index = getattr(tc, "index", None)
        if type(index) is int:
            return index
        if self.last is None:
            return 0
        last_id = self.slots[self.last][0]
        return max(self.slots) + 1 if tc.id and last_id and tc.id != last_id else self.last

    def raw(self) -> list[tuple]:
        return [(c[0], c[1], "".join(c[2])) for _, c in sorted(self.slots.items())]


def _schema(schema: Mapping[str, Any]) -> dict:
    from ..frozen import thaw
    out = thaw(schema) if schema else {}
    return out if out else {"type": "object", "properties": {}}


def to_messages(system: str, messages: Any) -> list[dict]:
    """The Chat Completions `messages` for a system prompt and a history."""
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "",
                        "content": m.content})
        elif m.role == "assistant":
            # (`content` may be null only beside `tool_calls`: the API refuses it otherwise)
            item: dict[str, Any] = {"role": "assistant",
                                    "content": m.content or (None if m.tool_calls else "")}
            if m.tool_calls:
                item["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": dump_arguments(c.arguments)}}
                    for c in m.tool_calls]
            out.append(item)
        else:
            out.append({"role": "user", "content": m.content})
    return out


def openai(model: str | None = None, **kw: Any) -> OpenAIProvider:
    """An OpenAI (or OpenAI-compatible, with `base_url=`) provider; see OpenAIProvider."""
    return OpenAIProvider(model, **kw)
