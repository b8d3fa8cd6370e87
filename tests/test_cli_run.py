"""`afpc run`, `afpc resume`, `afpc test`: exit codes, JSON, no tracebacks."""
from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from afp_dsl.cli import main

SPEC = """
agent desk { tools = [refund, lookup] policies = [guard] }
tool lookup { description = "look" impl = returns("found") }
tool refund { description = "refund" input { amount: number } impl = returns("refunded") }
policy guard {
  before refund { ask when args.amount > 100 because "needs a person" }
  output { deny when text matches /guarantee/ because "no guarantees" }
}
test small {
  user "x"
  model calls refund { amount: 5 }
  model says "refunded 5"
}
test big {
  user "x"
  model calls refund { amount: 500 }
  model says "refunded 500"
}
test promise {
  user "x"
  model says "I guarantee it"
}
test failing {
  user "x"
  model says "hello"
  expect answer == "bye"
}
"""


@pytest.fixture
def env(tmp_path):
    spec = tmp_path / "desk.afp"
    spec.write_text(textwrap.dedent(SPEC))
    return spec, tmp_path / "runs.db"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def run(env, *extra):
    spec, db = env
    return cli("run", spec, "-m", "please", "--store", db, *extra)


def test_run_answered_exits_0_and_prints_the_answer(env):
    res = run(env, "--script", "small")
    assert res.exit_code == 0 and "refunded 5" in res.output


def test_run_json_is_machine_readable(env):
    res = run(env, "--script", "small", "--json")
    out = json.loads(res.output.strip().splitlines()[-1])
    assert out["outcome"] == "answered" and out["answer"] == "refunded 5" and out["run_id"]


def test_run_denied_exits_1(env):
    assert run(env, "--script", "promise").exit_code == 1


def test_run_paused_exits_3_then_resume_answers_once(env):
    spec, db = env
    res = run(env, "--script", "big", "--json")
    assert res.exit_code == 3
    out = json.loads(res.output.strip().splitlines()[-1])
    assert out["checkin"]["question"] == "needs a person"
    rid = out["run_id"]
    res2 = cli("resume", rid, "--approve", "--by", "maya", "--store", db)
    assert res2.exit_code == 0 and "refunded 500" in res2.output
    res3 = cli("resume", rid, "--approve", "--store", db)
    assert res3.exit_code == 1 and "Traceback" not in res3.output
    assert "nothing to resume" in res3.output


def test_resume_without_a_decision_is_a_usage_error(env):
    spec, db = env
    rid = json.loads(run(env, "--script", "big", "--json").output.strip().splitlines()[-1])["run_id"]
    res = cli("resume", rid, "--store", db)
    assert res.exit_code == 2 and "--approve or --decline" in res.output


def test_resume_decline(env):
    spec, db = env
    rid = json.loads(run(env, "--script", "big", "--json").output.strip().splitlines()[-1])["run_id"]
    res = cli("resume", rid, "--decline", "--note", "no", "--store", db, "--json")
    assert res.exit_code == 0



def test_resume_help_says_which_decision_the_model_reads_the_note_with():
    res = cli("resume", "--help")
    help_text = " ".join(res.output.split())
    assert res.exit_code == 0 and "with --decline the model reads it" in help_text


@pytest.mark.parametrize("flag, model_reads", [("--decline", "declined by human: my note"),
                                              ("--approve", "refunded")])
def test_resume_keeps_the_note_and_the_model_reads_it_only_on_a_decline(env, flag, model_reads):
    from afp_dsl.stores import sqlite
    spec, db = env
    out = run(env, "--script", "big", "--json").output.strip().splitlines()[-1]
    rid = json.loads(out)["run_id"]
    res = cli("resume", rid, flag, "--by", "maya", "--note", "my note", "--store", db)
    assert res.exit_code == 0
    events = list(sqlite(db).events(rid))
    (decided,) = [e.payload for e in events if e.kind == "checkin.decided"]
    assert decided["by"] == "maya" and decided["note"] == "my note"
    (returned,) = [e.payload for e in events if e.kind == "tool.returned"]
    assert model_reads in json.dumps(returned) and (flag == "--decline") == ("my note" in
                                                                          json.dumps(returned))

def test_run_error_exits_1(tmp_path):
    spec = tmp_path / "unbound.afp"
    spec.write_text('agent a { tools = [t] }\ntool t { description = "t" }\n')
    res = cli("run", spec, "-m", "x", "--store", tmp_path / "r.db", "--json")
    assert res.exit_code == 1
    assert "AFP501" in json.loads(res.output.strip().splitlines()[-1])["error"]


def test_bad_inputs_never_print_a_traceback(env, tmp_path):
    spec, db = env
    bad = tmp_path / "bad.afp"
    bad.write_text("agent { oops")
    for args, code in ((("run", tmp_path / "missing.afp", "-m", "x"), 1),
                       (("run", bad, "-m", "x", "--store", db), 1),
                       (("run", spec, "-m", "x", "--agent", "nope", "--store", db), 1),
                       (("run", spec, "-m", "x", "--script", "nope", "--store", db), 1),
                       (("run", spec, "-m", "x", "--provider", "nope", "--store", db), 2),
                       (("resume", "run-unknown", "--approve", "--store", db), 1)):
        res = cli(*args)
        assert res.exit_code == code, (args, res.output)
        assert "Traceback" not in res.output


