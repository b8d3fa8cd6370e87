"""`afpc resume` when the spec a paused run was started from moved, broke or changed: the run
stays paused and the message says what to do. Each case failed before its fix: the old
behaviour is named in each docstring.
"""
from __future__ import annotations

import json

from click.testing import CliRunner
from test_cli_run import env  # noqa: F401  (fixture)

from afp_dsl import stores
from afp_dsl.cli import main


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _paused(env) -> str:  # noqa: F811
    spec, db = env
    res = cli("run", spec, "-m", "please", "--store", db, "--script", "big", "--json")
    assert res.exit_code == 3, res.output
    return json.loads(res.output.strip().splitlines()[-1])["run_id"]


def _still_paused(db, run_id: str) -> None:
    store = stores.from_url(str(db), create=False)
    try:
        assert store.run(run_id)["outcome"] == "paused" and store.checkpoint(run_id) is not None
    finally:
        store.close()


def test_a_spec_moved_away_is_named_and_the_run_stays_paused(env):  # noqa: F811
    """Before: an AFP109 diagnostic suggesting another spec of the folder, then "… has errors;
    fix them before running"."""
    spec, db = env
    run_id = _paused(env)
    spec.rename(spec.with_name("moved.afp"))
    res = cli("resume", run_id, "--approve", "--store", db)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert f"was started from the spec `{spec}`, which is not there any more" in res.output
    assert "put it back at that path and resume again" in res.output
    assert "AFP109" not in res.output
    _still_paused(db, run_id)
    spec.with_name("moved.afp").rename(spec)
    assert cli("resume", run_id, "--approve", "--store", db).exit_code == 0


def test_a_spec_broken_since_the_pause_says_the_run_is_still_paused(env):  # noqa: F811
    """Before: "… has errors; fix them before running" (nothing said the run was kept)."""
    spec, db = env
    run_id = _paused(env)
    good = spec.read_text()
    spec.write_text(good + "\nagent\n")
    res = cli("resume", run_id, "--approve", "--store", db)
    assert res.exit_code == 1
    assert f"fix them before resuming run `{run_id}` (it is still paused" in res.output
    _still_paused(db, run_id)
    spec.write_text(good)
    assert cli("resume", run_id, "--approve", "--store", db).exit_code == 0


def test_a_spec_changed_since_the_pause_resumes_with_a_note(env):  # noqa: F811
    """Before: the run went on with the edited spec and said nothing."""
    spec, db = env
    run_id = _paused(env)
    assert "changed since run" not in cli("resume", _paused(env), "--approve", "--store",
                                          db).output  # (unchanged: no note)
    spec.write_text(spec.read_text() + "\n# edited after the pause\n")
    res = cli("resume", run_id, "--approve", "--store", db)
    assert res.exit_code == 0 and "refunded 500" in res.output
    assert f"the spec `{spec}` (or a module it imports) changed since run `{run_id}`" in res.output


def test_a_pause_says_who_asked_in_text_and_json_the_same_for_run_and_resume(env):  # noqa: F811
    """semantics §10: a check-in carries "the policy/rule or tool that asked". Before: the text
    output did not say who asked, and the JSON named the policy but not its rule."""
    spec, db = env
    res = cli("run", spec, "-m", "please", "--store", db, "--script", "big")
    assert res.exit_code == 3
    line = spec.read_text().splitlines().index(
        '  before refund { ask when args.amount > 100 because "needs a person" }') + 1
    assert f"  asked by policy `guard` at {spec}:{line}\n" in res.output
    js = cli("run", spec, "-m", "please", "--store", db, "--script", "big", "--json")
    checkin = json.loads(js.output.strip().splitlines()[-1])["checkin"]
    assert (checkin["source"], checkin["policy"], checkin["at"]) == ("policy", "guard",
                                                                     f"{spec}:{line}")
    run_id = json.loads(js.output.strip().splitlines()[-1])["run_id"]
    done = json.loads(cli("resume", run_id, "--approve", "--store", db, "--json").output
                      .strip().splitlines()[-1])
    assert set(done) == {"run_id", "outcome", "answer"} and done["run_id"] == run_id


def test_an_error_run_with_nothing_to_resume_repeats_its_error(env):  # noqa: F811
    """Before: only "it ended with an error before any iteration completed … `afpc run` the
    message again", which fails the same way when the cause is not fixed first."""
    spec, db = env
    store = stores.sqlite(db)
    store.save_run("run-failed", "desk", str(spec), "finished", "error", None,
                   {"error": "AFP501 tool `refund` is not bound: it has no `impl`"}, [])
    store.close()
    res = cli("resume", "run-failed", "--store", db)
    assert res.exit_code == 1
    assert "its error was: AFP501 tool `refund` is not bound: it has no `impl`; fix the cause" \
        in res.output


