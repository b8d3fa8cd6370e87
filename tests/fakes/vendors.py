"""Wire formats of the three vendors, built from one neutral script of model turns.

Role:       `Turn(text, calls, usage)` → an OpenAI chat completion (JSON or SSE chunks), an
            Anthropic message (JSON or SSE events), an Ollama /api/chat reply (JSON or NDJSON);
            `scripted(vendor, items)` serves turns (or canned `Response`/`Hang`) in order.
Invariants: shapes follow each vendor's documented API; a call's `args` may be a raw string
            (to send arguments that are not JSON).
"""
from __future__ import annotations

import json
from typing import Any, Iterable

import attrs

from .server import Hang, Recorded, Response

# The model a fake reply names (a dated snapshot, as vendors answer), unlike the "m" asked for.
REPLY_MODEL = "m-2024-01-01"


@attrs.frozen
class Turn:
    text: str = ""
    calls: tuple = ()  # (id, name, args) with args a dict or a raw string
    usage: tuple = (11, 7)
    stop: str | None = None  # vendor stop reason override
    thinking: tuple = ()  # Anthropic `thinking` / `redacted_thinking` blocks, leading the reply


def _args_str(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, len(text) // n)
    return [text[i:i + size] for i in range(0, len(text), size)]


def _sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"


# ---------------------------------------------------------------- OpenAI
class OpenAIWire:
    path = "/v1/chat/completions"

    @staticmethod
    def reply(t: Turn) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": t.text or None}
        if t.calls:
            msg["tool_calls"] = [{"id": i, "type": "function",
                                  "function": {"name": n, "arguments": _args_str(a)}}
                                 for i, n, a in t.calls]
        finish = t.stop or ("tool_calls" if t.calls else "stop")
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                "model": REPLY_MODEL,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish,
                             "logprobs": None}],
                "usage": {"prompt_tokens": t.usage[0], "completion_tokens": t.usage[1],
                          "total_tokens": sum(t.usage)}}

    @staticmethod
    def stream(t: Turn) -> list[str]:
        def chunk(delta: dict, finish: str | None = None, usage: Any = None,
                  choices: bool = True) -> str:
            body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk",
                                    "created": 1, "model": REPLY_MODEL, "choices": []}
            if choices:
                body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
            if usage is not None:
                body["usage"] = usage
            return _sse(body)
        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": p}) for p in _pieces(t.text)]
        for k, (i, n, a) in enumerate(t.calls):
            out.append(chunk({"tool_calls": [{"index": k, "id": i, "type": "function",
                                              "function": {"name": n, "arguments": ""}}]}))
            out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]})
                    for p in _pieces(_args_str(a))]
        out.append(chunk({}, t.stop or ("tool_calls" if t.calls else "stop")))
        out.append(chunk({}, usage={"prompt_tokens": t.usage[0],
                                    "completion_tokens": t.usage[1],
                                    "total_tokens": sum(t.usage)}, choices=False))
        return out + ["data: [DONE]\n\n"]

    @staticmethod
    def error(status: int, message: str, headers: tuple = ()) -> Response:
        return Response(status, {"error": {"message": message, "type": "error", "code": None}},
                        headers)

    @classmethod
    def broken_stream(cls, message: str) -> Response:
        """A stream that starts well, then carries an error event."""
        chunks = cls.stream(Turn("Hello there"))[:2] + [_sse({"error": {
            "message": message, "type": "server_error"}})]
        return Response(200, chunks=chunks, content_type="text/event-stream")


# ---------------------------------------------------------------- Anthropic
class AnthropicWire:
    path = "/v1/messages"

    @staticmethod
    def _blocks(t: Turn) -> list[dict]:
        blocks: list[dict] = [dict(b) for b in t.thinking]
        blocks += [{"type": "text", "text": t.text}] if t.text else []
        blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in t.calls]
        return blocks

    @classmethod
    def reply(cls, t: Turn) -> dict:
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": REPLY_MODEL,
                "content": cls._blocks(t),
                "stop_reason": t.stop or ("tool_use" if t.calls else "end_turn"),
                "stop_sequence": None,
                "usage": {"input_tokens": t.usage[0], "output_tokens": t.usage[1]}}

    @staticmethod
    def stream(t: Turn) -> list[str]:
        out = [_sse({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": REPLY_MODEL,
            "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": t.usage[0], "output_tokens": 1}}}, "message_start"),
            _sse({"type": "ping"}, "ping")]
        index = 0
        for b in t.thinking:
            out += _thinking_events(index, b)
            index += 1
        if t.text:
            out.append(_sse({"type": "content_block_start", "index": index,
                             "content_block": {"type": "text", "text": ""}},
                            "content_block_start"))
            out += [_sse({"type": "content_block_delta", "index": index,
                          "delta": {"type": "text_delta", "text": p}}, "content_block_delta")
                    for p in _pieces(t.text)]
            out.append(_sse({"type": "content_block_stop", "index": index},
                            "content_block_stop"))
            index += 1
        for k, (i, n, a) in enumerate(t.calls, start=index):
            out.append(_sse({"type": "content_block_start", "index": k, "content_block": {
                "type": "tool_use", "id": i, "name": n, "input": {}}}, "content_block_start"))
            out += [_sse({"type": "content_block_delta", "index": k,
                          "delta": {"type": "input_json_delta", "partial_json": p}},
                         "content_block_delta") for p in _pieces(_args_str(a))]
            out.append(_sse({"type": "content_block_stop", "index": k}, "content_block_stop"))
        out.append(_sse({"type": "message_delta", "delta": {
            "stop_reason": t.stop or ("tool_use" if t.calls else "end_turn"),
            "stop_sequence": None}, "usage": {"output_tokens": t.usage[1]}}, "message_delta"))
        return out + [_sse({"type": "message_stop"}, "message_stop")]

    @staticmethod
    def error(status: int, message: str, headers: tuple = ()) -> Response:
        kind = {404: "not_found_error", 429: "rate_limit_error", 401: "authentication_error",
                529: "overloaded_error"}.get(status, "api_error")
        return Response(status, {"type": "error", "error": {"type": kind, "message": message}},
                        headers)

    @classmethod
    def broken_stream(cls, message: str) -> Response:
        chunks = cls.stream(Turn("Hello there"))[:3] + [_sse({"type": "error", "error": {
            "type": "overloaded_error", "message": message}}, "error")]
        return Response(200, chunks=chunks, content_type="text/event-stream")