def test_test_command_exit_codes_k_and_junit(env, tmp_path):
    spec, _ = env
    res = cli("test", spec, "-k", "small or promise")
    assert res.exit_code == 0 and "2 passed, 0 failed" in res.output
    xml = tmp_path / "j.xml"
    res = cli("test", spec, "--junit", xml)
    assert res.exit_code == 1 and "failing FAILED" in res.output
    assert "<testsuite" in xml.read_text()
    import xml.etree.ElementTree as ET
    root = ET.parse(xml).getroot()
    assert float(root.get("time")) >= 0
    assert all(float(case.get("time")) >= 0 for case in root.findall("testcase"))


INNER = """
agent outer { tools = [ask_inner] }
agent inner { tools = [leaf] }
tool ask_inner { description = "ask" input { q: string } impl = agent(inner) }
tool leaf { description = "leaf" input { x: integer } check_in = true }
test t1 {
  agent = outer
  user "go"
  model calls ask_inner { q: "go inner" }
  model calls leaf { x: 1 }
  approve
  tool leaf returns "leafed"
  model says "inner done"
  model says "outer done"
}
"""


def test_resuming_an_inner_agent_s_pause_from_the_cli_continues_where_it_stopped(tmp_path):
    """`afpc resume` replayed the script from the outer run's own count of model calls, so the
    inner agent was fed the outer's first reply again and paused again, at every resume; the
    paused inner run was stored as `finished`."""
    spec, db = tmp_path / "c.afp", str(tmp_path / "c.db")
    spec.write_text(INNER, encoding="utf-8")
    cli = CliRunner()
    ran = cli.invoke(main, ["run", str(spec), "--agent", "outer", "--script", "t1", "-m", "go",
                            "--store", db, "--json"])
    assert ran.exit_code == 3, ran.output
    run_id = json.loads(ran.output.strip().splitlines()[-1])["run_id"]
    rows = json.loads(cli.invoke(main, ["trace", "list", "--all", "--format", "json",
                                        "--store", db]).output)
    assert sorted((r["status"], r["outcome"]) for r in rows) == [("paused", "paused")] * 2
    done = cli.invoke(main, ["resume", run_id, "--approve", "--store", db, "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output.strip().splitlines()[-1])["answer"] == "outer done"


@pytest.mark.parametrize("message", ["", "   ", "\n\t"])
def test_a_blank_message_is_refused_before_anything_runs(env, message):
    spec, db = env
    res = cli("run", spec, "-m", message, "--store", db, "--script", "small")
    assert res.exit_code == 2
    assert "'-m' / '--message'" in res.output and "is empty" in res.output
    assert not db.exists()  # nothing ran, nothing was stored


@pytest.mark.parametrize("store", ["memory:", "sqlite://", ":memory:", "sqlite:///:memory:"])
def test_run_refuses_an_in_process_store_that_would_lose_the_run(env, store, monkeypatch):
    spec, _ = env
    res = cli("run", spec, "-m", "please", "--store", store, "--script", "big")
    assert res.exit_code == 1 and "private in-process store" in res.output, res.output
    assert "--store runs.db" in res.output and "resume with" not in res.output
    monkeypatch.setenv("AFP_STORE", store)
    res = cli("run", spec, "-m", "please", "--script", "big")
    assert res.exit_code == 1 and f"`AFP_STORE={store}`" in res.output, res.output


@pytest.mark.parametrize("field, value, said", [
    ("launch", "x", "malformed `launch`"),
    ("launch.model", "  ", "malformed `launch.model`"),
    ("launch.retries", "3", "malformed `launch.retries`"),
    ("agent", 3, "malformed `agent`"),
    ("spec", [1], "malformed `spec`"),
    ("state", None, "its `state` is NoneType"),
    ("state.llm_calls", [1], "`state.llm_calls` is list"),
    ("state.pending.index", 7, "`state.pending.index` is 7"),
    ("state.pending.calls", {}, "checkpoint is damaged"),
    ("state.pending.checkin", "x", "malformed `state.pending.checkin`"),
    ("version", None, "has version None"),
])
def test_resume_of_a_damaged_checkpoint_names_it_and_exits_1(env, field, value, said):
    """Before: `afpc resume` of an edited or corrupted checkpoint row was an internal error
    (exit 2: AttributeError, TypeError, IndexError or an uncaught CheckpointError)."""
    import sqlite3
    spec, db = env
    rid = json.loads(run(env, "--script", "big", "--json").output.strip().splitlines()[-1])["run_id"]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE checkpoints SET body=json_set(body, ?, json(?)) WHERE run_id=?",
                     (f"$.{field}", json.dumps(value), rid))
    res = cli("resume", rid, "--approve", "--store", db)
    assert res.exit_code == 1 and said in res.output, res.output
    assert "internal error" not in res.output


@pytest.mark.parametrize("option", ["--provider", "--fallback"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_provider_or_fallback_is_a_usage_error(env, option, value):
    """Before: `--fallback ""` (an unset shell variable) ran with no fallback, exit 0."""
    spec, db = env
    res = cli("run", spec, "-m", "please", "--store", db, "--script", "small", option, value)
    assert res.exit_code == 2 and f"'{option}': is empty; name a provider" in res.output, res.output
    assert not db.exists()


@pytest.mark.parametrize("args,said", [
    (("explain", "unknown-nam"), "did you mean `unknown-name`?"),
    (("explain", "AFP3040"), "did you mean `AFP304`?"),
    (("run", "{spec}", "-m", "x", "--agent", "dsk"), "no agent `dsk`; did you mean `desk`?"),
    (("run", "{spec}", "-m", "x", "--script", "smal"), "no test `smal` in the spec; did you mean `small`?"),
])
def test_a_misspelt_name_on_the_command_line_gets_did_you_mean(env, args, said):
    """Before: `afpc explain unknown-nam`, `--agent dsk` and `--script smal` listed the names (or
    the form of a code) but suggested none; the spec asks a "did you mean" for every unknown name."""
    spec, db = env
    args = tuple(str(spec) if a == "{spec}" else a for a in args)
    res = cli(*args, *(("--store", db) if args[0] == "run" else ()))
    assert res.exit_code == (2 if args[0] == "explain" else 1), res.output
    assert said in res.output and "Traceback" not in res.output


def test_script_of_a_conversation_says_only_one_message_runs(tmp_path):
    """`--script` of a test with two `user` lines ran the first and dropped the rest silently."""
    spec = tmp_path / "conv.afp"
    spec.write_text('agent a { }\ntest two_turns {\n  user "first"\n  model says "one"\n'
                    '  user "second"\n  model says "two"\n}\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["run", str(spec), "-m", "first", "--script", "two_turns",
                                    "--store", str(tmp_path / "runs.db")])
    assert res.exit_code == 0 and "one" in res.output
    assert "has 2 `user` lines; --script runs one message" in res.output


TWO_AGENTS = """
agent alpha { system = "A." tools = [ping] }
agent beta { system = "B." tools = [pong] }
tool ping { description = "Ping." impl = returns("p") }
tool pong { description = "Pong." check_in = true impl = returns("q") }
test beta_pongs {
  agent = beta
  user "hi"
  model calls pong {}
  model says "ponged"
}
"""


def _two(tmp_path):
    spec = tmp_path / "two.afp"
    spec.write_text(TWO_AGENTS)
    return spec, tmp_path / "runs.db"


def test_run_script_runs_the_agent_its_test_names(tmp_path):
    """tooling §2 `afpc run --script TEST`: the test's replies were written for its `agent`, so
    in a spec with several agents that agent runs without `--agent` (and a resume keeps it).
    Before: "the spec has several agents; pick one with --agent"."""
    spec, db = _two(tmp_path)
    res = cli("run", spec, "-m", "hi", "--script", "beta_pongs", "--store", db, "--json")
    assert res.exit_code == 3, res.output
    run_id = json.loads(res.output.strip().splitlines()[-1])["run_id"]
    res = cli("resume", run_id, "--approve", "--store", db, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["answer"] == "ponged"


def test_run_script_with_another_agent_runs_that_one_and_says_so(tmp_path):
    spec, db = _two(tmp_path)
    res = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--script", "beta_pongs",
                                                    "--agent", "alpha", "--store", str(db)])
    assert res.exit_code == 0, res.output  # (alpha has no `pong`: the model reads so, then answers)
    assert "test `beta_pongs` is written for agent `beta`; running `alpha`" in res.stderr


def test_run_without_script_still_needs_one_of_several_agents(tmp_path):
    spec, db = _two(tmp_path)
    res = cli("run", spec, "-m", "hi", "--store", db)
    assert res.exit_code == 1 and "--agent NAME" in res.output


def test_a_test_naming_an_imported_agent_runs_that_one_not_the_root_s_namesake(tmp_path):
    """language §8 `agent = lib.x`: the test runs the imported module's agent. Before: only the
    name was kept, and the root module's own `helper` ran instead."""
    (tmp_path / "lib.afp").write_text('agent helper { system = "LIB." tools = [libtool] }\n'
                                      'tool libtool { description = "L." impl = returns("lib") }\n')
    spec = tmp_path / "main.afp"
    spec.write_text('import "./lib.afp" as lib\nagent helper { system = "ROOT." }\n'
                    'test uses_lib {\n  agent = lib.helper\n  user "hi"\n  model calls libtool {}\n'
                    '  model says "ok"\n  expect called libtool 1\n}\n')
    res = cli("test", spec)
    assert res.exit_code == 0, res.output
    res = cli("run", spec, "-m", "hi", "--script", "uses_lib", "--store", tmp_path / "r.db", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["answer"] == "ok"
