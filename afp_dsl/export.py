"""Trace exports: JSONL (the stable event schema) and `thinking` (the "watch it think" beats).

Role:       pure functions from a run's (redacted) events to text; `afpc trace export` and the
            API call them. OTLP JSON lives in `otel`, the HTML report in `report_html`.
Invariants: only the stored, already-redacted events are read, so no export can hold a value
            the trace does not; output is deterministic (sorted keys, no clock).
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any, Iterable, Mapping

from .trace import Event, dumps, json_text, run_events
from .why import items, payload, short

SCHEMA_VERSION = 1
THINKING_ZERO = {"ms": 0, "tokens": 0, "tokensIn": 0, "tokensOut": 0}  # (every step: the same keys)


def schema() -> dict:
    """The JSON Schema of one JSONL line (shipped as `afp_dsl/schemas/trace-event.schema.json`)."""
    text = resources.files("afp_dsl").joinpath("schemas/trace-event.schema.json").read_text(
        encoding="utf-8")
    return json.loads(text)


def to_jsonl(events: Iterable[Event]) -> str:
    """One event per line, in `seq` order, in the trace's one JSON encoding (`events`: the
    run's trace, a list of its events, or its `RunResult`)."""
    return "".join(e.to_json() + "\n" for e in run_events(events))


# ---------------------------------------------------------------- thinking
def to_thinking(events: Iterable[Event], run: Mapping[str, Any] | None = None,
                asker: str = "you") -> dict:
    """The "watch it think" trace: a `task`/`agent`/`model`/`asker` header, `steps` of kinds
    `prompt`, `ask`, `return`, `answer` (each with `brain` and `cost`), and `at`, the id of
    the event behind each step (index-aligned with `steps`)."""
    evs = run_events(events)
    started = next((payload(e) for e in evs if e.kind == "run.started"), {})
    run = run or {}
    b = _Beats(asker)
    for e in evs:
        b.feed(e)
    run_id = run.get("run_id") or started.get("run_id") or ""
    return {"task": str(started.get("message") or ""), "title": f"run {run_id}".strip(),
            "agent": started.get("agent") or run.get("agent") or "agent",
            "model": started.get("model") or "default", "asker": asker,
            "steps": b.steps, "at": b.at}


class _Beats:
    """Folds events into beats, carrying the reasoning of a reply to the asks it makes."""

    def __init__(self, asker: str):
        self.asker = asker
        self.steps: list[dict] = []
        self.at: list[str] = []
        self.reply: dict = {}
        self.reply_used = False
        self.carry = [0, 0]  # (tokens of replies that made no beat: a nudged one's, say)
        self.routing = ""
        self.tools_seen: list[dict] | None = None
        self.calls: dict[str, dict] = {}

    def push(self, e: Event, step: dict) -> None:
        self.steps.append(step)
        self.at.append(e.id)

    def lead(self, brain: str) -> str:
        if not self.routing:
            return brain
        lead, self.routing = self.routing, ""
        return f"{lead}\n\n{brain}" if brain else lead

    def feed(self, e: Event) -> None:
        """Add the beat of `e`, if any; a malformed event of a foreign trace adds none."""
        p = payload(e)
        fn = getattr(self, "_" + e.kind.replace(".", "_"), None)
        if fn is not None:
            try:
                fn(e, p)
            except (TypeError, ValueError, AttributeError, KeyError, IndexError):
                pass

    def _run_started(self, e: Event, p: dict) -> None:
        # (as the original's `getTrace`: the prompt beat's brain is the task itself)
        self.push(e, {"kind": "prompt", "brain": str(p.get("message") or ""),
                      "cost": dict(THINKING_ZERO)})

    def _cursor_moved(self, e: Event, p: dict) -> None:
        if p.get("cause") in ("stay", "none"):
            return
        via = f" over `{p['edge']}`" if p.get("edge") else ""
        self.routing = (f"Skill `{p.get('to')}` is now current ({p.get('cause')}{via}, "
                        f"from `{p.get('from') or 'start'}`).")

    def _context_composed(self, e: Event, p: dict) -> None:
        self.tools_seen = [{"name": t.get("name")} for t in items(p, "tools")] or None

    def _llm_replied(self, e: Event, p: dict) -> None:
        if not self.reply_used:  # (a reply that asked nothing and did not end the run)
            self._add(_usage(self.reply))
        self.reply, self.reply_used = p, False

    def _add(self, usage: list[int]) -> None:
        self.carry = [self.carry[0] + usage[0], self.carry[1] + usage[1]]

    def _cost(self) -> dict:
        """The tokens of the reply behind this beat, on its first beat only, with those of the
        replies before it that made no beat, so the beats' costs add up to the run's tokens."""
        if self.reply_used:
            return dict(THINKING_ZERO)
        usage = _usage(self.reply)
        tin, tout = usage[0] + self.carry[0], usage[1] + self.carry[1]
        self.carry = [0, 0]
        return {"ms": 0, "tokens": tin + tout, "tokensIn": tin, "tokensOut": tout}

    def _tool_called(self, e: Event, p: dict) -> None:
        name, args = p.get("tool") or "(tool)", p.get("args")
        skill = (args or {}).get("id") if name == "read_skill" and isinstance(args, dict) else None
        self.calls[p.get("call_id") or ""] = {"tool": name, "skill": skill}
        first = not self.reply_used
        # (every call's `brain` is the reply's content; a reply with none gets the framework's
        # line, as the original's commentary fills it, so no beat is blank)
        said = self.reply.get("text") or (f"The model reads skill `{skill}`." if skill else
                                          f"The model calls `{name}`.")
        step = {"kind": "ask", "tool": skill or name, "toolName": name,
                "input": args if isinstance(args, dict) else {"value": args},
                "brain": self.lead(said), "cost": self._cost()}
        if first and self.tools_seen:
            step["toolsSeen"] = self.tools_seen
        self.reply_used = True
        self.push(e, step)

    def _tool_returned(self, e: Event, p: dict) -> None:
        started = self.calls.pop(p.get("call_id") or "", None) or {"tool": p.get("tool"),
                                                                  "skill": None}
        name, result = started["tool"] or "(tool)", p.get("result")
        read = p.get("read", result)  # (what the model read: a pick's sentence, a step's line)
        step = {"kind": "return", "tool": started["skill"] or name, "toolName": name,
                "replyType": "instruction" if name == "read_skill" else "data",
                "output": read if isinstance(read, dict) else {"value": read},
                "brain": (f"`{name}` returned {p.get('status')}: "
                          f"{short(p.get('read', result), 160)}"),
                "brainMode": "act" if name == "read_skill" else "reason",
                "brainSource": "framework", "cost": dict(THINKING_ZERO)}
        if started["skill"]:
            step["skill"] = started["skill"]
        if p.get("status") not in ("success", None):
            step["error"] = str(p.get("status"))
        self.push(e, step)

    def _run_resumed(self, e: Event, p: dict) -> None:
        """A retry after an error goes on with the same run: the error was not its answer (the
        answer beat ends the beats)."""
        if p.get("retry") and self.steps and self.steps[-1].get("kind") == "answer":
            cost = self.steps.pop()["cost"]
            self.at.pop()
            self._add([cost.get("tokensIn", 0), cost.get("tokensOut", 0)])

    def _run_finished(self, e: Event, p: dict) -> None:
        text = p.get("answer") or ""
        step = {"kind": "answer", "to": self.asker, "brain": self.lead(text or "(no answer)"),
                "answer": {"headline": _headline(text), "text": text},
                "cost": self._cost()}  # (a reply whose calls never ran: the wrap-up's, say)
        self.reply_used = True
        if p.get("error") or p.get("outcome") in ("error", "denied"):
            step["error"] = p.get("error") or f"outcome {p.get('outcome')}"
        if self.tools_seen:
            step["toolsSeen"] = self.tools_seen
        self.push(e, step)


