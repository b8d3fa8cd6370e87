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
    from afp_dsl.policy import ChainResult, PolicyDecision

    assert Event._fields == ("seq", "id", "kind", "iteration", "time", "caused_by", "source", "payload")
    assert PolicyDecision._fields == ("outcome", "policy", "rule_span", "reason", "moment", "tool",
                                      "call_id", "iteration", "conditions", "rewritten")
    assert ChainResult._fields == ("outcome", "decisions", "deciding", "deciding_index", "value")


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



# ---------------------------------------------------------------- a call's own events, however many
def test_a_tool_call_with_more_than_64_decisions_keeps_its_duration_and_causes() -> None:
    """Before: the `tool.called` event and the decisions were looked for among the newest 64
    events only; 70 ledger rows between `tool.called` and `tool.returned` gave a duration of 1
    and left rows out of `tool.returned`'s causes."""
    from interp_support import call, make
    n = 70
    names = ", ".join(f"p{i}" for i in range(n))
    policies = "\n".join(f'policy p{i} {{ before echo {{ deny when args.word == "never" because "no" }} }}'
                         for i in range(n))
    spec = (f"agent a {{ tools = [echo] policies = [{names}] }}\n"
            'tool echo { description = "echo" input { word: string } }\n' + policies)
    agent, _ = make(spec, [call("echo", word="hi"), "done"], tools={"echo": lambda word: word})
    r = agent.run("go")
    events = list(r.trace)
    called = next(e for e in events if e.kind == "tool.called")
    returned = next(e for e in events if e.kind == "tool.returned")
    rows = [e.id for e in events if e.kind == "policy.decided"]
    assert len(rows) == n
    assert returned.payload["duration"] == returned.time - called.time == n + 1
    assert returned.caused_by == (called.id, *rows)


def test_trace_index_finds_its_own_ids_at_once_and_others_by_search() -> None:
    from afp_dsl.trace import Event, Trace
    events = [Event(seq, f"r:{seq}", "k", 1, seq, (), None, {}) for seq in range(5, 9)]
    trace = Trace("r", events)
    assert [trace.index(f"r:{seq}") for seq in range(5, 9)] == [0, 1, 2, 3]
    assert trace.index("r:4") is None and trace.index("r:99") is None
    assert trace.index("r:²") is None and trace.index("") is None  # (a digit that is not ASCII)
    odd = Trace("r", [Event(1, "custom-id", "k", 1, 1, (), None, {})])
    assert odd.index("custom-id") == 0  # not `run:seq`: found by search
    assert Trace("r").index("r:1") is None
    assert [e.seq for e in trace.since(1)] == [7, 8]
