"""`why`: explain an answer (or any event) by walking the trace backwards (semantics §12).

Role:       renders the backward walk as indented text for `RunResult.why()` and `afpc why`.
Invariants: reads only the (redacted) trace; never fails on a partial trace.
"""
from __future__ import annotations

from typing import Any, Mapping

from .source import SourceFile
from .trace import Event, Trace


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _span(span: Any, loc: Locator) -> str:
    return f" ({loc(span[0], span[1])})" if span else ""


class Locator:
    """Turns spans into `file:line:col` using the program's module sources."""

    def __init__(self, program: Any = None):
        self.sources = {}
        for m in getattr(program, "modules", ()):
            self.sources[m.key] = m.source

    def __call__(self, file: str, start: int) -> str:
        text = self.sources.get(file)
        if text is None:
            return f"{file}@{start}"
        if not isinstance(text, SourceFile):
            text = self.sources[file] = SourceFile.of(file, text)
        line, col = text.line_col(start)
        return f"{file}:{line}:{col}"


def explain(trace: Trace, event_id: str | None = None, *, inner: Mapping[str, Any] | None = None,
            program: Any = None) -> str:
    """Text explanation of `event_id` (default: the run's final answer)."""
    events = list(trace)
    if not events:
        return "the trace is empty"
    by_id = {e.id: e for e in events}
    loc = Locator(program)
    target = by_id.get(event_id) if event_id else _final(events)
    if target is None:
        return f"no event `{event_id}` in run `{trace.run_id}`"
    lines: list[str] = []
    if target.kind != "run.finished":
        _walk([target], by_id, lines, loc, inner or {}, program)
        return "\n".join(lines)
    p = target.payload or {}
    head = f"answer ({p.get('outcome')}): {_short(p.get('answer'))}"
    lines.append(head + (f" — error: {_short(p['error'])}" if p.get("error") else ""))
    starts = [by_id[c] for c in target.caused_by if c in by_id]
    if not starts:
        last = _last(events, "llm.replied", before=target.seq)
        starts = [last] if last is not None else []
    _walk(starts, by_id, lines, loc, inner or {}, program)
    return "\n".join(lines)


def _final(events: list[Event]) -> Event:
    for e in reversed(events):
        if e.kind == "run.finished":
            return e
    return events[-1]


def _last(events: list[Event], kind: str, before: int) -> Event | None:
    for e in reversed(events):
        if e.seq < before and e.kind == kind:
            return e
    return None


def _walk(targets: list[Event], by_id, lines, loc, inner, program) -> None:
    seen: set[str] = set()
    stack = [(t, 0) for t in reversed(targets)]
    while stack:
        e, depth = stack.pop()
        if e.id in seen:
            continue
        seen.add(e.id)
        pad = "  " * depth
        where = f" ({loc(e.source.file, e.source.start)})" if e.source else ""
        lines.append(pad + describe(e) + where)
        if e.kind == "context.composed":
            for p in (e.payload or {}).get("pieces", []):
                lines.append(f"{pad}  - {p['kind']} `{p['name']}` [{p['reason']}]{_span(p.get('source'), loc)}")
        if e.kind == "tool.returned" and inner:
            for runs in inner.values():
                t = runs.get((e.payload or {}).get("call_id", "")) if hasattr(runs, "get") else None
                if t is not None:
                    lines.append(f"{pad}  inner run {t.run_id}:")
                    lines.extend(f"{pad}    {x}" for x in explain(t, program=program).splitlines())
        parents = [by_id[c] for c in e.caused_by if c in by_id]
        for p in reversed(parents):
            stack.append((p, depth + 1))


def describe(e: Event) -> str:
    p = e.payload or {}
    k = e.kind
    if k == "llm.replied":
        calls = ", ".join(c["tool"] for c in p.get("tool_calls", []))
        return f"[{e.id}] model replied" + (f" calling {calls}" if calls else f": {_short(p.get('text'))}")
    if k == "llm.called":
        return f"[{e.id}] LLM call #{p.get('call')} (iteration {e.iteration}) with tools {p.get('tools')}"
    if k == "context.composed":
        return f"[{e.id}] context of iteration {e.iteration}"
    if k == "tool.returned":
        return f"[{e.id}] `{p.get('tool')}` returned {p.get('status')}: {_short(p.get('read', p.get('result')))}"
    if k == "tool.called":
        return f"[{e.id}] model called `{p.get('tool')}` with {_short(p.get('args'))}"
    if k == "cursor.moved":
        edge = f" over `{p['edge']}`" if p.get("edge") else ""
        return f"[{e.id}] cursor {p.get('from')} -> {p.get('to')} ({p.get('cause')}){edge}"
    if k == "route.evaluated":
        conds = "; ".join(f"{c['text']} [actual {c['actual']!r}: {'ok' if c['passed'] else 'no'}]"
                          for c in p.get("conditions", []))
        return f"[{e.id}] edge `{p.get('edge')}` {'fired' if p.get('fired') else 'refused'}" + (f": {conds}" if conds else "")
    if k == "policy.decided":
        return f"[{e.id}] policy `{p.get('policy')}` {p.get('outcome')} at {p.get('moment')}: {p.get('reason')}"
    if k == "run.started":
        return f"[{e.id}] user: {_short(p.get('message'))}"
    return f"[{e.id}] {k} {_short(p)}"