def _thinking_events(index: int, block: dict) -> list[str]:
    """A thinking block streamed as the Messages API streams it: `thinking_delta`s, then one
    `signature_delta`; a `redacted_thinking` block arrives whole in its start event."""
    if block["type"] == "redacted_thinking":
        out = [_sse({"type": "content_block_start", "index": index, "content_block": block},
                    "content_block_start")]
    else:
        delta = lambda d: _sse({"type": "content_block_delta", "index": index,  # noqa: E731
                                "delta": d}, "content_block_delta")
        out = [_sse({"type": "content_block_start", "index": index, "content_block": {
            "type": "thinking", "thinking": "", "signature": ""}}, "content_block_start")]
        out += [delta({"type": "thinking_delta", "thinking": p})
                for p in _pieces(block["thinking"])]
        out.append(delta({"type": "signature_delta", "signature": block["signature"]}))
    return out + [_sse({"type": "content_block_stop", "index": index}, "content_block_stop")]


# ---------------------------------------------------------------- Ollama
class OllamaWire:
    path = "/api/chat"

    @staticmethod
    def _message(text: str, calls: Iterable = ()) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        calls = list(calls)
        if calls:
            msg["tool_calls"] = [{"function": {"name": n, "arguments": a}} for _, n, a in calls]
        return msg

    @classmethod
    def reply(cls, t: Turn) -> dict:
        return {"model": REPLY_MODEL, "created_at": "2024-01-01T00:00:00Z",
                "message": cls._message(t.text, t.calls), "done": True,
                "done_reason": t.stop or "stop", "total_duration": 1,
                "prompt_eval_count": t.usage[0], "eval_count": t.usage[1]}

    @classmethod
    def stream(cls, t: Turn) -> list[str]:
        line = lambda d: json.dumps(d) + "\n"  # noqa: E731
        base = {"model": REPLY_MODEL, "created_at": "2024-01-01T00:00:00Z", "done": False}
        out = [line(dict(base, message=cls._message(p))) for p in _pieces(t.text)]
        if t.calls:
            out.append(line(dict(base, message=cls._message("", t.calls))))
        final = cls.reply(Turn("", (), t.usage, t.stop))
        return out + [line(final)]

    @staticmethod
    def error(status: int, message: str, headers: tuple = ()) -> Response:
        return Response(status, {"error": message}, headers)

    @classmethod
    def broken_stream(cls, message: str) -> Response:
        chunks = cls.stream(Turn("Hello there"))[:1] + [json.dumps({"error": message}) + "\n"]
        return Response(200, chunks=chunks, content_type="application/x-ndjson")


VENDORS = {"openai": OpenAIWire, "anthropic": AnthropicWire, "ollama": OllamaWire}


def render(vendor: type, item: Any, streaming: bool) -> Response | Hang:
    if isinstance(item, (Response, Hang)):
        return item
    if streaming:
        ctype = "application/x-ndjson" if vendor is OllamaWire else "text/event-stream"
        return Response(200, chunks=vendor.stream(item), content_type=ctype)
    return Response(200, vendor.reply(item))


def scripted(vendor: type, items: Iterable[Any]):
    """A handler serving `items` (Turn, Response or Hang) one per chat request, in order."""
    queue = list(items)

    def handle(rec: Recorded) -> Response | Hang:
        if rec.path.rstrip("/") != vendor.path:
            return Response(404, {"error": f"no route {rec.path}"})
        if not queue:
            return vendor.error(500, "the fake server has no more scripted replies")
        streaming = isinstance(rec.body, dict) and bool(rec.body.get("stream"))
        return render(vendor, queue.pop(0), streaming)
    return handle
