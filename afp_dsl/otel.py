"""OpenTelemetry export of a run: GenAI semantic-convention spans (ecosystem §A3).

Role:       `export_run` replays a recorded (redacted) run as spans on a caller's
            `TracerProvider`: an `invoke_agent` root, one `chat` span per LLM call, one
            `execute_tool` span per tool call (inner runs of agent-backed tools nest under it);
            decisions become `afp.*` span events (a call's on its tool span, the rest on the run
            span). `to_otlp_json` writes the spans as OTLP JSON (`trace export --format otlp-json`).
Invariants: never touches the global tracer provider; ids derive from the run id; times are the
            logical clock (1 ms per tick from `epoch_ns`; an inner run's ticks spread inside its
            tool span); content attributes (arguments, results) only with `content=True`, and
            even then only the redacted values of the trace. Needs the optional `otel` extra.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping

from .trace import Event, json_text, run_events, tally
from .why import inner_finder, payload

OP, PROVIDER, AGENT, MODEL = ("gen_ai.operation.name", "gen_ai.provider.name",
                              "gen_ai.agent.name", "gen_ai.request.model")
USAGE_IN, USAGE_OUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
TOOL_NAME, TOOL_CALL_ID, TOOL_TYPE = "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.type"
FINISH = {"stop": "stop", "tool_use": "tool_calls", "length": "length"}
# Tool statuses that are answers (semantics §7): an absence and a partial result are not
# failures, so their spans carry no `error.type` and no ERROR status.
ANSWERS = ("success", "absent", "partial")
_DECISIONS = ("cursor.moved", "route.evaluated", "route.conflict", "skill.rejected",
              "budget.exhausted", "steps.unfinished", "redaction.applied", "run.paused",
              "run.resumed")
# Decisions on one tool call: events of its tool span. Without a call id (the `input` and
# `output` moments of a policy) they are decisions about the run: events of the run span.
_CALL_DECISIONS = ("policy.decided", "checkin.requested", "checkin.decided", "tool.args_invalid")


class OtelUnavailable(RuntimeError):
    """The OpenTelemetry SDK is not installed."""


def _sdk():
    try:
        from opentelemetry import trace as api
        from opentelemetry.sdk import trace as sdk
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.id_generator import IdGenerator
    except ImportError:
        raise OtelUnavailable("OpenTelemetry export needs the SDK: pip install 'afp-dsl[otel]' "
                              "(opentelemetry-sdk>=1.30)") from None
    return api, sdk, Resource, SimpleSpanProcessor, InMemorySpanExporter, IdGenerator


def id_generator(seed: str):
    """Span/trace ids from a hash of `seed` and a counter: the same run exports the same ids."""
    IdGenerator = _sdk()[5]

    class _Ids(IdGenerator):
        def __init__(self) -> None:
            self.n = 0

        def _next(self, bits: int) -> int:
            self.n += 1
            digest = hashlib.sha256(f"{seed}#{self.n}".encode()).digest()
            return int.from_bytes(digest[: bits // 8], "big") or 1

        def generate_span_id(self) -> int:
            return self._next(64)

        def generate_trace_id(self) -> int:
            return self._next(128)
    return _Ids()


class _Exporter:
    def __init__(self, tracer, api, inner, content: bool, epoch_ns: int, provider: str):
        self.tracer, self.api, self.find_inner = tracer, api, inner
        self.content, self.epoch_ns, self.provider = content, epoch_ns, provider
        # tick t is at `base + (t - lo) * num // den` ns: 1 ms a tick from `epoch_ns` for the
        # run exported, an inner run's ticks spread inside its tool span (`_inner`)
        self.clock = (epoch_ns, 0, 1_000_000, 1)

    def ns(self, e: Event | None, fallback: int = 0) -> int:
        base, lo, num, den = self.clock
        return base + ((e.time if e is not None else fallback) - lo) * num // den

    def run(self, events: list[Event], parent_ctx=None, depth: int = 0) -> None:
        if not events:
            return
        started = payload(events[0])
        if isinstance(started.get("provider"), str):  # the provider the run used (semantics §12)
            self.provider = started["provider"]
        fin = next((e for e in reversed(events) if e.kind == "run.finished"), None)
        fp = payload(fin) if fin else {}
        agent, model = started.get("agent") or "agent", started.get("model")
        run_id = started.get("run_id") or events[0].id.rsplit(":", 1)[0]
        attrs = {OP: "invoke_agent", PROVIDER: started.get("provider") or self.provider,
                 AGENT: agent, "afp.run.id": run_id}
        if model:
            attrs[MODEL] = model
        if started.get("conversation"):
            attrs["gen_ai.conversation.id"] = started["conversation"]
        tokens = _ints(fp.get("tokens") if fin else tally(events)["tokens"])  # (paused: so far)
        if len(tokens) == 2:
            attrs[USAGE_IN], attrs[USAGE_OUT] = tokens
        if fp.get("outcome"):
            attrs["afp.outcome"] = fp["outcome"]
        elif fin is None and events[-1].kind == "run.paused":  # (waiting on a check-in)
            attrs["afp.outcome"] = "paused"
        kind = self.api.SpanKind.INTERNAL
        root = self.tracer.start_span(f"invoke_agent {agent}", context=parent_ctx, kind=kind,
                                      attributes=attrs, start_time=self.ns(events[0]))
        if fp.get("outcome") == "error":
            root.set_attribute("error.type", _error_type(fp))
            root.set_status(self.api.Status(self.api.StatusCode.ERROR, fp.get("error") or "error"))
        ctx = self.api.set_span_in_context(root)
        self._children(events, ctx, root, model, depth)
        root.end(end_time=self.ns(events[-1]))

    def _children(self, events: list[Event], ctx, root, model, depth: int) -> None:
        answered = {e.caused_by[0]: payload(e) for e in events  # (by the backup: a fallback)
                    if e.kind == "llm.fallback" and e.caused_by}
        ended = {c: payload(e) for e in events  # (a provider failure ends the run: the call)
                 if e.kind == "run.finished" for c in e.caused_by}
        called = None
        for e in events:
            p = payload(e)
            if e.kind == "llm.called":
                if called is not None:  # the one before never replied (failed, then retried)
                    self._failed_chat(called, ctx, model, answered, ended)
                called = e
            elif e.kind == "llm.replied" and called is not None:
                self._chat(called, e, ctx, model, answered)
                called = None
            elif e.kind == "tool.called":
                self._tool(e, _returned(events, e), events, ctx, depth)
            elif e.kind in _DECISIONS or (e.kind in _CALL_DECISIONS and not p.get("call_id")):
                root.add_event(f"afp.{e.kind}", _flat(p), timestamp=self.ns(e))
        if called is not None:  # a provider failure: the call never replied
            self._failed_chat(called, ctx, model, answered, ended)

    def _failed_chat(self, called: Event, ctx, model, answered: Mapping, ended: Mapping) -> None:
        """The span of a model call that never replied (a provider failure), as an error: its
        `error.type` is the one of the `run.finished` the failure caused, when it has one."""
        span = self._chat_span(called, ctx, model, answered)
        end = ended.get(called.id) or {}
        span.set_attribute("error.type", _error_type(end))
        text = end.get("error")  # (the recorded, redacted message of the failure)
        span.set_status(self.api.Status(self.api.StatusCode.ERROR,
                                        text if isinstance(text, str) and text else None))
        span.end(end_time=self.ns(called) + 1)

    def _chat_span(self, called: Event, ctx, model, answered: Mapping):
        p = payload(called)
        m = p.get("model") or model
        provider = self.provider
        fallback = answered.get(called.id)
        if fallback is not None:  # the backup answered: its name and the model it asked for
            provider = fallback.get("to") if isinstance(fallback.get("to"), str) else provider
            m = fallback.get("model") if isinstance(fallback.get("model"), str) else m
        attrs = {OP: "chat", PROVIDER: provider, "afp.iteration": called.iteration,
                 "afp.llm.call": (_ints([p.get("call")]) + [0])[0]}
        if m:
            attrs[MODEL] = m
        return self.tracer.start_span(f"chat {m}" if m else "chat", context=ctx,
                                      kind=self.api.SpanKind.CLIENT, attributes=attrs,
                                      start_time=self.ns(called))

    def _chat(self, called: Event, replied: Event, ctx, model, answered: Mapping) -> None:
        span = self._chat_span(called, ctx, model, answered)
        p = payload(replied)
        usage = _ints(p.get("usage")) + [0, 0]
        span.set_attribute(USAGE_IN, usage[0])
        span.set_attribute(USAGE_OUT, usage[1])
        stop = p.get("stop")
        if isinstance(stop, str) and stop:
            span.set_attribute("gen_ai.response.finish_reasons", [FINISH.get(stop, stop)])
        for key, attr in (("response_id", "gen_ai.response.id"),
                          ("response_model", "gen_ai.response.model")):
            if isinstance(p.get(key), str) and p[key]:  # (only when the provider said so)
                span.set_attribute(attr, p[key])
        if self.content:
            span.set_attribute("gen_ai.output.messages",
                               json_text([_output_message(p)], ensure_ascii=False))
        span.end(end_time=self.ns(replied))

    def _tool(self, called: Event, returned: Event | None, events, ctx, depth: int) -> None:
        p = payload(called)
        name = p.get("tool") or "tool"
        attrs = {OP: "execute_tool", TOOL_NAME: name, TOOL_CALL_ID: p.get("call_id") or "",
                 TOOL_TYPE: "extension" if name in ("read_skill", "skip_step") else "function"}
        if self.content:
            attrs["gen_ai.tool.call.arguments"] = json_text(p.get("args"), ensure_ascii=False,
                                                             sort_keys=True)
        span = self.tracer.start_span(f"execute_tool {name}", context=ctx, attributes=attrs,
                                      kind=self.api.SpanKind.INTERNAL, start_time=self.ns(called))
        rp = payload(returned) if returned is not None else {}
        if rp.get("status"):
            span.set_attribute("afp.tool.status", rp["status"])
        if rp.get("status") not in (None, *ANSWERS):  # an absence is an answer, not an error
            span.set_attribute("error.type", str(rp["status"]))
            span.set_status(self.api.Status(self.api.StatusCode.ERROR))
        if self.content and returned is not None:
            span.set_attribute("gen_ai.tool.call.result", json_text(
                rp.get("result"), ensure_ascii=False, sort_keys=True, default=str))
        last = returned.seq if returned is not None else None
        for e in events:  # (the decisions on this call: between it and its return)
            if e.kind in _CALL_DECISIONS and payload(e).get("call_id") == p.get("call_id") \
                    and e.seq > called.seq and (last is None or e.seq <= last):
                span.add_event(f"afp.{e.kind}", _flat(payload(e)), timestamp=self.ns(e))
        end = self.ns(returned) if returned is not None else self.ns(called) + 1
        inner = self._inner_run(called, p.get("call_id"), depth)
        if inner:
            self._inner(inner, span, self.ns(called), end, depth)
        span.end(end_time=end)

    def _inner(self, events: list[Event], span, start: int, end: int, depth: int) -> None:
        """An inner run's clock restarts at 1: its ticks `lo..hi` are spread evenly strictly
        inside its tool span (`start`, `end`), in order, so its spans nest in time too."""
        ticks = [e.time for e in events]
        lo, hi = min(ticks), max(ticks)
        outer, self.clock = self.clock, (start, lo - 1, end - start, hi - lo + 2)
        try:
            self.run(events, self.api.set_span_in_context(span), depth + 1)
        finally:
            self.clock = outer

    def _inner_run(self, called: Event, call_id: Any, depth: int) -> list[Event]:
        if not isinstance(call_id, str) or not call_id or depth >= 3:
            return []
        run_id = called.id.rsplit(":", 1)[0] + "/" + str(call_id)
        t = self.find_inner(run_id)
        return list(t) if t is not None else []


def _returned(events: list[Event], called: Event) -> Event | None:
    """The `tool.returned` of a call: the one that cites it, else (a foreign trace) the first
    later one with its call id (a server may number each reply's calls from 0 again)."""
    later = [e for e in events if e.kind == "tool.returned" and e.seq > called.seq]
    cites = next((e for e in later if called.id in e.caused_by), None)
    if cites is not None:
        return cites
    key = _key(payload(called).get("call_id"))
    return next((e for e in later if _key(payload(e).get("call_id")) == key), None)


def _output_message(p: Mapping) -> dict:
    """A reply as the GenAI conventions' output message: its text and its tool calls as parts,
    and the finish reason (required)."""
    parts: list[dict] = []
    if p.get("text"):
        parts.append({"type": "text", "content": p["text"]})
    for c in p.get("tool_calls") or []:
        if isinstance(c, Mapping):
            parts.append({"type": "tool_call", "id": c.get("id"), "name": c.get("tool"),
                          "arguments": c.get("args")})
    stop = p.get("stop")
    reason = FINISH.get(stop, stop) if isinstance(stop, str) and stop else "stop"
    return {"role": "assistant", "parts": parts, "finish_reason": reason}


def _error_type(finished: Mapping) -> str:
    """`error.type` of a failure: the class `run.finished` records (a provider error's kind such
    as `timeout` or `rate_limited`, an exception's class name, `AFP501`), else `_OTHER`."""
    kind = finished.get("error_type")
    return kind if isinstance(kind, str) and kind else "_OTHER"


def _key(v: Any) -> str | None:
    """A call id as a dict key (a foreign trace may hold anything there)."""
    return v if isinstance(v, str) else None


def _ints(v: Any) -> list[int]:
    """The integers of a recorded list (token counts), skipping anything else."""
    if not isinstance(v, (list, tuple)):
        return []
    return [x for x in v if isinstance(x, int) and not isinstance(x, bool)]


def _flat(p: Mapping) -> dict:
    """Span-event attributes: scalars kept, anything else as compact JSON, under `afp.`."""
    out = {}
    for k, v in sorted(p.items()):
        if v is None:
            continue
        out[f"afp.{k}"] = v if isinstance(v, (str, bool, int, float)) else json_text(
            v, ensure_ascii=False, sort_keys=True, default=str)
    return out


def export_run(events: Iterable[Event], tracer_provider: Any, *, inner: Any = None,
               content: bool = False, epoch_ns: int = 0, provider: str = "afp") -> None:
    """Emit the spans of one recorded run on `tracer_provider` (never the global one).
    `events`: the run's trace (`result.trace`), or a `RunResult` itself (whose `inner` runs
    are then descended into unless `inner` is given)."""
    inner = getattr(events, "inner", None) if inner is None else inner
    events = run_events(events)
    if not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(f"export_run() needs an OpenTelemetry `TracerProvider` (e.g. "
                        f"`opentelemetry.sdk.trace.TracerProvider()`), not a value of type "
                        f"`{type(tracer_provider).__name__}`")
    api = _sdk()[0]
    from . import __version__
    tracer = tracer_provider.get_tracer("afp_dsl", __version__)
    _Exporter(tracer, api, inner_finder(inner), content, epoch_ns, provider).run(events)


def spans(events: Iterable[Event], *, inner: Any = None, content: bool = False,
          epoch_ns: int = 0, provider: str = "afp") -> list:
    """The finished SDK spans of a run, from a private provider with deterministic ids."""
    inner = getattr(events, "inner", None) if inner is None else inner
    evs = run_events(events)
    api, sdk, Resource, Simple, InMemory, _ = _sdk()
    seed = evs[0].id.rsplit(":", 1)[0] if evs else "empty"
    exporter = InMemory()
    resource = Resource({"service.name": "afp", "telemetry.sdk.name": "opentelemetry",
                         "telemetry.sdk.language": "python"})  # no random instance id
    tp = sdk.TracerProvider(resource=resource, id_generator=id_generator(seed))
    tp.add_span_processor(Simple(exporter))
    export_run(evs, tp, inner=inner, content=content, epoch_ns=epoch_ns, provider=provider)
    tp.shutdown()
    return sorted(exporter.get_finished_spans(),
                  key=lambda sp: (sp.start_time or 0, -(sp.end_time or 0), sp.context.span_id))


def to_otlp_json(events: Iterable[Event], **kw: Any) -> str:
    """The spans of a run as an OTLP/JSON `ExportTraceServiceRequest` document."""
    from .export import otlp_json
    return otlp_json(spans(events, **kw))


__all__ = ["OtelUnavailable", "export_run", "spans", "to_otlp_json", "id_generator"]
