"""Conformance of `afpc` and the Python API to tooling.md (the audit in docs: findings #1–#12).

Each test names the finding it pins: `why` walks check-ins, policy decisions and failing calls
back to their causes and renders the user message (#1); `why --skill` counts skills listed as
active (#2); bad RUN arguments are usage errors (#5); `why --event` errors go to stderr (#9);
`afpc test` progress and tally on stderr (#10); JUnit totals (#11); the internal-error message
names where to report (#12); typed public API (#7); the standard library from a zip (#6).
A later pass: the `github` format's properties are exactly `file`, `line`, `col`, `title`
(§3), and a compiled IR loads and runs without importing the parser (§2).
"""
from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import afp_dsl
from afp_dsl.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support" / "support.afp"

PICK = """agent a { system = "x" graph = g }
tool t { description = "t" impl = returns("ok") }
skill s1 { description = "1" tools = [t] }
skill s2 { description = "2" }
skill s3 { description = "3" }
graph g {
  entry s1
  route s1 -> s2
  route s1 -> s3 on t when result == "no"
}
test pick {
  user "hi"
  model calls t { }
  model calls read_skill { id: "s2" }
  model says "done"
  expect cursor s2
}
"""

ERR = """agent a { system = "hi" tools = [unbound] }
tool unbound { description = "no body" }
test err { user "x" model calls unbound { } }
"""


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _events(db: Path, run: str = "last") -> list[dict]:
    res = cli("trace", "export", run, "--format", "jsonl", "--store", db)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def _seq(events: list[dict], kind: str) -> int:
    return next(e["seq"] for e in events if e["kind"] == kind)


@pytest.fixture
def paused(tmp_path: Path) -> Path:
    """A support run paused on the refund check-in, stored in `runs.db`."""
    db = tmp_path / "runs.db"
    res = cli("run", SUPPORT, "--script", "declined_refund_is_not_issued", "-m",
              "Refund order CD-8 please", "--store", db)
    assert res.exit_code == 3, res.output
    return db


def _expanded_once(text: str) -> None:
    """Every event is expanded at most once (later mentions end in `(see above)`)."""
    ids = [m.group(1) for line in text.splitlines() if not line.rstrip().endswith("(see above)")
           for m in [re.match(r"\s*\[([^\]]+:\d+)\]", line)] if m and "evidence:" not in line]
    assert len(ids) == len(set(ids)), text


# ---------------------------------------------------------------- #1 why: causes of check-ins
def test_why_on_a_paused_run_shows_the_policy_the_call_and_the_reply(paused):
    res = cli("why", "last", "--store", paused)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "policy `refund_guard` decided ask" in out
    assert "model called `issue_refund`" in out
    assert "model replied" in out and "context of iteration 2" in out
    _expanded_once(out)


def test_why_event_on_a_checkin_and_a_policy_decision_shows_their_causes(paused):
    events = _events(paused)
    asked = cli("why", "last", "--event", _seq(events, "checkin.requested"), "--store", paused)
    assert asked.exit_code == 0, asked.output
    lines = asked.stdout.splitlines()
    assert "check-in" in lines[0] and len(lines) > 3
    assert any("model called `issue_refund`" in x for x in lines[1:])
    policy = cli("why", "last", "--event", _seq(events, "policy.decided"), "--store", paused)
    lines = policy.stdout.splitlines()
    assert "policy `refund_guard`" in lines[0]
    assert lines[1].strip() == "✓ args.amount > 100 — actual 300"  # (the values the rule read)
    assert lines[2].strip().startswith("[") and "model called `issue_refund`" in lines[2]
    assert any("model replied" in x for x in lines[3:])


def test_why_renders_the_run_start_as_the_user_message(paused):
    res = cli("why", "last", "--event", "1", "--store", paused)
    assert res.exit_code == 0, res.output
    assert "user message to `support`: Refund order CD-8 please" in res.stdout


