"""What every recorded trace must satisfy (semantics §9, §12; docs/trace.md), checked by the run
property tests: `assert_trace_shape` (seq, ids, causes, the run's first and last events, the
totals of `run.finished`, the event schema, the JSON round trip), `assert_explainable` (`why`
from every event, as text and JSON), `assert_exports_clean` and `learned`/`assert_no_secret`
(no secret in any event from the moment the run knows it, nor in any export)."""
from __future__ import annotations

import functools
import json
import re
from collections import Counter

import jsonschema

from afp_dsl import export, report_html
from afp_dsl.trace import KINDS, Trace
from afp_dsl.why import explain

MALFORMED = "is malformed and cannot be explained"


@functools.cache
def _validator():
    return jsonschema.Draft202012Validator(export.schema())


def inner_traces(result) -> list[Trace]:
    """The kept traces of the run's agent-backed tool calls (one level: this spec nests one)."""
    return [t for tool in (result.inner or {}).values() for t in tool.runs.values()]


# ---------------------------------------------------------------- shape
def assert_trace_shape(trace: Trace, outcome: str | None = None) -> None:
    events = list(trace)
    assert events, "an empty trace"
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), [e.seq for e in events]
    seen: set[str] = set()
    for e in events:
        assert e.id == f"{trace.run_id}:{e.seq}", (e.id, trace.run_id)
        assert e.kind in KINDS, e.kind
        for c in e.caused_by:
            assert c in seen, f"{e.id} ({e.kind}) is caused by {c!r}, not an earlier event of the run"
        seen.add(e.id)
        errors = [x.message for x in _validator().iter_errors(json.loads(e.to_json()))]
        assert not errors, (e.id, e.kind, errors)
    times = [e.time for e in events]
    assert times == sorted(times), times
    kinds = [e.kind for e in events]
    assert kinds[0] == "run.started" and kinds.count("run.started") == 1, kinds
    for a, b in zip(kinds, kinds[1:]):  # a run ends only to be resumed
        assert a not in ("run.finished", "run.paused") or b == "run.resumed", kinds
    if outcome is not None:
        assert kinds[-1] == ("run.paused" if outcome == "paused" else "run.finished"), kinds
    if kinds[-1] == "run.finished":
        assert_totals(events)
    text = trace.to_json()
    assert Trace.from_json(text).to_json() == text  # round trip
    assert export.to_jsonl(trace) == "".join(e.to_json() + "\n" for e in events)


def assert_totals(events: list) -> None:
    """`run.finished`'s totals agree with the events before it."""
    fin = events[-1].payload
    usage = [e.payload.get("usage") or [0, 0] for e in events if e.kind == "llm.replied"]
    executed = Counter(e.payload["tool"] for e in events
                       if e.kind == "tool.returned" and e.payload.get("executed") is True)
    got = {k: fin[k] for k in ("iterations", "llm_calls", "tool_calls", "tokens", "executions")}
    want = {"iterations": max(e.iteration for e in events),
            "llm_calls": sum(e.kind == "llm.called" for e in events),
            "tool_calls": sum(e.kind == "tool.called" for e in events),
            "tokens": [sum(u[0] for u in usage), sum(u[1] for u in usage)],
            "executions": dict(executed)}
    assert got == want, (got, want)


# ---------------------------------------------------------------- why
def assert_explainable(result) -> None:
    """`why` from every event of the run (and of its inner runs), as text and as JSON."""
    for trace in [result.trace] + inner_traces(result):
        for e in trace:
            for fmt in ("text", "json"):
                out = explain(trace, e.id, inner=result.inner, program=result.program, format=fmt)
                assert out.strip() and MALFORMED not in out, (e.id, e.kind, out[:500])
                if fmt == "json":
                    assert json.loads(out)["query"]["event"] == e.id


def explanations(result) -> list[str]:
    return [explain(result.trace, e.id, inner=result.inner, program=result.program, format=f)
            for e in result.trace for f in ("text", "json")]


def exports(result, otel: bool = True) -> list[str]:
    out = [export.to_jsonl(result.trace), export.thinking_json(result.trace),
           report_html.report(result.trace, inner=result.inner, program=result.program)]
    if otel:
        from afp_dsl import otel as otel_
        out.append(otel_.to_otlp_json(result.trace, inner=result.inner, content=True))
    return out


# ---------------------------------------------------------------- secrets
def learned(events_json: list[str], remembered: dict[str, str], placeholders: tuple[str, ...],
            known: dict[str, int] | None = None) -> dict[str, int]:
    """key → the position of the first event that records a value under that redacted key (as
    structured data or inside JSON text): from there on the run knows the key's secret."""
    out = dict(known or {})
    ph = "|".join(re.escape(p) for p in placeholders)
    for key in remembered:
        pattern = re.compile(rf'\\*"{key}\\*":\s*\\*"(?:{ph})', re.IGNORECASE)
        at = next((i for i, text in enumerate(events_json) if pattern.search(text)), None)
        if at is not None:
            out[key] = min(out.get(key, at), at)
    return out


def assert_no_secret(events_json: list[str], absolute: tuple[str, ...], remembered: dict[str, str],
                     known: dict[str, int]) -> None:
    for i, text in enumerate(events_json):
        for s in absolute:
            assert s not in text, (i, s, text[:1500])
        for key, at in known.items():
            assert i < at or remembered[key] not in text, (i, key, at, text[:1500])


def assert_clean_texts(texts: list[str], events_json: list[str], absolute: tuple[str, ...],
                       remembered: dict[str, str], known: dict[str, int]) -> None:
    """Texts made from the trace (exports, `why`, errors) hold no secret the trace does not
    hold legitimately (a copy recorded before the run knew it was one)."""
    everything = "".join(events_json)
    check = list(absolute) + [remembered[k] for k in known if remembered[k] not in everything]
    for text in texts:
        for s in check:
            assert s not in text, (s, text[:1500])
