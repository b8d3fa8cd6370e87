"""The provider interface: one request (system, messages, tools) in, one reply out.

Role:       what the interpreter hands an LLM and gets back; adapters (mock, OpenAI, Anthropic,
            Ollama) only translate these plain values to and from a vendor's wire format.
Invariants: requests and replies are frozen data; tool-call arguments are JSON objects;
            a provider failure is a `ProviderError` with a message naming the fix.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import attrs


class ProviderError(Exception):
    """The provider failed (missing key, unreachable server, exhausted script, bad reply)."""


@attrs.frozen(slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    schema: Mapping[str, Any]


@attrs.frozen(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]


@attrs.frozen(slots=True)
class Message:
    """One history entry. `role` is user | assistant | tool; tool results carry the call id."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class HistoryView(Sequence):
    """The first `n` messages of an append-only history: an O(1), unchanging snapshot."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: Sequence[Message], n: int | None = None):
        self._items = items
        self._n = len(items) if n is None else n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._items[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._items[i]

    def __iter__(self):
        items = self._items
        for j in range(self._n):
            yield items[j]

    def __repr__(self) -> str:
        return f"HistoryView({self._n} messages)"


@attrs.frozen(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@attrs.frozen(slots=True)
class Request:
    """One LLM call. `call_number` counts LLM calls of the whole test/session (1-based)."""

    system: str
    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    call_number: int = 0


@attrs.frozen(slots=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    stop_reason: str = "stop"  # "stop" | "tool_use" | "length" | ...


class Provider:
    """Base class: implement `complete`; `acomplete` defaults to it."""

    name = "provider"

    def complete(self, request: Request) -> Reply:  # pragma: no cover - interface
        raise NotImplementedError

    async def acomplete(self, request: Request) -> Reply:
        return self.complete(request)


def estimate_tokens(text: str) -> int:
    """The mock's token estimate: ceil(chars / 4)."""
    return (len(text) + 3) // 4
