"""The provider interface: one request (system, messages, tools) in, one reply out.

Role:       what the interpreter hands an LLM and gets back; adapters (mock, OpenAI, Anthropic,
            Ollama) only translate these plain values to and from a vendor's wire format.
Invariants: requests and replies are frozen data; tool-call arguments are JSON objects
            (`checked_reply`: the interpreter's check of every reply, as a provider is code too);
            a provider failure is a `ProviderError` with a message naming the fix.
"""
from __future__ import annotations

import asyncio
import inspect
from typing import Any, Mapping, Protocol, Sequence

import attrs

from ..frozen import a_type, host_data


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
    """One tool call in a model's reply: its id, the tool's name and the arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@attrs.frozen(slots=True)
class UnreadCall(ToolCall):
    """A tool call whose arguments the adapter could not read (not JSON, not an object):
    `arguments` is `{}`, `problem` says why; the call is answered as invalid without running
    (semantics §7). Speed: a class of its own, so that every other call carries no field more."""

    problem: str = ""


@attrs.frozen(slots=True)
class Message:
    """One history entry. `role` is user | assistant | tool; tool results carry the call id, and
    `is_error` when the call failed or was refused (an adapter whose API has the flag sends it)."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    thinking: tuple = ()  # (an assistant turn's vendor reasoning blocks; see `Reply.thinking`)


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
    """Tokens a model call read and wrote, as the provider reported them."""

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
    """A model's answer. `response_id` and `response_model` are what the provider's reply says
    of itself (its id, the model that answered), when it says so. `thinking` holds the vendor's
    reasoning blocks as JSON objects (Anthropic's `thinking` and `redacted_thinking`, signed):
    never shown or recorded, only sent back unchanged on the assistant turn of the reply's tool
    calls, as the vendor requires when extended thinking is on."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    # "stop" | "tool_use" | "length" | ...; by default "tool_use" when the reply calls tools
    # (as the original framework's mock), else "stop"
    stop_reason: str = attrs.field(default=attrs.Factory(
        lambda self: "tool_use" if self.tool_calls else "stop", takes_self=True))
    response_id: str | None = None
    response_model: str | None = None
    thinking: tuple = ()


class Provider:
    """Base class: implement `complete`; `acomplete` defaults to it. A subclass that implements
    only `async def acomplete` runs under `arun`, and under `run` too, outside a running event
    loop (as an async host tool does)."""

    name = "provider"

    def complete(self, request: Request) -> Reply:
        """The model's reply to `request`: by default, `acomplete`'s, awaited in a loop of its
        own; a `ProviderError` naming the fix when neither is implemented, or when `run()` was
        called inside a running event loop (which cannot await it)."""
        if type(self).acomplete is Provider.acomplete:
            raise ProviderError(f"the provider `{type(self).__name__}` implements neither "
                                f"`complete(request)` nor `async def acomplete(request)`")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.acomplete(request))
        raise ProviderError(f"the provider `{type(self).__name__}` is async only (`acomplete`), "
                            f"and the run was started with `run()` inside a running event loop, "
                            f"which cannot await it; use `await agent.arun(...)` (or `await "
                            f"agent.aresume(...)`) in async code, or implement `complete`")

    async def acomplete(self, request: Request) -> Reply:
        """The reply under `arun`: by default `complete`'s."""
        return self.complete(request)


class SupportsComplete(Protocol):
    """A provider of the host's own, `Provider` subclass or not: any object with
    `complete(request)` (and optionally `async def acomplete`), as `program.agent(provider=...)`
    and `Effects(provider=...)` take it."""

    def complete(self, request: Request) -> Reply:
        """The model's reply to `request` (a `Reply`), at once."""
        ...


def checked_reply(reply: Any) -> Reply:
    """`reply` with each tool call's arguments as plain JSON data (None reads as `{}`, as a None
    text reads as "", a None usage as `Usage()` and a None stop reason as "stop"); a
    `ProviderError` naming what is wrong when it is not a `Reply` with text, a tuple (or list)
    of calls, a `Usage` of int token counts ≥ 0 and a text stop reason, or a call has no text
    name and id (an id without NUL or lone surrogate), or arguments that are not a JSON object
    (JSON data nested at most `frozen.MAX_DEPTH` deep)."""
    if type(reply) is Reply and type(reply.text) is str and type(reply.tool_calls) is tuple \
            and reply.thinking == () and _plain_meta(reply) and all(_plain_call(c) for c in reply.tool_calls) \
            and _distinct(reply.tool_calls):
        return reply  # (the common reply: nothing to copy, so no copy; same answer as below)
    if not isinstance(reply, Reply):
        hint = ""
        if inspect.iscoroutine(reply):  # an `async def complete`: never awaited, nor warned of
            reply.close()
            hint = ("; `complete` must answer at once: put async code in `async def acomplete` "
                    "and run with `await agent.arun(...)`")
        raise ProviderError(f"malformed reply: the provider returned {a_type(reply)}, "
                            f"not a `Reply` with text and a tuple of tool calls{hint}")
    text, calls = reply.text, reply.tool_calls
    text = "" if text is None else text
    usage = Usage() if reply.usage is None else reply.usage
    stop = "stop" if reply.stop_reason is None else reply.stop_reason
    problem = _meta_problem(text, calls, usage, stop)
    if problem is not None:
        raise ProviderError(f"malformed reply: {problem}; return `Reply(text=..., tool_calls="
                            f"(ToolCall(...), ...), usage=Usage(input_tokens, output_tokens))`")
    checked = _renumbered(tuple(_checked_call(c) for c in calls))
    return attrs.evolve(reply, text=text, tool_calls=checked, usage=usage, stop_reason=stop,
                        thinking=_checked_thinking(reply.thinking))