def test_why_of_an_error_run_reaches_the_failing_call_and_its_reply(tmp_path):
    spec, db = tmp_path / "err.afp", tmp_path / "runs.db"
    spec.write_text(ERR)
    res = cli("run", spec, "--script", "err", "-m", "x", "--store", db)
    assert res.exit_code == 1, res.output
    out = cli("why", "last", "--store", db).stdout
    assert "model called `unbound`" in out
    assert "model replied (LLM call #1, iteration 1) calling `unbound`" in out
    _expanded_once(out)


def test_why_walk_survives_a_cycle_and_shows_each_event_once():
    from afp_dsl.trace import Event, Trace
    from afp_dsl.why import explain
    ev = [Event(1, "r:1", "run.started", 1, 1, ("r:3",), None, {"agent": "a", "message": "hi"}),
          Event(2, "r:2", "policy.decided", 1, 2, ("r:1", "r:3"), None, {"policy": "p"}),
          Event(3, "r:3", "checkin.requested", 1, 3, ("r:2", "r:1"), None, {"checkin": "c"})]
    text = explain(Trace("r", ev), "r:3")
    assert "user message to `a`: hi" in text
    _expanded_once(text)
    assert len(text.splitlines()) <= 5


# ---------------------------------------------------------------- #2 why --skill
def test_why_skill_counts_the_active_list_not_only_body_pieces(tmp_path):
    spec = tmp_path / "pick.afp"
    spec.write_text(PICK)
    program = afp_dsl.load(spec)
    result = program.agent(provider=afp_dsl.providers.mock(
        [[("t", {})], [("read_skill", {"id": "s2"})], "done"])).run("hi")
    for skill in ("s1", "s2"):
        text = result.why(skill=skill)
        first = text.splitlines()[0]
        assert f"`{skill}` was active" in first, text


FAR = """agent a { system = "x" graph = g }
tool t { description = "t" impl = returns("ok") }
skill s1 { description = "1" tools = [t] }
skill s2 { description = "2" }
skill s3 { description = "3" }
skill far { description = "f" }
skill gone { description = "g" }
graph g {
  entry s1
  route s1 -> s2 on t
  route s1 -> s3
  route s2 -> far
}
"""


def test_why_skill_does_not_say_the_trace_never_mentions_a_refused_or_superseded_pick():
    """A `read_skill` pick refused (unreachable, or not a skill it may name) or overridden by a
    route is in the trace: the answer lists it, so its headline must not claim the trace never
    mentions the skill."""
    result = afp_dsl.load(FAR).agent(provider=afp_dsl.providers.mock(
        [[("read_skill", {"id": "far"}), ("read_skill", {"id": "gone"})],
         [("t", {}), ("read_skill", {"id": "s3"})], "done"])).run("hi")
    for skill, listed in (("far", "read_skill `far` refused"),
                          ("gone", "arguments of `read_skill` rejected"),
                          ("s3", "a model pick of `s3` was superseded")):
        text = result.why(skill=skill)
        top = [line for line in text.splitlines() if re.match(r" {2,6}\S", line)]
        assert any(listed in line for line in top), text
        assert "never mentions" not in text.splitlines()[0], text
    assert "the trace never mentions `nowhere`" in result.why(skill="nowhere")


# ---------------------------------------------------------------- #5 non-UTF-8 RUN
@pytest.mark.parametrize("args", [["trace", "show", "run-\udcff"],
                                  ["trace", "export", "\udcff", "--format", "jsonl"],
                                  ["why", "\udcff"], ["why", "last", "--event", "\udcff"]])
def test_a_run_id_that_is_not_utf8_is_a_usage_error(paused, args):
    res = cli(*args, "--store", paused)
    assert res.exit_code == 2, res.output
    assert "not valid UTF-8" in res.stderr and "internal error" not in res.stderr


def test_graph_run_that_is_not_utf8_is_a_usage_error(paused):
    res = cli("graph", SUPPORT, "--run", "\udcff", "--store", paused)
    assert res.exit_code == 2 and "not valid UTF-8" in res.stderr, res.output


