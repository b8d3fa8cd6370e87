"""OpenTelemetry export: GenAI semantic-convention spans, checked with the SDK's in-memory exporter
on a private (non-global) TracerProvider; OTLP JSON of the same spans."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace as otel_api  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from test_trace_canary import canary_run  # noqa: E402
from test_why_golden import example_runs  # noqa: E402

from afp_dsl import otel  # noqa: E402


def _export(trace, **kw):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    before = otel_api.get_tracer_provider()
    otel.export_run(trace, provider, **kw)
    assert otel_api.get_tracer_provider() is before  # the global provider is never touched
    return exporter.get_finished_spans()


def test_invoke_agent_chat_and_execute_tool_spans():
    _, r = canary_run()
    spans = _export(r.trace)
    by_op = {}
    for s in spans:
        by_op.setdefault(s.attributes["gen_ai.operation.name"], []).append(s)
    (root,) = by_op["invoke_agent"]
    assert root.name == "invoke_agent g" and root.parent is None
    assert root.kind == otel_api.SpanKind.INTERNAL
    assert root.attributes["gen_ai.agent.name"] == "g"
    assert root.attributes["afp.outcome"] == "answered"
    chats, tools = by_op["chat"], by_op["execute_tool"]
    assert len(chats) == 3 and len(tools) == 2
    assert all(c.kind == otel_api.SpanKind.CLIENT and c.parent.span_id == root.context.span_id
               for c in chats)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == \
        root.attributes["gen_ai.usage.input_tokens"]
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[-1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == ["login", "fetch"]
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == ["call-1-1", "call-2-1"]
    assert tools[0].name == "execute_tool login"
    assert all(t.start_time <= t.end_time for t in spans)
    assert not any(k.startswith("gen_ai.tool.call.arguments") for t in tools for k in t.attributes)
    moves = [e for e in root.events if e.name == "afp.cursor.moved"]
    assert moves and moves[0].attributes["afp.to"] == "start"


def test_content_capture_is_opt_in():
    _, r = canary_run()
    tools = [s for s in _export(r.trace, content=True)
             if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert json.loads(tools[0].attributes["gen_ai.tool.call.arguments"])["password"] == "[REDACTED]"


def test_inner_runs_nest_under_their_tool_span():
    _, r = example_runs("due_diligence", "revenue_through_the_inner_agent")[-1]
    spans = _export(r.trace, inner=r.inner)
    tool = next(s for s in spans if s.name == "execute_tool ask_filings")
    inner = next(s for s in spans if s.name == "invoke_agent filings_reader")
    assert inner.parent.span_id == tool.context.span_id
    assert inner.context.trace_id == tool.context.trace_id
    assert any(s.parent and s.parent.span_id == inner.context.span_id and
               s.attributes["gen_ai.operation.name"] == "chat" for s in spans)


def test_policy_and_checkin_decisions_are_tool_span_events():
    _, r = example_runs("support", "larger_refund_needs_approval")[-1]
    spans = _export(r.trace)
    refund = next(s for s in spans if s.name == "execute_tool issue_refund")
    names = [e.name for e in refund.events]
    assert "afp.policy.decided" in names and "afp.checkin.decided" in names


def test_otlp_json_is_deterministic_and_well_formed():
    _, r = canary_run()
    a, b = otel.to_otlp_json(r.trace), otel.to_otlp_json(r.trace)
    assert a == b
    doc = json.loads(a)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(spans) == 6
    root = next(s for s in spans if s["parentSpanId"] == "")
    assert root["name"] == "invoke_agent g" and len(root["traceId"]) == 32
    assert all(len(s["spanId"]) == 16 and s["traceId"] == root["traceId"] for s in spans)
    attrs = {a["key"]: a["value"] for a in root["attributes"]}
    assert attrs["gen_ai.operation.name"] == {"stringValue": "invoke_agent"}
    assert "intValue" in attrs["gen_ai.usage.input_tokens"]
    chat = next(s for s in spans if s["name"].startswith("chat"))
    assert chat["kind"] == 3 and int(chat["endTimeUnixNano"]) >= int(chat["startTimeUnixNano"])