def _checked_thinking(blocks: Any) -> tuple:
    """A reply's `thinking` as a tuple of JSON objects (a checkpoint keeps them)."""
    if blocks is None:
        return ()
    if isinstance(blocks, (tuple, list)):
        out = [host_data(b) for b in blocks]
        if all(problem is None and isinstance(b, dict) for b, problem in out):
            return tuple(b for b, _ in out)
    raise ProviderError("malformed reply: its `thinking` is not a tuple of JSON objects (the "
                        "vendor's reasoning blocks, sent back as they came)")


def _plain_meta(reply: Reply) -> bool:
    """`reply`'s usage and stop reason are as `checked_reply` keeps them (exact types)."""
    u = reply.usage
    return type(reply.stop_reason) is str and type(u) is Usage \
        and type(u.input_tokens) is int and type(u.output_tokens) is int \
        and u.input_tokens >= 0 and u.output_tokens >= 0


def _meta_problem(text: Any, calls: Any, usage: Any, stop: Any) -> str | None:
    """Why a reply's fields cannot be used (None: they can): the trace records them, and the run
    adds up the token counts."""
    for field, value, want in (("text", text, str), ("tool_calls", calls, (tuple, list)),
                               ("usage", usage, Usage), ("stop_reason", stop, str)):
        if not isinstance(value, want):
            what = {"tool_calls": "a tuple of tool calls", "usage": "a `Usage`"}.get(field, "text")
            return f"its `{field}` is {a_type(value)}, not {what}"
    for n in (usage.input_tokens, usage.output_tokens):
        if type(n) is not int or n < 0:
            return f"its `usage` holds {repr(n)[:40]} where a token count (an int ≥ 0) belongs"
    return None


def _distinct(calls: tuple) -> bool:
    return len(calls) < 2 or len({c.id for c in calls}) == len(calls)


def _renumbered(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """`calls` with every id unique: a later call repeating an earlier id (some servers number
    each reply's calls from 0 again, or repeat one) gets `<id>~2`, `<id>~3`, … Call results,
    check-ins and trace events are keyed by the id, so two calls under one id would answer, or
    decide, each other."""
    if _distinct(calls):
        return calls
    seen = {c.id for c in calls}
    used: set[str] = set()
    out = []
    for c in calls:
        if c.id in used:
            k = 2
            while f"{c.id}~{k}" in seen:
                k += 1
            seen.add(f"{c.id}~{k}")
            c = attrs.evolve(c, id=f"{c.id}~{k}")
        used.add(c.id)
        out.append(c)
    return tuple(out)


def _checked_call(call: Any) -> ToolCall:
    if not (isinstance(call, ToolCall) and isinstance(call.id, str) and isinstance(call.name, str)):
        raise ProviderError("malformed reply: a tool call without a text name and id")
    if not _storable(call.id):  # (a check-in id is made of it, and stores refuse such text)
        raise ProviderError(f"malformed reply: the call of `{call.name}` has an id holding a NUL "
                            f"or a lone surrogate")
    args, problem = host_data({} if call.arguments is None else call.arguments)
    if problem is None and not isinstance(args, dict):
        problem = "they are not a JSON object"
    if problem is not None:
        raise ProviderError(f"malformed reply: the model called `{call.name}` with arguments that "
                            f"cannot be used: {problem}")
    return attrs.evolve(call, arguments=args)


_FLAT = frozenset((str, int, float, bool, type(None)))


def _plain_call(call: Any) -> bool:
    """A call `_checked_call` would return unchanged: exact types, a storable id, and arguments a
    flat dict of text keys and JSON scalars (anything else takes the full check and a copy)."""
    if type(call) is not ToolCall or type(call.id) is not str or type(call.name) is not str:
        return False
    args = call.arguments
    if type(args) is not dict or not _storable(call.id):
        return False
    for k, v in args.items():
        if type(k) is not str or type(v) not in _FLAT or type(v) is int and not -_BIG < v < _BIG:
            return False  # (a huge int gets the full check: it may be too long to write)
    return True


_BIG = 1 << 63


def _storable(text: str) -> bool:
    """No NUL and no lone surrogate: text every run store keeps as (part of) an id."""
    return "\x00" not in text and (text.isascii() or not any("\ud800" <= c <= "\udfff" for c in text))


_META_CHARS = 256


def response_keys(reply: Reply) -> dict:
    """The `llm.replied` keys `response_id` and `response_model` of `reply`: each only when it is
    storable text of at most 256 characters (a host's provider may put anything there)."""
    out = {}
    for key in ("response_id", "response_model"):
        v = getattr(reply, key)
        if type(v) is str and v and len(v) <= _META_CHARS and _storable(v):
            out[key] = v
    return out


def error_kind(exc: BaseException) -> str:
    """A failure's low-cardinality class: a classified provider error's `kind` (`timeout`,
    `rate_limited`, ...), else the exception's class name."""
    try:
        kind = getattr(exc, "kind", None)
    except Exception:  # noqa: BLE001 - host code: a `kind` property that raises
        kind = None
    return kind if type(kind) is str and kind else type(exc).__name__


def estimate_tokens(text: str) -> int:
    """The mock's token estimate: ceil(chars / 4)."""
    return (len(text) + 3) // 4


def requested_model(provider: Any, request: Request) -> str | None:
    """The model `provider` will ask for on `request`: its `model_for` (an adapter's own model
    wins over the spec's), else the request's. What the trace records as the call's model."""
    pick = getattr(provider, "model_for", None)
    if callable(pick):
        try:
            model = pick(request)
        except Exception:  # noqa: BLE001 - host code: its call will fail, with its own error
            model = None
        if isinstance(model, str) and model:
            return model
    return request.model
