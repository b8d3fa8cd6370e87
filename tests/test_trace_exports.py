"""Trace exports and the `afpc trace` / `afpc why` commands.

Every event of every example run validates against the shipped JSON Schema; the thinking export
has the player's shape; the CLI reads a SQLite store and fails cleanly on unknown runs.
"""
from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner
from test_trace_canary import canary_run
from test_why_golden import all_example_runs, example_runs

from afp_dsl import export
from afp_dsl.cli import main
from afp_dsl.store import sqlite
from afp_dsl.trace import KINDS


@pytest.fixture(scope="module")
def runs():
    return all_example_runs()


def test_the_schema_ships_in_the_package_and_names_every_kind():
    schema = export.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["kind"]["enum"] == list(KINDS)
    covered = {rule["if"]["properties"]["kind"]["const"] for rule in schema["allOf"]}
    assert covered == set(KINDS)


def test_every_event_of_every_example_run_validates(runs):
    validator = jsonschema.Draft202012Validator(export.schema())
    kinds = set()
    assert len(runs) >= 30
    for _, r in runs:
        traces = [r.trace] + [t for tool in r.inner.values() for t in tool.runs.values()]
        for t in traces:
            for line in export.to_jsonl(t).splitlines():
                event = json.loads(line)
                errors = [e.message for e in validator.iter_errors(event)]
                assert not errors, (event["id"], errors)
                kinds.add(event["kind"])
    assert {"context.composed", "route.evaluated", "policy.decided", "checkin.decided",
            "budget.exhausted", "step.skipped"} <= kinds


def test_the_schema_rejects_a_broken_event():
    validator = jsonschema.Draft202012Validator(export.schema())
    _, r = canary_run()
    good = r.trace[0].to_dict()
    assert validator.is_valid(good)
    for broken in ({**good, "kind": "run.begun"}, {**good, "extra": 1},
                   {k: v for k, v in good.items() if k != "caused_by"},
                   {**good, "payload": {"agent": "g"}}):
        assert not validator.is_valid(broken)


def test_jsonl_is_one_event_per_line_in_order():
    _, r = canary_run()
    lines = export.to_jsonl(r.trace).splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [e.seq for e in r.trace]
    assert lines[0] == r.trace[0].to_json()


def test_thinking_has_the_player_shape_and_aligned_event_ids():
    _, r = canary_run()
    doc = export.to_thinking(r.trace)
    assert {"task", "agent", "model", "asker", "steps", "at"} <= set(doc)
    assert doc["agent"] == "g" and doc["asker"] == "you"
    assert [s["kind"] for s in doc["steps"]] == ["prompt", "ask", "return", "ask", "return",
                                                  "answer"]
    assert len(doc["at"]) == len(doc["steps"])
    ids = {e.id: e.kind for e in r.trace}
    assert [ids[i] for i in doc["at"]] == ["run.started", "tool.called", "tool.returned",
                                           "tool.called", "tool.returned", "run.finished"]
    for s in doc["steps"]:
        assert isinstance(s["brain"], str) and s["brain"]
        assert {"ms", "tokens"} <= set(s["cost"])
    ask, ret = doc["steps"][1], doc["steps"][2]
    assert ask["tool"] == "login" and ask["input"]["password"] == "[REDACTED]"
    assert ret["replyType"] == "data" and ret["output"] == {"value": "ok"}
    assert doc["steps"][-1]["answer"]["headline"].startswith("Done")


def test_thinking_marks_read_skill_returns_as_instructions():
    _, r = example_runs("research_assistant", "loads_a_skill_then_searches")[-1]
    steps = export.to_thinking(r.trace)["steps"]
    picks = [s for s in steps if s.get("toolName") == "read_skill"]
    assert picks and all(s["kind"] in ("ask", "return") for s in picks)
    assert any(s["kind"] == "return" and s["replyType"] == "instruction" and s.get("skill")
               for s in picks)


# ---------------------------------------------------------------- the CLI
@pytest.fixture
def store_with_runs(tmp_path):
    db = tmp_path / "runs.db"
    agent, r = canary_run(sqlite(db))
    agent.store.close()
    store = sqlite(db)
    _, inner_run = example_runs("due_diligence", "revenue_through_the_inner_agent")[-1]
    store.save_run(inner_run.run_id, "analyst", None, "finished", "answered", None, {},
                   inner_run.trace.events)
    for tool in inner_run.inner.values():
        for t in tool.runs.values():
            if t.run_id.startswith(inner_run.run_id + "/"):
                store.save_run(t.run_id, "filings_reader", None, "finished", "answered", None,
                               {"outer": inner_run.run_id}, t.events)
    store.close()
    return str(db), r.run_id, inner_run.run_id


