"""Redaction scrubs the run's data and keeps the trace's structure (`afp_dsl/redaction_events.py`).

A key rule naming a field of the trace (`name`, `outcome`, `id`, `status`, `tool`) and a pattern
matching a declared name (`/card/` against the tool `get_card`) used to blank the trace's own
structure: the outcome became `[REDACTED]`, the exports failed their schema, and `expect called`
found no tool. Every example is run again here with a hostile rule added to every agent: its
keys are every field name the trace has, its pattern every declared name; the example's tests
must still pass, every event must still validate, and the data under those keys is still
scrubbed.
"""
from __future__ import annotations

import json
import re

import jsonschema
import pytest
from interp_support import call, make
from test_why_golden import all_example_runs

from afp_dsl import export, ir, runner
from afp_dsl.redaction import Redactor
from afp_dsl.redaction_events import DATA, KEEP, STRUCTURE

SPEC = """
agent g { tools = [lookup, get_card] redact = [r] }
tool lookup { description = "look up" input { name: string } }
tool get_card { description = "card" input { id: string } }
redact r {
  keys = [%s]
  patterns = [%s]
}
"""
TOOLS = {"lookup": lambda name: {"id": "X-99", "status": "ok", "name": "Ada Lovelace"},
         "get_card": lambda id: "card 4242"}
SCRIPT = [call("lookup", name="lookup"), call("get_card", id="c-1234"), "done"]


def _run(keys: str, patterns: str):
    agent, _ = make(SPEC % (keys, patterns), SCRIPT, tools=TOOLS)
    return agent.run("hi")


def _validate(trace) -> None:
    validator = jsonschema.Draft202012Validator(export.schema())
    for line in export.to_jsonl(trace).splitlines():
        errors = [e.message for e in validator.iter_errors(json.loads(line))]
        assert not errors, (line[:120], errors)


def test_key_rules_naming_trace_fields_scrub_the_data_only():
    r = _run('"name", "outcome", "id", "status", "tool", "text", "args", "result"', "")
    assert r.outcome == "answered"
    _validate(r.trace)
    by_kind = {}
    for e in r.trace:
        by_kind.setdefault(e.kind, []).append(e.payload)
    assert [t["name"] for t in by_kind["context.composed"][0]["tools"]] == ["lookup", "get_card"]
    called = by_kind["tool.called"]
    assert [c["tool"] for c in called] == ["lookup", "get_card"]
    assert [c["call_id"] for c in called] == ["call-1-1", "call-2-1"]
    assert called[0]["args"] == {"name": "[REDACTED]"} and called[1]["args"] == {"id": "[REDACTED]"}
    returned = by_kind["tool.returned"][0]
    assert returned["status"] == "success"
    assert returned["result"] == {"id": "[REDACTED]", "status": "[REDACTED]", "name": "[REDACTED]"}
    finished = by_kind["run.finished"][0]
    assert finished["outcome"] == "answered"
    assert finished["executions"] == {"lookup": 1, "get_card": 1}
    assert "Ada Lovelace" not in r.trace.to_json() and "c-1234" not in r.trace.to_json()


def test_a_pattern_matching_a_declared_name_scrubs_the_data_only():
    r = _run("", "/card/")
    _validate(r.trace)
    assert [p["tool"] for p in (e.payload for e in r.trace if e.kind == "tool.called")] == \
        ["lookup", "get_card"]
    returned = [e.payload for e in r.trace if e.kind == "tool.returned"]
    assert returned[1]["result"] == "[REDACTED] 4242"
    assert r.trace[-1].payload["executions"] == {"lookup": 1, "get_card": 1}
    counts = [e.payload["counts"] for e in r.trace if e.kind == "redaction.applied"]
    assert counts == [{"r": 1}]


def test_a_secret_equal_to_a_tool_name_is_scrubbed_from_text_not_from_the_name():
    agent, _ = make(SPEC % ('"name"', ""), [call("lookup", name="get_card"),
                                            "I used get_card for you"], tools=TOOLS)
    r = agent.run("hi")
    tools = [e.payload["tool"] for e in r.trace if e.kind == "tool.called"]
    assert tools == ["lookup"]
    assert r.trace[-1].payload["answer"] == "I used [REDACTED] for you"
    assert [t["name"] for t in r.trace[1].payload["tools"]] == ["lookup", "get_card"]


def test_an_everything_pattern_keeps_the_structure():
    r = _run('"name"', r"/[\s\S]+/")
    _validate(r.trace)
    finished = r.trace[-1].payload
    assert finished["outcome"] == "answered" and finished["answer"] == "[REDACTED]"
    assert set(r.trace[1].payload) == {"pieces", "tools", "active", "system_chars"}


