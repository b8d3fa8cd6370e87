"""The Anthropic adapter (Messages API) over the official `anthropic` SDK.

Role:       `anthropic(model)`: maps a `Request` to `messages.create` (top-level system, tools
            with `input_schema`, assistant `tool_use` blocks, tool results as user `tool_result`
            blocks, alternating roles) and the message back to a `Reply`.
Emits:      `llm.chunk` events when streaming; typed `ProviderError`s (see `_http`).
Invariants: SDK retries are off; every call has a total deadline, `timeout=` (see
            `_deadline`), not only a per-read timeout; streaming and non-streaming give the
            same `Reply` (a stream cut short is an error); `Usage.input_tokens` includes the
            prompt cache's tokens; neither the key nor credentials in the base URL reach a
            message.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from ..frozen import thaw
from . import _options as check
from .base import Reply, Request, Usage
from ._errors import (MissingKeyError, ProviderFailure, body_error, empty_reply, error_reply,
                      malformed, map_sdk_error, shown_url, stream_cut, url_secrets)
from ._http import (Adapter, call_id, check_event_stream, echoed_arguments, model, models,
                    read_call, reply_meta, token_count)
from ._limits import DEFAULT_MAX_REPLY_BYTES, Tally

DEFAULT_MODEL = "claude-sonnet-4-5"
OFFICIAL = "https://api.anthropic.com"
# (`tool_use` is the stop reason of a reply with calls only: one that names it and calls nothing
# stopped, `stop`)
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop",
         "max_tokens": "length", "model_context_window_exceeded": "length",
         "refusal": "content_filter", "pause_turn": "pause"}


def _sdk() -> Any:
    try:
        import anthropic as sdk
    except ImportError:
        raise ProviderFailure('anthropic: the `anthropic` package is not installed; run '
                              'pip install "afp-dsl[anthropic]"', provider="anthropic") from None
    return sdk


class AnthropicProvider(Adapter):
    name = "anthropic"
    default_model = DEFAULT_MODEL

    def __init__(self, model: str | None = None, *, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 60.0, stream: bool = False,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
                 max_tokens: int = 4096, params: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None):
        env = os.environ if check.mapping("env", env, example="env=os.environ") is None else env
        check.text("api_key", api_key, example='api_key="sk-ant-..."')
        check.text("base_url", base_url, example='base_url="https://gateway.example/anthropic"')
        api_key = api_key or env.get("ANTHROPIC_API_KEY")
        given = bool(base_url)
        base_url = (base_url or env.get("ANTHROPIC_BASE_URL") or OFFICIAL).rstrip("/")
        check.http_url(base_url, given=given, env_name="ANTHROPIC_BASE_URL", example='`base_url="https://gateway.example/anthropic"`')
        super().__init__(model, timeout=timeout, stream=stream, max_reply_bytes=max_reply_bytes,
                         secrets=(api_key, *url_secrets(base_url)))
        if not api_key:
            raise MissingKeyError("anthropic: no API key; set ANTHROPIC_API_KEY (or pass "
                                  "api_key=...)", provider=self.name)
        self.base_url = base_url
        self.shown_url = shown_url(base_url)  # (what messages show: no credentials)
        self.max_tokens = check.count("max_tokens", max_tokens, example="max_tokens=4096")
        self.params = check.arguments("params", params, example='params={"temperature": 0}')
        sdk = _sdk()
        # The SDK's `timeout=` limits each socket read; `_http_client` adds the deadline of the
        # whole call (a trickling server or a keep-alive-only stream would hang otherwise) and
        # the cap on the reply's size.
        self._client = sdk.Anthropic(api_key=api_key, base_url=self.base_url,
                                     timeout=self.timeout, max_retries=0,
                                     http_client=self._http_client(sdk))

    # ------------------------------------------------------------ request
    def body(self, request: Request) -> dict:
        """The keyword arguments of `messages.create` for `request`."""
        kw: dict[str, Any] = {"model": self.model_for(request), "max_tokens": self.max_tokens,
                              "messages": to_messages(request.messages)}
        if request.system:
            kw["system"] = request.system
        if request.tools:
            kw["tools"] = [{"name": t.name, "description": t.description,
                            "input_schema": _schema(t.schema)} for t in request.tools]
        kw.update(self.params)
        return kw

    def _call(self, request: Request) -> Reply:
        kw = self.body(request)
        if self.stream:
            return self._streamed(request, kw)
        return self._reply(request, self._client.messages.create(**kw))

    # ------------------------------------------------------------ reply
    def _reply(self, request: Request, message: Any) -> Reply:
        content = getattr(message, "content", None)
        error = None if content is not None else body_error(message)
        if error is not None:  # a 200 carrying `{"type": "error", "error": ...}`
            raise error_reply(self.name, error)
        if content is None:
            raise malformed(self.name, self.shown_url, f"no content in {message!r}")
        blocks = [b for b in map(self._block, self._models(content, "content")) if b]
        usage = getattr(message, "usage", None)
        return self._finish(request, blocks, getattr(message, "stop_reason", None),
                            Usage(self._count(usage, *_INPUT), self._count(usage, _OUTPUT)),
                            reply_meta(message))

    def _finish(self, request: Request, blocks: list, stop_reason: str | None, usage: Usage,
                meta: tuple = (None, None)) -> Reply:
        text = "".join(v for k, v in blocks if k == "text")
        uses = [v for k, v in blocks if k == "tool_use"]
        thinking = tuple(v for k, v in blocks if k == "thinking")
        cut = _STOP.get(stop_reason or "") == "length"  # (arguments cut off are not JSON)
        # a block without an id gets the mock's `call-N-I`, as OpenAI's and Ollama's calls do;
        # the history then sends that id back on both the `tool_use` and the `tool_result`
        calls = tuple(read_call(self.name, cid if isinstance(cid, str) and cid else call_id(request, i),
                                str(name), args, cut=cut)
                      for i, (cid, name, args) in enumerate(uses))
        stop = "tool_use" if calls else _STOP.get(stop_reason or "end_turn", "stop")  # (unknown)
        if not text and not calls:
            raise empty_reply(self.name, stop)
        return Reply(text, calls, usage, stop, *meta, thinking=thinking)

    def _block(self, b: Any) -> tuple | None:
        """One content block as (kind, value); None for a kind afp does not use."""
        if b.type == "text":
            return ("text", self._piece(b, "text"))
        if b.type == "tool_use":
            return ("tool_use", (b.id, b.name, getattr(b, "input", None)))
        if b.type in _THINKING:
            return ("thinking", _thought(b))
        return None

    def _streamed(self, request: Request, kw: dict) -> Reply:
        acc = _Streamed(self.tally())
        with self._client.messages.create(**kw, stream=True) as stream:
            check_event_stream(self.name, self.shown_url, stream.response)
            for ev in stream:
                self._take(acc, ev)
        if acc.stop is None:  # no `message_delta` said why the reply ended: the stream was cut
            raise stream_cut(self.name, "a stop reason arrived")
        out = [_ended(b) for _, b in sorted(acc.blocks.items()) if b[0] != "other"]
        return self._finish(request, out, acc.stop, Usage(acc.tokens_in, acc.tokens_out),
                            acc.meta)

    def _take(self, acc: "_Streamed", ev: Any) -> None:
        """Add one stream event to what the stream has said so far."""
        t = ev.type
        if t == "message_start":
            acc.meta = reply_meta(ev.message)
            u = ev.message.usage
            acc.tokens_in, acc.tokens_out = self._count(u, *_INPUT), self._count(u, _OUTPUT)
        elif t == "content_block_start":
            acc.blocks[ev.index] = self._started(ev.content_block)
        elif t == "content_block_delta":
            self._delta(acc.blocks.get(ev.index), ev.delta, acc.tally)
        elif t == "message_delta":
            acc.stop = ev.delta.stop_reason or acc.stop
            acc.tokens_out = self._count(ev.usage, _OUTPUT) or acc.tokens_out
            acc.tokens_in = max(acc.tokens_in, self._count(ev.usage, *_INPUT))  # (counts add up)

    def _started(self, b: Any) -> list:
        """A block a `content_block_start` opens, as the deltas that follow extend it."""
        block = self._block(model(self.name, self.shown_url, b, "content_block"))
        if block is None:
            return ["other"]
        kind, value = block
        return ["tool_use", value[:2], [], value[2]] if kind == "tool_use" else [kind, value]

    def _delta(self, block: list | None, delta: Any, tally: Tally) -> None:
        if block is None:
            return
        kind = model(self.name, self.shown_url, delta, "delta").type
        field = _DELTAS.get((kind, block[0]))
        if field is None:
            return
        piece = self._piece(delta, field, "")
        tally.add(piece)
        if kind == "text_delta":
            block[1] += piece
            self._emit("llm.chunk", text=piece)
        elif kind == "input_json_delta":
            block[2].append(piece)
        else:  # (a thinking block's text, or its signature, which replaces the last)
            block[1][field] = block[1][field] + piece if field == "thinking" else piece

    def _piece(self, obj: Any, field: str, noun: str = " block") -> str:
        """A text field of a block (or a delta, `noun=""`); a MalformedReplyError when it is
        not text."""
        value = getattr(obj, field, None)
        if not isinstance(value, str):
            raise malformed(self.name, self.shown_url, f"the `{field}` of a `{obj.type}`{noun} "
                                                       f"is {check.a(value)}, not text")
        return value

    def _models(self, value: Any, field: str) -> list:
        return models(self.name, self.shown_url, value, field)

    def _count(self, usage: Any, *keys: str) -> int:
        return sum(token_count(self.name, self.shown_url, getattr(usage, k, None), k)
                   for k in keys)

    def _map(self, exc: Exception, request: Request) -> ProviderFailure:
        return map_sdk_error(exc, _sdk(), provider=self.name, key_env="ANTHROPIC_API_KEY",
                             url=self.shown_url, model=self.model_for(request),
                             timeout=self.timeout,
                             url_hint="check base_url or ANTHROPIC_BASE_URL")


_THINKING = ("thinking", "redacted_thinking")


def _thought(b: Any) -> dict:
    """A `thinking` or `redacted_thinking` block as the API must get it back: unchanged (its
    signature covers it), when extended thinking is on and the reply called tools."""
    if b.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": b.data}
    return {"type": "thinking", "thinking": b.thinking or "", "signature": b.signature or ""}


# All the input tokens of a call: the Messages API counts those read from the prompt cache and
# those written to it apart from `input_tokens` (OpenAI's `prompt_tokens`, like OTel's
# `gen_ai.usage.input_tokens`, includes them), so they are added back.
_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_OUTPUT = "output_tokens"


# The text field each kind of delta carries, by (delta type, type of the block it extends).
_DELTAS = {("text_delta", "text"): "text", ("input_json_delta", "tool_use"): "partial_json",
           ("thinking_delta", "thinking"): "thinking",
           ("signature_delta", "thinking"): "signature"}


class _Streamed:
    """What a streamed message has said so far: its blocks by index, each a list that the
    deltas extend ([kind, value], or ["tool_use", (id, name), input pieces, start input]);
    `tally` counts their size."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.blocks: dict[int, list] = {}
        self.stop: str | None = None
        self.tokens_in = self.tokens_out = 0
        self.meta: tuple = (None, None)


