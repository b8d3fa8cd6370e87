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

import afp_dsl as afp  # noqa: E402
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


@pytest.mark.parametrize("test,moment", [("drop_table_is_refused_at_the_door", "input"),
                                         ("leaking_answer_is_stopped", "output")])
def test_input_and_output_decisions_are_run_span_events(test, moment):
    _, r = example_runs("db_ops", test)[-1]
    (root,) = [s for s in _export(r.trace) if s.parent is None]
    (denied,) = [e for e in root.events if e.name == "afp.policy.decided"
                 and e.attributes["afp.moment"] == moment and e.attributes["afp.outcome"] == "deny"]
    assert denied.attributes["afp.reason"]  # the reason a denied run ended, kept


def test_an_inner_run_lies_inside_its_tool_span_in_order():
    _, r = example_runs("due_diligence", "revenue_through_the_inner_agent")[-1]
    spans = _export(r.trace, inner=r.inner)
    tool = next(s for s in spans if s.name == "execute_tool ask_filings")
    inner = [s for s in spans if s.context.trace_id == tool.context.trace_id and
             _under(s, tool, spans)]
    assert len(inner) > 2
    for s in inner:
        assert tool.start_time <= s.start_time <= s.end_time <= tool.end_time, s.name
        assert all(tool.start_time <= e.timestamp <= tool.end_time for e in s.events)
    run = next(s for s in inner if s.name == "invoke_agent filings_reader")
    chats = sorted((s for s in inner if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert run.start_time < chats[0].start_time and chats[-1].end_time <= run.end_time
    assert otel.to_otlp_json(r.trace, inner=r.inner) == otel.to_otlp_json(r.trace, inner=r.inner)


def _under(span, ancestor, spans) -> bool:
    by_id = {s.context.span_id: s for s in spans}
    while span.parent is not None:
        span = by_id.get(span.parent.span_id)
        if span is None:
            return False
        if span is ancestor:
            return True
    return False


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


# ---------------------------------------------------------------- GenAI conventions, audited
from afp_dsl.providers.base import ProviderError  # noqa: E402
from afp_dsl.providers.mock import MockProvider  # noqa: E402
from afp_dsl.providers.resilience import with_fallback  # noqa: E402

DESK = '''
agent desk { model = "spec-model" tools = [lookup] }
tool lookup { description = "Look up." input { id: string } impl = returns("found") }
'''


class _Chosen(MockProvider):
    """A scripted provider that, like the adapters, asks for its own model over the spec's."""

    def __init__(self, script, model, name="chosen"):
        super().__init__(script)
        self.model, self.name = model, name

    def model_for(self, request):
        return self.model or request.model


class _Down(_Chosen):
    def complete(self, request):
        raise ProviderError("503 from the primary")


def _chats(r):
    return [s for s in _export(r.trace) if s.name.startswith("chat")]


def test_the_chat_span_names_the_model_the_provider_asked_for_not_the_spec_s():
    r = afp.load(DESK).agent(provider=_Chosen(["hi"], "gpt-4o-mini")).run("x")
    assert [e.payload["model"] for e in r.trace if e.kind in ("run.started", "llm.called")] == \
        ["gpt-4o-mini", "gpt-4o-mini"]
    (chat,) = _chats(r)
    assert chat.name == "chat gpt-4o-mini" and chat.attributes[otel.MODEL] == "gpt-4o-mini"


def test_after_a_fallback_the_chat_span_names_the_provider_and_model_that_answered():
    p = with_fallback(_Down([], "gpt-x", "openai"), _Chosen(["hi"], "claude-y", "anthropic"))
    r = afp.load(DESK).agent(provider=p).run("x")
    (chat,) = _chats(r)
    assert chat.attributes[otel.PROVIDER] == "anthropic" and chat.attributes[otel.MODEL] == "claude-y"


def test_output_messages_carry_tool_calls_and_the_finish_reason():
    script = [{"text": "Let me check.", "calls": [{"id": "c1", "name": "lookup",
                                                   "arguments": {"id": "A"}}]}, "done"]
    r = afp.load(DESK).agent(provider=MockProvider(script)).run("x")
    spans = [s for s in _export(r.trace, content=True) if s.name.startswith("chat")]
    first = json.loads(spans[0].attributes["gen_ai.output.messages"])[0]
    assert first["finish_reason"] == "tool_calls"
    assert first["parts"] == [{"type": "text", "content": "Let me check."},
                              {"type": "tool_call", "id": "c1", "name": "lookup",
                               "arguments": {"id": "A"}}]
    last = json.loads(spans[1].attributes["gen_ai.output.messages"])[0]
    assert last == {"role": "assistant", "parts": [{"type": "text", "content": "done"}],
                    "finish_reason": "stop"}


def test_a_call_id_used_again_by_a_later_reply_ends_each_tool_span_at_its_own_return():
    call = {"id": "call_0", "name": "lookup", "arguments": {"id": "A"}}
    r = afp.load(DESK).agent(provider=MockProvider([{"calls": [call]}, {"calls": [call]},
                                                    "done"])).run("x")
    tools = sorted((s for s in _export(r.trace) if s.name.startswith("execute_tool")),
                   key=lambda s: s.start_time)
    returned = [e.time for e in r.trace if e.kind == "tool.returned"]
    assert len(tools) == 2 and tools[0].end_time < tools[1].start_time
    assert [s.end_time - s.start_time for s in tools] == [tools[1].end_time - tools[1].start_time] * 2
    assert len(returned) == 2


# ---------------------------------------------------------------- error.type and response ids
from afp_dsl.providers._errors import ProviderTimeoutError, RateLimitedError  # noqa: E402
from afp_dsl.providers.base import Reply  # noqa: E402


class _Fails(MockProvider):
    """Scripted replies, then the error `exc` on the call after the script."""

    def __init__(self, script, exc):
        super().__init__(script)
        self.exc = exc

    def complete(self, request):
        if self.calls >= len(self.script):
            self.calls += 1
            raise self.exc
        return super().complete(request)


def _failed_run(exc, script=()):
    r = afp.load(DESK).agent(provider=_Fails(list(script), exc)).run("x")
    assert r.outcome == "error"
    spans = _export(r.trace)
    return r, next(s for s in spans if s.name.startswith("invoke_agent")), \
        [s for s in spans if s.name.startswith("chat")]


@pytest.mark.parametrize("exc, kind", [
    (RateLimitedError("429 slow down", provider="openai", status=429), "rate_limited"),
    (ProviderTimeoutError("no reply within 5s", provider="openai"), "timeout"),
    (ProviderError("the mock script ran out"), "ProviderError"),
])
def test_a_failed_call_and_its_run_carry_the_provider_error_s_kind_as_error_type(exc, kind):
    r, root, chats = _failed_run(exc)
    assert [e.payload.get("error_type") for e in r.trace if e.kind == "run.finished"] == [kind]
    (chat,) = chats
    assert chat.attributes["error.type"] == kind and root.attributes["error.type"] == kind
    assert chat.status.status_code == root.status.status_code == otel_api.StatusCode.ERROR
    assert chat.status.description == root.status.description == r.error
    assert str(exc) in chat.status.description


def test_after_a_resumed_retry_the_failed_call_keeps_its_own_error_type():
    script = [{"calls": [{"id": "c1", "name": "lookup", "arguments": {"id": "A"}}]}]
    spec = afp.load(DESK)
    agent = spec.agent(provider=_Fails(script, ProviderTimeoutError("slow")))
    r = agent.run("x")
    assert r.outcome == "error" and r.checkpoint is not None
    r2 = spec.agent(provider=MockProvider(["done"]), store=agent.store).resume(r.checkpoint)
    assert r2.outcome == "answered"
    assert [e.payload.get("error_type") for e in r2.trace if e.kind == "run.finished"] == \
        ["timeout", None]
    spans = _export(r2.trace)
    root = next(s for s in spans if s.name.startswith("invoke_agent"))
    failed = [s for s in spans if s.name.startswith("chat") and
              s.status.status_code == otel_api.StatusCode.ERROR]
    assert len(failed) == 1 and failed[0].attributes["error.type"] == "timeout"
    assert "error.type" not in root.attributes  # the run answered in the end


def test_a_host_failure_ends_the_run_span_with_its_code():
    spec = DESK.replace("tools = [lookup]", "tools = [lookup, unbound]") + \
        'tool unbound { description = "No body." }\n'
    r = afp.load(spec).agent(provider=MockProvider([[("unbound", {})]])).run("x")
    assert r.outcome == "error" and r.error.startswith("AFP501")
    root = next(s for s in _export(r.trace) if s.name.startswith("invoke_agent"))
    assert root.attributes["error.type"] == "AFP501"


def test_a_trace_that_records_no_error_type_exports_other():
    r, _, _ = _failed_run(ProviderError("down"))
    old = [e._replace(payload={k: v for k, v in e.payload.items() if k != "error_type"})
           if e.kind == "run.finished" else e for e in r.trace]
    spans = _export(old)
    assert {s.attributes["error.type"] for s in spans if "error.type" in s.attributes} == {"_OTHER"}


def test_chat_spans_carry_the_response_id_and_model_the_provider_gave():
    script = [Reply(text="hi", response_id="chatcmpl-9", response_model="gpt-4o-2024-08-06")]
    r = afp.load(DESK).agent(provider=_Chosen(script, "gpt-4o")).run("x")
    (replied,) = [e.payload for e in r.trace if e.kind == "llm.replied"]
    assert (replied["response_id"], replied["response_model"]) == ("chatcmpl-9",
                                                                   "gpt-4o-2024-08-06")
    (chat,) = _chats(r)
    assert chat.attributes["gen_ai.response.id"] == "chatcmpl-9"
    assert chat.attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert chat.attributes[otel.MODEL] == "gpt-4o"  # (the request's model stays the asked one)
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)


def test_a_reply_that_names_nothing_records_and_exports_no_response_id_or_model():
    r = afp.load(DESK).agent(provider=MockProvider(["hi"])).run("x")
    (replied,) = [e.payload for e in r.trace if e.kind == "llm.replied"]
    assert "response_id" not in replied and "response_model" not in replied
    (chat,) = _chats(r)
    assert not {"gen_ai.response.id", "gen_ai.response.model"} & set(chat.attributes)


def test_a_paused_run_s_span_says_paused_and_counts_its_tokens_so_far():
    """A run waiting on a check-in has no `run.finished`: its span said no outcome and no usage;
    it says `afp.outcome=paused` and the tokens of its calls so far."""
    _, first = example_runs("support", "larger_refund_needs_approval")[0]
    assert first.outcome == "paused"
    (root,) = [s for s in _export(first) if s.parent is None]
    assert root.attributes["afp.outcome"] == "paused"
    chats = [s for s in _export(first.trace) if s.attributes["gen_ai.operation.name"] == "chat"]
    assert root.attributes["gen_ai.usage.input_tokens"] == \
        sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) > 0