def test_resuming_an_inner_run_by_its_id_points_at_the_outer_run(tmp_path):
    """Before: "run `run-…/call-1-1` has nothing to resume: it ended (outcome `paused`), or it
    was already resumed", for an inner run that waits, inside its outer run, on a check-in."""
    from test_cli_run import INNER
    spec, db = tmp_path / "c.afp", tmp_path / "c.db"
    spec.write_text(INNER, encoding="utf-8")
    ran = cli("run", spec, "--agent", "outer", "--script", "t1", "-m", "go", "--store", db,
              "--json")
    outer = json.loads(ran.output.strip().splitlines()[-1])["run_id"]
    rows = json.loads(cli("trace", "list", "--all", "--format", "json", "--store", db).output)
    inner = next(r["run_id"] for r in rows if r["run_id"] != outer)
    res = cli("resume", inner, "--approve", "--store", db)
    assert res.exit_code == 1
    assert f"is an inner run (an agent-backed tool's) of run `{outer}`" in res.output
    assert f"`afpc resume {outer} --approve`" in res.output
    assert cli("resume", outer, "--approve", "--store", db).exit_code == 0


def test_the_api_resuming_an_inner_run_by_its_id_points_at_the_outer_run(tmp_path):
    """Before: "run `run-…/call-1-1` has no checkpoint to resume: it finished, or it was
    already resumed"."""
    import pytest

    import afp_dsl as afp
    from test_cli_run import INNER
    spec, db = tmp_path / "c.afp", tmp_path / "c.db"
    spec.write_text(INNER, encoding="utf-8")
    ran = cli("run", spec, "--agent", "outer", "--script", "t1", "-m", "go", "--store", db,
              "--json")
    outer = json.loads(ran.output.strip().splitlines()[-1])["run_id"]
    store = stores.sqlite(db)
    inner = next(r["run_id"] for r in store.runs() if r["run_id"] != outer)
    agent = afp.load(str(spec)).agent("inner", provider=afp.providers.mock([]), store=store)
    with pytest.raises(afp.ResumeDecisionError, match=f"inner run .* of run `{outer}`"):
        agent.resume(inner, afp.approve("x"))
    store.close()


def test_store_wins_over_afp_store_for_run_and_resume(env, monkeypatch, tmp_path):  # noqa: F811
    """tooling.md §5: `--store`, else `AFP_STORE`, else `.afp/runs.db`."""
    spec, db = env
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AFP_STORE", str(tmp_path / "env.db"))
    run_id = _paused(env)  # (`--store db`)
    assert not (tmp_path / "env.db").exists() and not (tmp_path / ".afp").exists()
    res = cli("resume", run_id, "--approve")  # (AFP_STORE: not the store that holds it)
    assert res.exit_code == 1 and f"no run store at `{tmp_path / 'env.db'}`" in res.output
    assert cli("resume", run_id, "--approve", "--store", db).exit_code == 0
    monkeypatch.delenv("AFP_STORE")
    res = cli("run", spec, "-m", "please", "--script", "small")
    assert res.exit_code == 0 and (tmp_path / ".afp" / "runs.db").is_file()