def _cli(*args):
    return CliRunner().invoke(main, list(args))


def test_trace_list_and_show(store_with_runs):
    db, run_id, outer = store_with_runs
    out = _cli("trace", "list", "--store", db)
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].split() == ["RUN", "AGENT", "OUTCOME", "STARTED",
                                                  "ITERATIONS"]
    assert all(line.split()[3] == "-" for line in out.output.splitlines()[1:])  # (no stamp given)
    assert run_id in out.output and outer in out.output and "/call-" not in out.output
    assert "/call-" in _cli("trace", "list", "--all", "--store", db).output
    rows = json.loads(_cli("trace", "list", "--format", "json", "--store", db).output)
    assert rows[0]["iterations"] == 3 and rows[0]["outcome"] == "answered"
    assert rows[0]["started"] is None and rows[0]["time"] > 3  # a logical tick, not a date
    show = _cli("trace", "show", run_id, "--store", db)
    assert show.exit_code == 0
    assert "iteration 1" in show.output and "iteration 3" in show.output
    assert f"[{run_id}:6] model called `login`" in show.output
    assert f"      [{run_id}:7] `login`" in show.output  # results nest under their call


def test_unknown_runs_and_bad_usage_fail_cleanly(store_with_runs):
    db, run_id, _ = store_with_runs
    out = _cli("trace", "show", run_id + "x", "--store", db)
    assert out.exit_code == 1 and f"did you mean `{run_id}`" in out.output
    assert _cli("why", "nope", "--store", db).exit_code == 1
    assert _cli("why", run_id, "--event", "999", "--store", db).exit_code == 1
    assert _cli("why", run_id, "--iteration", "2", "--store", db).exit_code == 2
    assert _cli("why", run_id, "--skill", "a", "--edge", "a->b", "--store", db).exit_code == 2
    assert "Traceback" not in out.output


def test_why_from_the_store(store_with_runs):
    db, run_id, outer = store_with_runs
    text = _cli("why", run_id, "--store", db).output
    assert text.startswith(f"[{run_id}:") and "answer (answered)" in text
    assert "skill `done` — route" in text and "edge `start -> done` fired" in text
    by_seq = _cli("why", run_id, "--event", "9", "--store", db).output
    assert by_seq.startswith(f"[{run_id}:9] cursor start -> done (route)")
    doc = json.loads(_cli("why", run_id, "--format", "json", "--skill", "done",
                          "--iteration", "1", "--store", db).output)
    assert doc["query"] == {"skill": "done", "iteration": 1}
    assert doc["tree"]["data"]["active"] is False
    edge = _cli("why", run_id, "--edge", "done->start", "--store", db).output
    assert "never fired" in edge
    nested = _cli("why", outer, "--store", db).output
    assert f"inner run {outer}/call-1-1 of agent `filings_reader`" in nested


def test_every_export_format_from_the_cli(store_with_runs, tmp_path):
    db, run_id, _ = store_with_runs
    for fmt in ("jsonl", "thinking", "html", "otlp-json"):
        if fmt == "otlp-json":
            pytest.importorskip("opentelemetry.sdk")
        out = _cli("trace", "export", run_id, "--format", fmt, "--store", db)
        assert out.exit_code == 0, out.output
        assert out.output.strip()
    assert _cli("trace", "export", run_id, "--format", "csv", "--store", db).exit_code == 2


def test_latest_gives_the_last_events_newest_first_and_tail_oldest_first():
    from afp_dsl.trace import Event, Trace
    t = Trace("r", [Event(i, f"r:{i}", "tool.called", 1, i, (), None, None) for i in range(1, 6)])
    assert [e.seq for e in t.latest(3)] == [5, 4, 3]
    assert [e.seq for e in t.latest(64)] == [5, 4, 3, 2, 1]
    assert [e.seq for e in t.latest(0)] == [] and [e.seq for e in t.tail(2)] == [4, 5]