def _usage(reply: Mapping) -> list[int]:
    """A reply's `[input, output]` tokens; [0, 0] when it has none (or a foreign shape)."""
    usage = list(reply.get("usage") or []) + [0, 0]
    return [u if type(u) is int else 0 for u in usage[:2]]


def _headline(text: str) -> str:
    text = text if isinstance(text, str) else ""
    line = next((x for x in text.splitlines() if x.strip()), "") or "Done"  # (as the original)
    return line if len(line) <= 140 else line[:140] + "…"


def thinking_json(events: Iterable[Event], run: Mapping[str, Any] | None = None) -> str:
    return json_text(to_thinking(events, run), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


# ---------------------------------------------------------------- OTLP JSON
_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def otlp_json(spans: Iterable[Any]) -> str:
    """OTLP/JSON (`ExportTraceServiceRequest`) of SDK `ReadableSpan`s: hex ids, nanosecond
    times as strings, typed attribute values, one resource and scope per span group."""
    groups: dict[tuple, list] = {}
    for s in spans:
        res = tuple(sorted(s.resource.attributes.items())) if s.resource else ()
        scope = s.instrumentation_scope
        key = (res, scope.name if scope else "", scope.version if scope else "")
        groups.setdefault(key, []).append(_span_json(s))
    out = [{"resource": {"attributes": _attrs(dict(res))},
            "scopeSpans": [{"scope": {"name": name, "version": version or ""}, "spans": body}]}
           for (res, name, version), body in groups.items()]
    return json_text({"resourceSpans": out}, ensure_ascii=False, sort_keys=True, indent=1) + "\n"


def _span_json(s: Any) -> dict:
    ctx, parent = s.context, s.parent
    out = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}",
           "parentSpanId": f"{parent.span_id:016x}" if parent is not None else "",
           "name": s.name, "kind": _KINDS.get(s.kind.name, 0),
           "startTimeUnixNano": str(s.start_time or 0), "endTimeUnixNano": str(s.end_time or 0),
           "attributes": _attrs(s.attributes or {}),
           "events": [{"timeUnixNano": str(ev.timestamp or 0), "name": ev.name,
                       "attributes": _attrs(ev.attributes or {})} for ev in s.events],
           "status": {"code": _STATUS.get(s.status.status_code.name, 0)}}
    if s.status.description:
        out["status"]["message"] = s.status.description
    return out


def _attrs(attrs: Mapping[str, Any]) -> list[dict]:
    return [{"key": k, "value": _any(v)} for k, v in sorted(attrs.items())]


def _any(v: Any) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    return {"stringValue": str(v)}


__all__ = ["SCHEMA_VERSION", "schema", "to_jsonl", "to_thinking", "thinking_json", "dumps",
           "otlp_json"]
