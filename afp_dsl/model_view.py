"""What an LLM call sends the model: as the run holds it, or scrubbed by `model = true` rules.

Role:       `sent(red, system, history, tools)` gives the system text, messages and tool specs of
            one request; with a model-side redactor (semantics §9, `model = true`) every text the
            model reads is scrubbed: the system prompt (a fact's JSON data by its keys too), each
            message and tool call's arguments (a tool result's JSON text by its keys too),
            each tool's description and the `description`s of its schema. Split from `interp`.
Invariants: the run's own history, plan and trace are never changed (copies are scrubbed); the
            schema's keywords are kept, as the model must fill them in (the plan validates
            arguments against the declared schema).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .providers.base import HistoryView, Message, ToolSpec


def sent(red: Any, system: str, history: Sequence[Message], tools: tuple) -> tuple:
    """(system, messages, tools) of a request; `red` None: as they are (the history as an O(1)
    snapshot)."""
    if red is None:
        return system, HistoryView(history), tools
    messages = [Message(m.role, red.scrub_text(_keyed(red, m)),
                        tuple(attrs.evolve(c, arguments=red.scrub(dict(c.arguments)))
                              for c in m.tool_calls), m.tool_call_id, m.name, m.is_error)
                for m in history]
    return _system(red, system), messages, tuple(_tool(red, t) for t in tools)


def _system(red: Any, system: str) -> str:
    """The system prompt scrubbed; a `fact`'s map data (its own piece, as one line of JSON
    between blank lines) by its keys too, so a value too short to be remembered (`pin: "12"`,
    a number) is still the placeholder."""
    if red.has_key_rules and "{" in system:
        system = "\n\n".join(red.scrub_json_keys(p) for p in system.split("\n\n"))
    return red.scrub_text(system)


def _keyed(red: Any, m: Message) -> str:
    """A tool result's text with the values under redacted keys of its JSON replaced (a
    structured result reaches the model as JSON text: its keys are read there)."""
    return red.scrub_json_keys(m.content) if m.role == "tool" else m.content


def _tool(red: Any, tool: ToolSpec) -> ToolSpec:
    return ToolSpec(tool.name, red.scrub_text(tool.description), _descriptions(red, tool.schema))


def _descriptions(red: Any, node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: (red.scrub_text(v) if k == "description" and isinstance(v, str)
                    else _descriptions(red, v)) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_descriptions(red, v) for v in node]
    return node