def test_thinking_prompt_is_the_task_and_no_ask_is_blank():
    """reference §10 (the original's `getTrace`): the `prompt` beat's brain is the task; an
    `ask` whose reply has no text gets the framework's line, as the original's commentary does."""
    import afp_dsl as afp
    spec = ('agent g { skills = [sk] tools = [u] }\nskill sk { description = "S" body = "B" }\n'
            'tool u { description = "u" impl = returns({ok: true}) }')
    agent = afp.load(spec).agent(provider=afp.providers.mock(
        [[("read_skill", {"id": "sk"}), ("u", {})], "done"]))
    doc = export.to_thinking(agent.run("find the thing").trace)
    prompt, *rest = doc["steps"]
    assert prompt == {"kind": "prompt", "brain": "find the thing", "cost": prompt["cost"]}
    assert doc["task"] == "find the thing"
    asks = [s for s in rest if s["kind"] == "ask"]
    assert [a["brain"] for a in asks] == ["The model reads skill `sk`.", "The model calls `u`."]
    assert all(isinstance(s["brain"], str) and s["brain"] for s in doc["steps"])


def test_every_export_takes_the_run_result_and_the_report_draws_its_graph():
    """`to_jsonl`, `to_thinking`, `report` took only the events (a `RunResult` was a TypeError,
    while OTel took it), and a report made from Python had no graph unless the caller drew it:
    given the program (or the `RunResult`, which holds it) the report draws the run's graph."""
    from afp_dsl import report_html
    from afp_dsl.graph_overlay import overlay_drawings
    _, r = example_runs("support", "small_refund")[-1]
    assert export.to_jsonl(r) == export.to_jsonl(r.trace) == export.to_jsonl(list(r.trace))
    assert export.to_thinking(r) == export.to_thinking(r.trace)
    mermaid, svg = overlay_drawings(r.program, list(r.trace))
    assert mermaid and svg
    drawn = report_html.report(r.trace, program=r.program, inner=r.inner)
    assert report_html.report(r) == drawn
    assert drawn == report_html.report(r.trace, program=r.program, inner=r.inner,
                                       mermaid=mermaid, svg=svg)
    assert "<svg" in drawn and "class n_refunds,n_triage visited" in drawn
    with pytest.raises(TypeError, match="result.trace"):
        export.to_jsonl("run-1")


def test_the_html_export_never_writes_over_the_spec_it_reads(tmp_path, monkeypatch):
    """The HTML report reads the run's spec (the graph, `file:line`): `-o` naming that spec
    replaced it with the report. It is refused (exit 2), the spec left as it was."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "g.afp"
    text = 'agent g { system = "s" }\n'
    spec.write_text(text, encoding="utf-8")
    db = str(tmp_path / "runs.db")
    assert _cli("run", "g.afp", "-m", "hi", "--store", db).exit_code == 0
    for target in ("g.afp", str(spec), "./g.afp"):
        res = _cli("trace", "export", "last", "--format", "html", "-o", target, "--store", db)
        assert res.exit_code == 2 and "which this command reads" in res.output, res.output
        assert spec.read_text(encoding="utf-8") == text
    ok = _cli("trace", "export", "last", "--format", "html", "-o", "report.html", "--store", db)
    assert ok.exit_code == 0 and (tmp_path / "report.html").read_text().startswith("<!DOCTYPE")


def test_trace_list_and_show_write_to_the_file_o_names(store_with_runs, tmp_path):
    """tooling §2 gives `afpc trace list|show RUN|export RUN … [-o OUT]`: `-o` was an export
    option only (`list -o` and `show -o` were usage errors). They write what they print."""
    db, run_id, _ = store_with_runs
    for args in (["trace", "list"], ["trace", "show", run_id],
                 ["trace", "show", run_id, "--format", "json"], ["trace", "list", "--format", "json"]):
        printed = _cli(*args, "--store", db)
        out = tmp_path / "out.txt"
        res = _cli(*args, "--store", db, "-o", str(out))
        assert res.exit_code == 0 and f"wrote {out}" in res.stderr, res.output
        assert out.read_text(encoding="utf-8") == printed.stdout
    refused = _cli("trace", "list", "--store", db, "-o", db)
    assert refused.exit_code == 2 and "which this command reads" in refused.output


def test_thinking_costs_add_up_to_the_run_s_tokens(runs):
    """A reply that made no beat (one the unfinished steps sent back, the wrap-up's calls that
    never ran) lost its tokens: the beats' costs now add up to `run.finished`'s, run by run."""
    checked = 0
    for _, r in runs:
        fin = [e.payload for e in r.trace if e.kind == "run.finished"]
        if not fin:
            continue
        steps = export.to_thinking(r.trace)["steps"]
        assert [sum(s["cost"][k] for s in steps) for k in ("tokensIn", "tokensOut")] == \
            fin[-1]["tokens"], r.run_id
        assert all(s["cost"]["tokens"] == s["cost"]["tokensIn"] + s["cost"]["tokensOut"]
                   for s in steps)
        checked += 1
    assert checked >= 25