# ---------------------------------------------------------------- #9 why --event errors
def test_why_unknown_event_goes_to_stderr_and_an_empty_one_is_refused(paused):
    res = cli("why", "last", "--event", "999", "--store", paused)
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.startswith("afpc: ") and "no event `999`" in res.stderr
    empty = cli("why", "last", "--event", "", "--store", paused)
    assert empty.exit_code == 2 and "--event" in empty.stderr, empty.output


def test_why_an_empty_skill_is_refused(paused):
    """Before: `afpc why last --skill ""` exited 0 explaining that `` was not active."""
    for blank in ("", "  "):
        res = cli("why", "last", "--skill", blank, "--store", paused)
        assert res.exit_code == 2 and "--skill" in res.stderr and res.stdout == "", res.output
        assert "needs a skill name" in res.stderr


# ---------------------------------------------------------------- #10, #11 afpc test
def test_test_prints_results_on_stdout_and_tally_and_progress_on_stderr(tmp_path):
    a, b = tmp_path / "a.afp", tmp_path / "b.afp"
    a.write_text(PICK)
    b.write_text(PICK.replace("test pick", "test pick2"))
    res = cli("test", tmp_path)
    assert res.exit_code == 0, res.output
    assert "a.afp::pick PASSED" in res.stdout and "b.afp::pick2 PASSED" in res.stdout
    assert "2 passed, 0 failed" in res.stderr and "passed, 0 failed" not in res.stdout
    assert "[1/2]" in res.stderr and "[2/2]" in res.stderr
    single = cli("test", a)
    assert "[1/1]" not in single.stderr and "1 passed, 0 failed" in single.stderr


def test_junit_counts_a_file_that_does_not_load_as_a_test(tmp_path):
    bad, xml = tmp_path / "bad.afp", tmp_path / "j.xml"
    bad.write_text("agent { oops")
    res = cli("test", bad, "--junit", xml)
    assert res.exit_code == 1
    suite = re.search(r"<testsuite [^>]*>", xml.read_text()).group(0)
    assert 'tests="1"' in suite and 'errors="1"' in suite, suite


# ---------------------------------------------------------------- #12 internal error
def test_internal_error_names_where_to_report(monkeypatch):
    import importlib.metadata as md

    from afp_dsl import api

    class Meta:
        def get_all(self, key):
            return ["Homepage, https://example.org", "Issues, https://example.org/issues"]

    monkeypatch.setattr(api, "analyse_path", lambda p: 1 / 0)
    monkeypatch.setattr(md, "metadata", lambda name: Meta())
    res = cli("check", SUPPORT)
    assert res.exit_code == 2
    assert "https://example.org/issues" in res.stderr and "AFPC_DEBUG=1" in res.stderr
    monkeypatch.setattr(md, "metadata", lambda name: (_ for _ in ()).throw(md.PackageNotFoundError))
    res = cli("check", SUPPORT)
    assert res.exit_code == 2 and "bug report" in res.stderr
    assert "command line" in res.stderr and "spec files" in res.stderr


# ---------------------------------------------------------------- #7 typed public API
def test_public_api_is_typed_and_dir_lists_the_public_names():
    assert (Path(afp_dsl.__file__).parent / "py.typed").is_file()
    assert dir(afp_dsl) == sorted(afp_dsl.__all__)
    sig = inspect.signature(afp_dsl.Program.agent)
    for name in ("provider", "tools", "store", "effects", "model", "stubs", "spec"):
        assert sig.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert sig.return_annotation in ("Agent", afp_dsl.Agent)
    runner_sig = inspect.signature(afp_dsl.Agent.__init__)
    assert set(sig.parameters) - {"self"} == set(runner_sig.parameters) - {"self", "program"}