def _ended(b: list) -> tuple:
    """A streamed block as `_finish` takes it; a tool input sent whole in the start event (no
    deltas followed) is kept."""
    if b[0] == "tool_use":
        return ("tool_use", (*b[1], "".join(b[2]) or b[3]))
    return (b[0], b[1])


def _schema(schema: Mapping[str, Any]) -> dict:
    out = thaw(schema) if schema else {}
    return out if out else {"type": "object", "properties": {}}


def to_messages(messages: Any) -> list[dict]:
    """Messages API history: tool results become user `tool_result` blocks; roles alternate
    (consecutive same-role turns are merged); empty text blocks are dropped."""
    out: list[dict] = []
    for m in messages:
        role, blocks = _blocks(m)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(m: Any) -> tuple[str, list[dict]]:
    if m.role == "tool":
        block = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}
        if getattr(m, "is_error", False):  # (the Messages API's flag for a failed call)
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict] = [{"type": "text", "text": m.content}] if m.content else []
    if m.role == "assistant":  # (its thinking first: the API requires it to lead the turn)
        blocks = [dict(b) for b in getattr(m, "thinking", ())] + blocks
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name,
                    "input": echoed_arguments(c.arguments)} for c in m.tool_calls]
        return "assistant", blocks
    return "user", blocks


def anthropic(model: str | None = None, **kw: Any) -> AnthropicProvider:
    """An Anthropic Messages API provider; see AnthropicProvider."""
    return AnthropicProvider(model, **kw)
