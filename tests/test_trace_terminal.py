"""Text a run recorded reaches a terminal only as visible text (`afpc trace show|list`, `afpc why`).

A model's reply or a tool's result may hold terminal control sequences (clear the screen, set
the window title, a bidirectional override that reorders the line). The human text reports print
every control character but tab and newline as its `\\uXXXX` escape; the JSON forms keep the
recorded value exactly (JSON escapes it by itself).
"""
from __future__ import annotations

import json

from click.testing import CliRunner

import afp_dsl as afp
from afp_dsl.cli import main
from afp_dsl.cli_io import terminal_safe
from afp_dsl.store import sqlite

REPLY = "line1\x1b[2J\rover\u202eevil\x00nul\x9b31m\x7f"
RESULT = "r\x1b]0;TITLE\x07ed"
RAW = ("\x1b", "\x07", "\x00", "\u202e", "\x9b", "\x7f", "\r")


def _store(tmp_path):
    db = tmp_path / "runs.db"
    program = afp.load('agent g { system = "s" tools = [t] }\n'
                       'tool t { description = "t" impl = returns("x") }')
    store = sqlite(db)
    agent = program.agent(provider=afp.providers.mock([[("t", {"q": "a\x1b[1mb"})], REPLY]),
                          tools={"t": lambda q: RESULT}, store=store)
    r = agent.run("hi\x1b[31m there")
    assert r.outcome == "answered" and r.answer == REPLY
    store.close()
    return str(db), r.run_id


def _out(*args):
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def test_terminal_safe_escapes_controls_but_keeps_tab_newline_and_text():
    assert terminal_safe("a\tb\nc é ✓") == "a\tb\nc é ✓"
    assert terminal_safe("x\x1b[2Jy\u2066z\x85") == "x\\u001b[2Jy\\u2066z\\u0085"


def test_trace_show_and_why_print_recorded_controls_as_escapes(tmp_path):
    db, run_id = _store(tmp_path)
    for args in (["trace", "show", run_id], ["why", run_id], ["trace", "list"],
                 ["why", run_id, "--event", "6"]):
        text = _out(*args, "--store", db)
        assert not any(c in text for c in RAW), (args, text)
    shown = _out("trace", "show", run_id, "--store", db)
    assert "line1\\u001b[2J over\\u202eevil\\u0000nul\\u009b31m\\u007f" in shown
    assert "r\\u001b]0;TITLE\\u0007ed" in shown


def test_the_json_forms_keep_the_recorded_text(tmp_path):
    db, run_id = _store(tmp_path)
    doc = json.loads(_out("trace", "show", run_id, "--format", "json", "--store", db))
    finished = [e for e in doc["events"] if e["kind"] == "run.finished"][0]
    assert finished["payload"]["answer"] == REPLY
    tree = json.loads(_out("why", run_id, "--format", "json", "--store", db))
    assert tree["tree"]["data"]["answer"] == REPLY


def test_an_unknown_run_id_is_named_with_its_controls_escaped(tmp_path):
    db, _ = _store(tmp_path)
    res = CliRunner().invoke(main, ["trace", "show", "run-\x1b[2Jx", "--store", db])
    assert res.exit_code == 1
    assert "no run `run-\\u001b[2Jx`" in res.output and "\x1b" not in res.output


SPEC_RUN = r'''agent g { system = "s" tools = [t, pay] }
tool t { description = "t" impl = returns("x") }
tool pay { description = "pay" input { to: string } check_in = true impl = returns("ok") }
test speaks { model says "ans\u001b[2Jwer\u202e!" }
test pays { model calls pay { to: "x\u001b]0;T\u0007y" } }
'''


def test_afpc_run_prints_the_answer_and_the_pause_with_controls_escaped(tmp_path):
    spec = tmp_path / "g.afp"
    spec.write_text(SPEC_RUN)
    db = str(tmp_path / "runs.db")
    res = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--script", "speaks",
                                    "--store", db])
    assert res.exit_code == 0, res.output
    assert "ans\\u001b[2Jwer\\u202e!" in res.output and "\x1b" not in res.output
    res = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--script", "pays",
                                    "--store", db])
    assert res.exit_code == 3, res.output
    assert "x\\u001b]0;T\\u0007y" in res.output and "\x07" not in res.output
    as_json = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--script", "speaks",
                                        "--store", db, "--json"])
    assert json.loads(as_json.stdout)["answer"] == "ans\x1b[2Jwer\u202e!"