def test_an_unknown_field_is_taken_for_data_under_its_own_key():
    from afp_dsl.redaction_events import scrub_event
    red = Redactor([ir.Redact(name="r", keys=("password",), patterns=(ir.Regex(pattern="sk-\\w+"),))])
    out = scrub_event(red, "policy.decided", {"policy": "p", "password": "hunter22",
                                              "custom": "key sk-abc", "reason": "hunter22"},
                      frozenset({"p"}))
    assert out == {"policy": "p", "password": "[REDACTED]", "custom": "key [REDACTED]",
                   "reason": "[REDACTED]"}


def test_the_schema_names_no_field_the_redaction_does_not_know():
    """Every field the trace's schema defines is structure, data or the code's (else it would
    be taken for data under a key of its own: a key rule naming it would blank it)."""
    envelope = {"seq", "id", "kind", "iteration", "time", "caused_by", "payload"}
    names: set[str] = set()

    def walk(x):
        if isinstance(x, dict):
            names.update(x.get("properties", {}))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(export.schema())
    assert names - envelope <= STRUCTURE | DATA | KEEP
    assert not (STRUCTURE & DATA) and not (STRUCTURE & KEEP) and not (DATA & KEEP)


def _names(program) -> list[str]:
    return sorted({d.name for m in program.ir.modules for d in m.decls
                   if isinstance(getattr(d, "name", None), str)}, key=len, reverse=True)


@pytest.fixture(scope="module")
def hostile_runs():
    """Every example's test runs, each agent's rules joined with a hostile one."""
    patch = pytest.MonkeyPatch()
    keys = tuple(sorted(STRUCTURE | KEEP | DATA))
    seen: list = []

    def hostile(rules=(), **kw):
        rules = tuple(rules)
        if not kw and not any(r.name == "hostile" for r in rules) and seen:
            words = "|".join(re.escape(n) for n in seen[-1])
            rules += (ir.Redact(name="hostile", keys=keys, patterns=(ir.Regex(pattern=words),)),)
        return Redactor(rules, **kw)
    import test_why_golden as golden
    real_program = golden._program

    def program(example):
        p = real_program(example)
        seen.append(_names(p))
        return p
    patch.setattr(golden, "_program", program)
    patch.setattr(runner, "Redactor", hostile)
    try:
        yield all_example_runs()
    finally:
        patch.undo()


def test_every_example_passes_its_tests_and_validates_under_a_hostile_rule(hostile_runs):
    validator = jsonschema.Draft202012Validator(export.schema())
    hit = 0
    for _, r in hostile_runs:
        for t in [r.trace] + [t for tool in r.inner.values() for t in tool.runs.values()]:
            for line in export.to_jsonl(t).splitlines():
                event = json.loads(line)
                errors = [e.message for e in validator.iter_errors(event)]
                assert not errors, (event["id"], errors)
                if event["kind"] == "redaction.applied":
                    hit += event["payload"]["counts"].get("hostile", 0)
    assert hit > 0  # (the hostile rule did scrub: the comparison above compares something)


# ---------------------------------------------------------------- properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from afp_dsl.redaction_events import scrub_event  # noqa: E402

_SECRET = "hunter2-SECRET"
_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "name", "id", "password", "x"]),
                                            inner, max_size=3)),
    max_leaves=10)
_FIELDS = sorted(STRUCTURE | DATA | KEEP) + ["custom", "password"]


@st.composite
def _payloads(draw):
    """A payload of trace fields (and a stray one) holding data, with the secret planted under
    `password` somewhere inside a data field, and perhaps copied into a text field."""
    payload = {k: draw(_json) for k in draw(st.lists(st.sampled_from(_FIELDS), max_size=5,
                                                     unique=True))}
    where = draw(st.sampled_from(sorted(DATA)))
    payload[where] = {"password": _SECRET, "other": draw(_json)}
    if where != "message" and draw(st.booleans()):  # (a copy: scrubbed as remembered)
        payload["message"] = f"my password is {_SECRET}!"
    return payload


@settings(max_examples=300, deadline=None)
@given(_payloads(), st.sampled_from(["tool.called", "policy.decided", "run.finished"]))
def test_a_planted_secret_never_survives_and_the_structure_does(payload, kind):
    red = Redactor([ir.Redact(name="r", keys=("password", "name", "outcome"))])
    out = scrub_event(red, kind, payload, frozenset({"lookup"}))
    assert _SECRET not in json.dumps(out, default=str)
    assert list(out) == list(payload)  # the trace's fields are all kept, in order
    for k in KEEP & set(payload):
        assert out[k] == payload[k]  # the code's values are kept as they are
    for k in set(payload) - DATA - KEEP - {"password", "custom"}:
        assert json.dumps(payload[k], default=str).count("[REDACTED]") <= \
            json.dumps(out[k], default=str).count("[REDACTED]")