INNER_ASK = """
agent outer { tools = [ask_inner] }
agent inner { tools = [leaf] policies = [g] }
policy g { before leaf { ask when args.x > 0 because "a person looks first" } }
tool ask_inner { description = "ask" input { q: string } impl = agent(inner) }
tool leaf { description = "leaf" input { x: integer } }
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


def test_a_pause_inside_an_inner_run_names_the_inner_policy(tmp_path):
    """semantics §10 (who asked) for a pause inside an agent-backed tool's run: the inner
    policy is named (the check-in's source is `inner`). Before: the text said nobody."""
    spec = tmp_path / "c.afp"
    spec.write_text(INNER_ASK, encoding="utf-8")
    res = cli("run", spec, "--agent", "outer", "--script", "t1", "-m", "go", "--store",
              tmp_path / "c.db")
    assert res.exit_code == 3, res.output
    assert f"  asked by policy `g` (in an agent-backed tool's inner run) at {spec}:4\n" \
        in res.output


def test_options_of_a_decision_are_refused_for_a_run_that_waits_on_none(tmp_path):
    """A run ended by a provider failure after an iteration is retried with `afpc resume RUN`.
    Before: `--by`/`--note` without a decision were silently dropped."""
    spec = tmp_path / "e.afp"
    spec.write_text('agent a { tools = [t] }\n'
                    'tool t { description = "t" input { x: integer } impl = returns("ok") }\n'
                    'test short {\n  user "x"\n  model calls t { x: 1 }\n}\n', encoding="utf-8")
    db = tmp_path / "e.db"
    ran = cli("run", spec, "-m", "go", "--script", "short", "--store", db, "--json")
    out = json.loads(ran.output.strip().splitlines()[-1])
    assert ran.exit_code == 1 and out["outcome"] == "error"
    res = cli("resume", out["run_id"], "--note", "try again", "--store", db)
    assert res.exit_code == 1
    assert "is not waiting on a check-in" in res.output
    assert "resume it without --note: they go with a decision only" in res.output
    store = stores.sqlite(db)
    assert store.checkpoint(out["run_id"]) is not None  # (kept: still resumable)
    store.close()


def test_a_blank_script_name_says_it_is_blank(env):  # noqa: F811
    """Before: "no test `` in the spec; tests: …"."""
    spec, db = env
    res = cli("run", spec, "-m", "please", "--store", db, "--script", " ")
    assert res.exit_code == 1
    assert "the test name given to --script is blank; name one of the spec's tests (small, big" \
        in res.output


def test_an_agent_renamed_since_the_pause_is_named_and_the_run_stays_paused(env):  # noqa: F811
    """Before: only "no agent `desk`; agents: `front`", with no word of the paused run."""
    spec, db = env
    run_id = _paused(env)
    spec.write_text(spec.read_text().replace("agent desk {", "agent front {"))
    res = cli("resume", run_id, "--approve", "--store", db)
    assert res.exit_code == 1
    assert f"run `{run_id}` was started with agent `desk`, which the spec `{spec}` no longer " \
           f"declares" in res.output
    assert "it is still paused, nothing was decided" in res.output
    _still_paused(db, run_id)


def test_a_script_test_renamed_since_the_pause_is_named_and_the_run_stays_paused(env):  # noqa
    """Before: only "no test `big` in the spec; …", with no word of the paused run."""
    spec, db = env
    run_id = _paused(env)
    spec.write_text(spec.read_text().replace("test big {", "test large {"))
    res = cli("resume", run_id, "--approve", "--store", db)
    assert res.exit_code == 1
    assert f"run `{run_id}` replays the script of test `big`, which the spec `{spec}` no " \
           f"longer has" in res.output
    _still_paused(db, run_id)


def test_an_error_run_that_kept_its_state_says_how_to_retry_it(tmp_path):
    """semantics §10: a provider failure after a completed iteration leaves a resumable
    checkpoint. Before: the CLI printed the error only, so nothing said it could be resumed."""
    spec = tmp_path / "e.afp"
    spec.write_text('agent a { tools = [t] }\n'
                    'tool t { description = "t" input { x: integer } impl = returns("ok") }\n'
                    'test short {\n  user "x"\n  model calls t { x: 1 }\n}\n'
                    'test none {\n  user "x"\n}\n', encoding="utf-8")
    db = tmp_path / "e.db"
    res = cli("run", spec, "-m", "go", "--script", "short", "--store", db)
    run_id = res.output.strip().splitlines()[-1].split()[1].rstrip(":")
    assert res.exit_code == 1
    assert f"  the run kept its state: retry it with afpc resume {run_id}\n" in res.output
    first = cli("run", spec, "-m", "go", "--script", "none", "--store", db)
    assert first.exit_code == 1 and "retry it with" not in first.output  # (failed at call 1)


def test_a_spec_with_several_agents_needs_agent_and_nothing_is_made_without(tmp_path,
                                                                           monkeypatch):
    """Before: the message was right, but the default store `.afp/runs.db` was made first."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "two.afp"
    spec.write_text('agent front { system = "f" }\nagent back { system = "b" }\n')
    res = cli("run", spec, "-m", "hi")
    assert res.exit_code == 1
    assert "the spec has several agents; name one (`--agent NAME`" in res.output
    assert "agents: `front`, `back`" in res.output
    res = cli("run", spec, "-m", "hi", "--agent", "frnt")
    assert res.exit_code == 1 and "did you mean `front`?" in res.output
    assert not (tmp_path / ".afp").exists()
