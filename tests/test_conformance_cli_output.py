"""tooling.md §2 "Output": human text on a terminal, `--format json` machine output.

Before, `afpc trace show RUN` had only its text timeline (`--format json` was "No such
option"), while `trace list`, `why`, `graph` and `check` took `--format json`.
(test_conformance_tooling.py is past 400 lines, so the later tooling passes go here.)
"""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from afp_dsl.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support" / "support.afp"


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _stored_run(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    res = cli("run", SUPPORT, "--script", "small_refund", "-m",
              "I was charged twice for order AB-12", "--store", db)
    assert res.exit_code == 0, res.output
    return db


def test_trace_show_json_is_the_run_row_and_its_events_as_jsonl_writes_them(tmp_path):
    db = _stored_run(tmp_path)
    shown = cli("trace", "show", "last", "--format", "json", "--store", db)
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    listed = json.loads(cli("trace", "list", "--format", "json", "--store", db).stdout)
    assert doc["run"] == listed[-1]
    assert doc["run"]["outcome"] == "answered"
    jsonl = cli("trace", "export", "last", "--format", "jsonl", "--store", db).stdout
    assert doc["events"] == [json.loads(line) for line in jsonl.splitlines()]
    assert [e["kind"] for e in doc["events"]][-1] == "run.finished"


def test_trace_show_text_stays_the_default_timeline(tmp_path):
    db = _stored_run(tmp_path)
    text = cli("trace", "show", "last", "--store", db)
    assert text.exit_code == 0 and text.stdout.startswith("run run-")
    assert "iteration 1" in text.stdout


def test_trace_show_json_of_an_unknown_run_exits_1_with_nothing_on_stdout(tmp_path):
    db = _stored_run(tmp_path)
    res = cli("trace", "show", "run-nope", "--format", "json", "--store", db)
    assert res.exit_code == 1 and res.stdout == ""
    assert "no run `run-nope`" in res.stderr