def test_py_typed_is_in_the_wheel(tmp_path):
    hatch = pytest.importorskip("hatchling.builders.wheel")
    builder = hatch.WheelBuilder(str(ROOT))
    wheel = next(iter(builder.build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "afp_dsl/py.typed" in names
    assert "afp_dsl/_data/stdlib/redact.afp" in names


# ---------------------------------------------------------------- #6 resources from a zip
def test_standard_library_imports_work_from_a_zip(tmp_path):
    pkg = tmp_path / "afp.zip"
    with zipfile.ZipFile(pkg, "w") as z:
        for f in (ROOT / "afp_dsl").rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(ROOT).as_posix())
        for folder in ("grammar", "stdlib"):
            for f in (ROOT / folder).rglob("*"):
                if f.is_file():
                    z.write(f, f"afp_dsl/_data/{f.relative_to(ROOT).as_posix()}")
    spec = tmp_path / "zstd.afp"
    spec.write_text('import "std/redact" as r\nagent a { system = "x" redact = [r.secrets] }\n')
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    code = ("import afp_dsl, sys; assert '.zip' in afp_dsl.__file__, afp_dsl.__file__; "
            "from afp_dsl.cli import main; main(['check', sys.argv[1]])")
    done = subprocess.run([sys.executable, "-c", code, str(spec)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "AFP107" not in done.stdout + done.stderr


# ---------------------------------------------------------------- #8 graph --run, every format
def test_graph_run_overlay_is_drawn_in_dot_and_json(paused):
    dot = cli("graph", SUPPORT, "--run", "last", "--store", paused, "--format", "dot")
    assert dot.exit_code == 0, dot.output
    assert '"n_triage" [label="triage", style="rounded,filled"' in dot.stdout
    assert re.search(r'"n_triage" -> "n_refunds" \[[^]]*color="#1e8e3e", penwidth=3', dot.stdout)
    doc = json.loads(cli("graph", SUPPORT, "--run", "last", "--store", paused,
                         "--format", "json").stdout)
    visited = {n["skill"] for n in doc["nodes"] if n["visited"]}
    assert visited == {"triage", "refunds"}
    taken = {(e["from"], e["to"]) for e in doc["edges"] if e["taken"]}
    assert ("n_triage", "n_refunds") in taken and (None, "n_triage") in taken
    assert all("refused" in e for e in doc["edges"])
    plain = json.loads(cli("graph", SUPPORT, "--format", "json").stdout)
    assert "visited" not in plain["nodes"][0] and "taken" not in plain["edges"][0]


def test_every_thinking_step_has_the_same_cost_keys():
    from afp_dsl.export import thinking_json
    import json
    program = afp_dsl.load('agent g { tools = [t] }\ntool t { description = "t" impl = returns("ok") }')
    agent = program.agent(provider=afp_dsl.providers.mock([[("t", {})], "done"]))
    steps = json.loads(thinking_json(agent.run("hi").trace))
    costs = [s["cost"] for s in _steps_of(steps)]
    assert costs and all(set(c) == {"ms", "tokens", "tokensIn", "tokensOut"} for c in costs)


def _steps_of(doc):
    """Every dict with a `cost` in a thinking export, however it nests them."""
    if isinstance(doc, dict):
        found = [doc] if "cost" in doc else []
        return found + [s for v in doc.values() for s in _steps_of(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _steps_of(v)]
    return []


def test_thinking_matches_the_original_on_headlines_retries_and_brain_modes():
    """An empty answer's headline is `Done`; a run retried after an error has one `answer`, at
    the end; a `return` says its `brainMode` (`act` for `read_skill`, else `reason`)."""
    from interp_support import call, make

    from afp_dsl.export import to_thinking
    spec = ('agent g { tools = [t] skills = [s] }\ntool t { description = "t" impl = returns("T") }\n'
            'skill s { description = "s" }')
    agent, prov = make(spec, [call("t"), call("read_skill", id="s"), "recovered"], fail_at=3)
    r = agent.run("hi")
    assert r.outcome == "error"
    prov.fail_at = None
    done = to_thinking(agent.resume(r.checkpoint).trace)
    kinds = [s["kind"] for s in done["steps"]]
    assert kinds.count("answer") == 1 and kinds[-1] == "answer" and len(done["at"]) == len(kinds)
    assert [s["brainMode"] for s in done["steps"] if s["kind"] == "return"] == ["reason", "act"]
    empty, _ = make("agent g { }", [""])
    (last,) = [s for s in to_thinking(empty.run("hi").trace)["steps"] if s["kind"] == "answer"]
    assert last["answer"]["headline"] == "Done"


# ---------------------------------------------------------------- §3 github, §2 compile
UNREACHABLE = """agent a { system = "x" graph = g }
tool t { description = "t" impl = returns("ok") }
skill s1 { description = "1" tools = [t] }
skill s2 { description = "2" tools = [t] }
graph g {
  entry s1
  route s2 -> s1 on t
}
"""


def test_github_annotation_has_exactly_file_line_col_title(tmp_path, monkeypatch):
    """tooling.md §3: `::error file=…,line=…,col=…,title=AFP201::message`, no other property
    (an `endLine`/`endColumn` between `col` and `title` broke that form)."""
    monkeypatch.chdir(tmp_path)
    Path("g.afp").write_text(UNREACHABLE, encoding="utf-8")
    res = cli("check", "g.afp", "--format", "github")
    assert res.exit_code == 0, res.output
    (line,) = res.stdout.splitlines()
    assert re.fullmatch(r"::warning file=g\.afp,line=7,col=9,title=AFP202::.+", line), line


def test_compiled_ir_loads_and_runs_without_importing_the_parser(tmp_path):
    """tooling.md §2: `afpc compile` writes IR "loadable without the parser"."""
    ir_path = tmp_path / "support.ir.json"
    res = cli("compile", SUPPORT, "-o", ir_path)
    assert res.exit_code == 0, res.output
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in ('afp_dsl.parser', 'afp_dsl.fastparse', 'afp_dsl.loader', 'lark'):\n"
        "            raise ImportError('the parser was imported: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import afp_dsl as afp\n"
        f"program = afp.load_ir({str(ir_path)!r})\n"
        "agent = program.agent('support', provider=afp.providers.mock())\n"
        "result = agent.run('Refund order AB-12')\n"
        "print(result.outcome, bool(result.why()))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["answered", "True"], done.stdout


def test_a_spec_path_naming_nothing_is_afp109_file_not_found(tmp_path):
    """tooling.md §3 names AFP109 file-not-found; AFP006 stays for what exists but is no spec."""
    import afp_dsl
    (d,) = afp_dsl.check(str(tmp_path / "missing.afp"))
    assert d.code == "AFP109" and d.is_error
    assert "no such file" in d.message
    (tmp_path / "bin.afp").write_bytes(b"\x00\x01")
    assert [x.code for x in afp_dsl.check(str(tmp_path / "bin.afp"))] == ["AFP006"]


def test_thinking_beats_carry_what_the_model_read_and_the_replys_text_on_every_call():
    """reference §10: `ask.brain` is the preceding reply's content (every call of the reply);
    `return.output` is what the tool gave the model (a pick's sentence for `read_skill`)."""
    import afp_dsl as afp
    from afp_dsl.export import thinking_json
    spec = ('agent g { skills = [sk] tools = [u] }\nskill sk { description = "S" body = "B" }\n'
            'tool u { description = "u" impl = returns({ok: true}) }')
    from afp_dsl.providers.base import Reply, ToolCall
    reply = Reply(text="Let me look.", tool_calls=(ToolCall("c1", "read_skill", {"id": "sk"}),
                                                   ToolCall("c2", "u", {})))
    r = afp.load(spec).agent(provider=afp.providers.mock([reply, "done"])).run("hi")
    steps = json.loads(thinking_json(r.trace))["steps"]
    asks = [s for s in steps if s["kind"] == "ask"]
    returns = [s for s in steps if s["kind"] == "return"]
    assert [a["brain"] for a in asks] == ["Let me look.", "Let me look."]
    assert returns[0]["output"] == {"value": "Skill 'sk' activated for the next iteration."}
    assert returns[1]["output"] == {"ok": True}
