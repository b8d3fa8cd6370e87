"""`why` never raises: arbitrary (even nonsensical) traces get an explanation, not a traceback."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl.export import thinking_json
from afp_dsl.report_html import report
from afp_dsl.source import Span
from afp_dsl.trace import KINDS, Event, Trace
from afp_dsl.why import explain

values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
KEYS = ["from", "to", "cause", "edge", "pieces", "skipped", "tools", "tool", "call_id", "args",
        "result", "status", "conditions", "witness", "outcome", "answer", "tool_calls", "usage",
        "call", "winner", "losers", "detail", "reason", "fired", "checkin", "requested"]
payloads = st.one_of(values, st.dictionaries(st.sampled_from(KEYS), values, max_size=6))


@st.composite
def traces(draw):
    n = draw(st.integers(0, 12))
    events = []
    for seq in range(1, n + 1):
        causes = draw(st.lists(st.integers(1, n + 2), max_size=3))  # forward and dangling too
        span = draw(st.none() | st.just(Span("nowhere.afp", 0, 1)))
        events.append(Event(seq, f"r:{seq}", draw(st.sampled_from(KINDS)), draw(st.integers(0, 3)),
                            seq, tuple(f"r:{c}" for c in causes), span, draw(payloads)))
    return Trace("r", events)


@settings(max_examples=80, deadline=None)
@given(traces(), st.sampled_from([None, "1", "r:2", "r:99"]), st.text(max_size=5))
def test_explain_never_raises(trace, event, name):
    for kw in ({}, {"skill": name or "s"}, {"skill": "s", "iteration": 2},
               {"edge": f"{name or 'a'}->b"}, {"edge": "not an edge"}):
        text = explain(trace, None if kw else event, **kw)
        assert isinstance(text, str)
        doc = json.loads(explain(trace, None if kw else event, format="json", **kw))
        assert doc["run"] == "r" and "tree" in doc
    thinking_json(trace)
    report(trace)
    try:
        from afp_dsl import otel
    except ImportError:  # pragma: no cover - the SDK is an optional extra
        return
    if otel_available():
        json.loads(otel.to_otlp_json(trace))


def otel_available() -> bool:
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        return False
    return True
