"""`why` never raises on a trace: arbitrary (even nonsensical) traces get an explanation, not a
traceback. A wrong argument, though, is a `TypeError`/`ValueError` naming what it takes (before,
it was blamed on a "malformed trace", or silently ignored)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import afp_dsl as afp
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
    edge = f"{name}->b" if re.fullmatch(r"[\w.]+", name) else "a->b"
    for kw in ({}, {"skill": name if name.strip() else "s"}, {"skill": "s", "iteration": 2},
               {"edge": edge}):
        text = explain(trace, None if kw else event, **kw)
        assert isinstance(text, str)
        doc = json.loads(explain(trace, None if kw else event, format="json", **kw))
        assert doc["run"] == "r" and "tree" in doc
    with pytest.raises(ValueError, match="not an edge: write it as `FROM->TO`"):
        explain(trace, None, edge="not an edge")  # (a wrong argument, not a wrong trace)
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


SUPPORT = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"


@pytest.fixture(scope="module")
def result():
    return afp.load(SUPPORT).agent(provider=afp.providers.mock()).run("charged twice for AB-12")


@pytest.mark.parametrize("args, kw, error, words", [
    ((3.5,), {}, TypeError, "the event to explain must be an event id (a `str`"),
    ((b"x",), {}, TypeError, "not a `bytes`"),
    (("",), {}, ValueError, "the event to explain is blank"),
    ((0,), {}, ValueError, "seq number counts from 1"),
    ((), {"skill": 5}, TypeError, "`skill=` must name a skill (a `str`"),
    ((), {"skill": ""}, ValueError, "`skill=` is blank: name the skill to explain"),
    ((), {"skill": " \t"}, ValueError, "`skill=` is blank: name the skill to explain"),
    ((), {"edge": ["a", "b"]}, TypeError, "`edge=` must name an edge"),
    ((), {"skill": "triage", "iteration": "x"}, TypeError, "`iteration=` must be an iteration"),
    ((), {"skill": "triage", "iteration": True}, TypeError, "not a `bool`"),
    ((), {"skill": "triage", "iteration": 0}, ValueError, "`iteration=` counts from 1"),
    ((), {"iteration": 2}, ValueError, "`iteration=` goes with `skill=`"),
    (("1",), {"edge": "a->b"}, ValueError, "at most one of the event, `skill=` and `edge=`"),
    ((), {"format": "xml"}, ValueError, "`format=` must be \"text\" or \"json\", not 'xml'"),
])
def test_a_wrong_argument_to_why_names_what_it_takes(result, args, kw, error, words):
    with pytest.raises(error) as caught:
        result.why(*args, **kw)
    assert words in str(caught.value)
    assert "malformed" not in str(caught.value)


def test_why_takes_an_event_its_id_or_its_seq_number(result):
    event = result.trace[3]
    text = result.why(event.id)
    assert text.startswith(f"[{event.id}]")
    assert result.why(event) == result.why(event.seq) == result.why(str(event.seq)) == text


def test_an_edge_to_a_skill_the_run_never_heard_of_says_so(result):
    """Before: `why(edge="triage->refundz")` explained it as a bare edge the model never picked."""
    text = result.why(edge="triage->refundz")
    assert "the trace never mentions `refundz`" in text and "did you mean `refunds`?" in text
    assert "check that the graph has this edge" in text and "bare edge" not in text


def test_a_declared_edge_an_earlier_edge_beat_points_to_the_edge_that_fired(result):
    """Before: `triage -> escalation`, declared after `triage -> refunds` (which fired, so the
    later one was never tried and the trace never names `escalation`), was answered only
    "check that the graph has this edge", as if it were misspelt."""
    text = result.why(edge="triage->escalation")
    assert "another edge out of `triage` fired first" in text
    assert "the cursor left `triage` at iteration 2" in text
    assert "edge `triage -> refunds` fired on `lookup_order`" in text


def test_a_span_naming_a_fifo_or_a_device_is_not_read(tmp_path):
    """Before: `afpc why --edge` and `trace export --format html` of a run whose spec path is
    now a named pipe blocked for ever opening it (a device such as /dev/zero: read without end)."""
    import os
    import threading
    from afp_dsl.why import Locator
    fifo = tmp_path / "spec.afp"
    os.mkfifo(fifo)
    got = []
    worker = threading.Thread(target=lambda: got.append(Locator()(str(fifo), 7)), daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # (unblock the reader before failing)
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert got == [f"{fifo}@7"]
    assert Locator()("/dev/zero", 3) == "/dev/zero@3"


def test_an_edge_written_with_a_long_arrow_reads_as_its_two_skills() -> None:
    """Before: `a-->b` read as the edge from `a-` to `b` (skill names hold no `-`)."""
    from afp_dsl.why_query import parse_edge
    assert parse_edge("triage-->refunds") == ("triage", "refunds")
    assert parse_edge("lib.a -> lib.b") == ("lib.a", "lib.b") and parse_edge("a-b->c") is None


def test_a_pick_refused_before_any_skill_is_current_names_no_cursor_as_none():
    """`why` cites a cold-start refusal as `cursor none` (the cursor.moved line's word), not as
    an empty `cursor ,`."""
    from afp_dsl.why_describe import describe
    e = Event(7, "r:7", "skill.rejected", 1, 7, (), None,
              payload={"requested": "s2", "cursor": None, "allowed": ["s1"]})
    assert describe(e) == 'read_skill `s2` refused: cursor none, reachable ["s1"]'
