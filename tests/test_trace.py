"""A trace event is an immutable record, equal, printed and serialised by its fields."""
from __future__ import annotations

import pytest

from afp_dsl.trace import KINDS, Event


def test_an_event_cannot_be_changed_and_compares_by_its_fields() -> None:
    e = Event(1, "r:1", "run.started", 0, 1, (), None, {"message": "hi"})
    with pytest.raises(AttributeError):
        e.kind = "run.finished"  # type: ignore[misc]
    assert e == Event.from_dict(e.to_dict())
    assert e != Event(1, "r:1", "run.started", 0, 1, (), None, {"message": "ho"})
    assert repr(e).startswith("Event(seq=1, id='r:1', kind='run.started'")


def test_the_recorder_builds_events_and_decisions_with_every_field_in_order() -> None:
    """The recorder and the policy walk build these tuples field by field (`tuple.__new__`), so a
    field added to either must be added there too: this fails until it is."""
    from afp_dsl.policy import PolicyDecision

    assert Event._fields == ("seq", "id", "kind", "iteration", "time", "caused_by", "source", "payload")
    assert PolicyDecision._fields == ("outcome", "policy", "rule_span", "reason", "moment", "tool",
                                      "call_id", "iteration", "conditions")


def test_recorded_events_carry_their_fields_in_place() -> None:
    import afp_dsl as afp
    from afp_dsl.providers import mock

    program = afp.load('agent a {\n  tools = [echo]\n  policies = [p]\n}\n'
                       'tool echo {\n  description = "Echo."\n  input { word: string }\n}\n'
                       'policy p {\n  before echo {\n    deny when args.word == "x" because "no"\n  }\n}\n')
    result = program.agent(provider=mock([[("echo", {"word": "w"})], "done"]),
                           tools={"echo": lambda word: word}).run("go")
    rows = [e for e in result.trace if e.kind == "policy.decided"]
    assert [(r.payload["policy"], r.payload["outcome"], r.payload["rule"]) for r in rows] == [("p", "allow", None)]
    for i, e in enumerate(result.trace, 1):
        assert e.seq == i and e.id == f"{result.run_id}:{i}" and type(e.caused_by) is tuple
        assert isinstance(e.payload, dict) and e.kind in KINDS

