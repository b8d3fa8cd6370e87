"""NaN and infinities a host tool returns: kept in the run, written as strict JSON everywhere.

The interpreter keeps what the tool returned (the in-memory trace and the stores hold the float;
the model reads Python's text of it), and every JSON form made for other readers (the JSONL
export, `thinking`, the HTML report's data island, OpenTelemetry's JSON attributes) writes it as
the string "NaN", "Infinity" or "-Infinity", protobuf's JSON convention, so a strict reader
(JavaScript's `JSON.parse`, `jq`) accepts every line.
"""
from __future__ import annotations

import json
import math
import re

import jsonschema
import pytest

import afp_dsl as afp
from afp_dsl import export, report_html
from afp_dsl.providers import mock
from afp_dsl.store import sqlite
from afp_dsl.trace import dumps, json_text

SPEC = """
agent probe_agent {
  tools = [probe]
}
tool probe {
  description = "Probe a sensor."
  input { q: string }
}
"""
RESULT = {"v": float("nan"), "w": float("inf"), "x": [-float("inf"), 1.5], "y": 2}


def strict(text: str):
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def run():
    program = afp.load(SPEC)
    agent = program.agent(provider=mock([[("probe", {"q": "x"})], "done"]),
                          tools={"probe": lambda q: dict(RESULT)})
    result = agent.run("go")
    assert result.outcome == "answered"
    return result


def returned(events):
    return next(e for e in events if e.kind == "tool.returned")


def test_the_run_keeps_the_numbers_the_tool_returned(run):
    result = returned(run.trace).payload["result"]
    assert math.isnan(result["v"]) and result["w"] == math.inf and result["x"] == [-math.inf, 1.5]


def test_every_jsonl_line_is_strict_json_valid_against_the_schema(run):
    lines = export.to_jsonl(run.trace).splitlines()
    validator = jsonschema.Draft202012Validator(export.schema())
    events = [strict(line) for line in lines]
    for e in events:
        validator.validate(e)
    result = next(e for e in events if e["kind"] == "tool.returned")["payload"]["result"]
    assert result == {"v": "NaN", "w": "Infinity", "x": ["-Infinity", 1.5], "y": 2}


def test_thinking_and_the_html_data_island_are_strict_json(run):
    strict(export.thinking_json(run.trace))
    page = report_html.report(run.trace)
    island = re.search(r'<script type="application/json" id="afp-data">(.*?)</script>', page, re.S)
    assert island is not None
    assert "Infinity" in island.group(1)
    strict(island.group(1))


def test_a_store_keeps_the_numbers(run, tmp_path):
    store = sqlite(tmp_path / "runs.db")
    try:
        store.save_run(run.run_id, "probe_agent", None, "finished", "answered", "done", {},
                       list(run.trace))
        back = returned(store.events(run.run_id)).payload["result"]
    finally:
        store.close()
    assert math.isnan(back["v"]) and back["w"] == math.inf


def test_json_text_changes_nothing_without_a_non_finite_number():
    value = {"b": [1, 2.5, None, True, "NaN"], "a": {"c": -0.0, "d": 1e308}}
    assert json_text(value, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert dumps(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                      ensure_ascii=False, default=str)


def test_json_text_still_refuses_a_cycle():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json_text(loop)


def test_float_subclasses_and_tuples_are_written_too():
    class Reading(float):
        pass
    assert json_text({"r": (Reading("nan"), Reading("-inf"), Reading(2.0))}) == \
        '{"r": ["NaN", "-Infinity", 2.0]}'


def test_opentelemetry_json_attributes_are_strict(run):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from afp_dsl import otel
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.export_run(run.trace, provider, content=True)
    tool = next(s for s in exporter.get_finished_spans()
                if s.attributes.get("gen_ai.operation.name") == "execute_tool")
    assert strict(tool.attributes["gen_ai.tool.call.result"])["w"] == "Infinity"


def _leaves():
    from hypothesis import strategies as st
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))


def test_json_text_is_strict_json_that_reads_back_as_the_value_with_its_strings():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    values = st.recursive(_leaves(), lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
        max_leaves=20)

    def expected(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
        if isinstance(v, dict):
            return {k: expected(x) for k, x in v.items()}
        if isinstance(v, list):
            return [expected(x) for x in v]
        return v

    @settings(max_examples=300, deadline=None)
    @given(values)
    def check(value):
        assert strict(json_text(value)) == expected(value)
        assert strict(dumps(value)) == expected(value)

    check()


def test_trace_show_format_json_is_strict_json(run, tmp_path):
    """`afpc trace show RUN --format json` gives the events as the JSONL export writes them:
    it wrote a bare `NaN` (not JSON) for a tool's NaN."""
    from click.testing import CliRunner

    from afp_dsl.cli import main
    db = tmp_path / "runs.db"
    store = sqlite(db)
    store.save_run(run.run_id, "probe_agent", None, "finished", "answered", "done", {},
                   list(run.trace))
    store.close()
    res = CliRunner().invoke(main, ["trace", "show", run.run_id, "--format", "json",
                                    "--store", str(db)])
    assert res.exit_code == 0, res.output
    doc = strict(res.stdout)
    assert doc["events"] == [strict(line) for line in export.to_jsonl(run.trace).splitlines()]
