"""The deterministic mock provider: scripted replies, or a demo mode; never the network.

Role:       the provider of `afpc test`, of examples and of benchmarks.
Emits:      `ProviderError` when a script runs out, naming the call number and what was asked;
            `TypeError`/`ValueError` at `mock(...)` for a malformed script, naming the item.
Invariants: replies are consumed one per LLM call in order (one counter per instance, shared
            by inner agents); demo mode depends only on the request, so replays are identical.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..prompts import is_prompt
from .base import Provider, ProviderError, Reply, Request, ToolCall, Usage, estimate_tokens
from .mock_args import demo_args

_FORMS = ("a reply is a string (the final answer), a list of `(tool, args)` pairs (a reply "
          "calling those tools), a dict `{\"text\": ..., \"calls\": [...]}`, or a `providers.Reply`")
_CALL_FORMS = ("a call is a `(tool, args)` pair, a dict `{\"name\": ..., \"arguments\": {...}}` "
               "or a `providers.ToolCall`")


def _as_reply(item: Any, number: int) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(text=item, stop_reason="stop")
    if isinstance(item, Mapping):
        calls = tuple(_as_call(c, number, i) for i, c in enumerate(item.get("calls", ())))
        return Reply(text=str(item.get("text", "")), tool_calls=calls,
                     stop_reason="tool_use" if calls else "stop")
    calls = tuple(_as_call(c, number, i) for i, c in enumerate(item))
    return Reply(tool_calls=calls, stop_reason="tool_use")


def _as_call(c: Any, number: int, index: int) -> ToolCall:
    if isinstance(c, ToolCall):
        return c
    if isinstance(c, Mapping):
        return ToolCall(str(c.get("id") or f"call-{number}-{index + 1}"), str(c["name"]),
                        _args(c.get("arguments", c.get("args", {}))))
    name, args = c[0], (c[1] if len(c) > 1 else {})
    return ToolCall(f"call-{number}-{index + 1}", str(name), _args(args))


def _args(args: Any) -> Any:
    """A copy of scripted arguments; anything not a mapping is kept, for the run to refuse."""
    return dict(args) if type(args) is dict or isinstance(args, Mapping) else args


QUOTE = 2000  # longest message the "no reply" error quotes


def _asked(request: Request) -> str:
    """The last message, quoted whole: the error is redacted when it is recorded, and a quote cut
    short could split a secret so that what is left no longer matches (semantics §9). A longer
    message is named by its length only."""
    for m in reversed(list(request.messages)):
        if m.content:
            who = "a tool result" if m.role == "tool" else f"the {m.role} message"
            if len(m.content) > QUOTE:
                return f"{who} ({len(m.content)} characters)"
            return f"{who} {m.content!r}"
    return "nothing (no messages)"


def _usage(request: Request, reply_text: str) -> Usage:
    return Usage(estimate_tokens(request.system) + sum(estimate_tokens(m.content)
                                                        for m in request.messages[-4:]),
                 estimate_tokens(reply_text))


class MockProvider(Provider):
    """`script` is a list of replies: a string (final text), a `Reply`, a list of
    `(tool, args)` pairs, or `{"text": ..., "calls": [...]}`; None selects the demo mode."""

    name = "mock"

    def __init__(self, script: Iterable[Any] | None = None, model: str | None = None):
        self.script = None if script is None else checked_script(script)
        self.model = model  # (`--provider mock:MODEL`: the model the trace records, as an adapter's)
        self.calls = 0
        self.ran_out: int | None = None  # the LLM call the script had no reply for (`afpc test`)

    def model_for(self, request: Request) -> str | None:
        """Its own model when it was given one, else the request's (the spec's)."""
        return self.model or request.model

    @property
    def remaining(self) -> int:
        """How many scripted replies are left (0 in demo mode, with no script)."""
        return 0 if self.script is None else max(0, len(self.script) - self.calls)

    def complete(self, request: Request) -> Reply:
        """The next scripted reply (or, with no script, the demo mode's); past the end of the
        script, a `ProviderError` naming the LLM call that found none."""
        self.calls += 1
        if self.script is None:
            return _demo(request, self.calls)
        if self.calls > len(self.script):
            self.ran_out = self.ran_out or self.calls
            n = request.call_number or self.calls  # (the run's numbering, as `llm.called`)
            mine = "" if n == self.calls else f"its reply #{self.calls}; "  # (a fresh mock, resumed)
            raise ProviderError(
                f"the mock script has no reply for LLM call #{n} ({mine}it scripted "
                f"{len(self.script)}); the model was asked: {_asked(request)}")
        # tool-call ids carry the run's LLM call number (a resumed run's go on from its own),
        # or this mock's count for a request that has none
        reply = _as_reply(self.script[self.calls - 1], request.call_number or self.calls)
        if reply.usage == Usage():
            reply = Reply(reply.text, reply.tool_calls, _usage(request, reply.text),
                          reply.stop_reason, reply.response_id, reply.response_model)
        return reply


def mock(script: Iterable[Any] | None = None, model: str | None = None) -> MockProvider:
    """The deterministic mock provider (semantics §11); `model`, when given, is the model the
    trace records for its calls (it answers the same whatever the model)."""
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise TypeError(f"`model` takes a model name (e.g. `model=\"mock-large\"`), not {model!r}")
    return MockProvider(script, model)


# ---------------------------------------------------------------- script checks
def checked_script(script: Any) -> list:
    """The script as a list, each item checked now (not at the LLM call that would use it)."""
    if isinstance(script, (str, bytes, Mapping)):
        why = ("a dict is one reply" if isinstance(script, Mapping)
               else "it would be replayed one character per LLM call")
        raise TypeError(f"the mock script is a list of replies, not {_a(script)} ({why}); for one "
                        f"reply pass a list of it: `mock([{_short(script)}])`")
    try:
        items = list(script)
    except TypeError:
        raise TypeError(f"the mock script must be a list of replies, e.g. `mock([\"Hello!\"])`, "
                        f"not {_a(script)}") from None
    for index, item in enumerate(items):
        _check_item(item, f"mock script item {index} (the reply to LLM call #{index + 1})")
    return items


def _check_item(item: Any, where: str) -> None:
    if isinstance(item, (str, Reply)):
        return
    if not isinstance(item, (list, tuple)) and isinstance(item, Mapping):  # (lists first: an
        _check_dict_reply(item, where)  # abstract-class check costs more than the rest)
    elif isinstance(item, (list, tuple)):
        if not item:
            raise ValueError(f"{where} is an empty list, which neither answers nor calls a tool; "
                             f"{_FORMS}")
        _check_calls(item, where)
    else:
        raise TypeError(f"{where} is {_a(item)}; {_FORMS}")


def _check_dict_reply(item: Mapping, where: str) -> None:
    extra = sorted(str(k) for k in item if k not in ("text", "calls"))
    if extra or not item:
        what = f"has unknown keys {', '.join(f'`{k}`' for k in extra)}" if extra else "is an empty dict"
        raise ValueError(f"{where} {what}; a dict reply has `text` and/or `calls`, "
                         f"e.g. `{{\"text\": \"Done.\", \"calls\": [(\"lookup\", {{}})]}}`")
    if "text" in item and not isinstance(item["text"], str):
        raise TypeError(f"{where}: `text` must be a string, not {_a(item['text'])}")
    calls = item.get("calls", ())
    if not isinstance(calls, (list, tuple)):
        raise TypeError(f"{where}: `calls` must be a list of calls, not {_a(calls)}; {_CALL_FORMS}")
    _check_calls(calls, where)


def _check_calls(calls: Any, where: str) -> None:
    for i, c in enumerate(calls):
        if type(c) is tuple and 1 <= len(c) <= 2 and type(c[0]) is str:
            continue  # (the common form, `("tool", {...})`, settled first: a script can be long)
        at = f"{where}, call {i}"
        if isinstance(c, ToolCall):
            continue
        if isinstance(c, Mapping):
            extra = sorted(str(k) for k in c if k not in ("name", "arguments", "args", "id"))
            if extra or not isinstance(c.get("name"), str) or not isinstance(c.get("id", ""), str):
                raise ValueError(f"{at} is not a call: it needs a string `name` (and optionally "
                                 f"`arguments` and a string `id`){_unknown(extra)}; "
                                 f"{_CALL_FORMS}")
        elif not isinstance(c, (list, tuple)) or not 1 <= len(c) <= 2 or not isinstance(c[0], str):
            raise TypeError(f"{at} is {_a(c) if not isinstance(c, (list, tuple)) else _short(c)}; "
                            f"{_CALL_FORMS}")


def _unknown(keys: list[str]) -> str:
    return f", not the keys {', '.join(f'`{k}`' for k in keys)}" if keys else ""


def _a(value: Any) -> str:
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} `{kind}`"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------- demo mode
def _demo(request: Request, number: int) -> Reply:
    messages = list(request.messages)  # "no tool has run yet" in this run: since its message
    start = max((i for i, m in enumerate(messages)  # (not a nudge or the wrap-up the loop wrote)
                 if m.role == "user" and not is_prompt(m.content)), default=0)
    ran = any(m.role == "tool" for m in messages[start:])
    for tool in (request.tools if not ran else ()):  # (built-ins come last: a real tool first)
        args = demo_args(tool.schema)  # the first tool small valid arguments are found for
        if args is not None:
            call = ToolCall(f"call-{tool.name}-1", tool.name, args)
            return Reply(tool_calls=(call,), usage=_usage(request, ""), stop_reason="tool_use")
    last = next((m.content for m in reversed(list(request.messages)) if m.role == "tool"), None)
    if last is None:  # (the person's message, not the wrap-up or a nudge the loop wrote)
        last = next((m.content for m in reversed(list(request.messages))
                     if m.role == "user" and not is_prompt(m.content)), "")
    text = f"Got it — {last}"
    return Reply(text=text, usage=_usage(request, text), stop_reason="stop")
