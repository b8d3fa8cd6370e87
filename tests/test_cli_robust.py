"""`afpc` on broken input: conflicting flags, non-UTF-8 text, `-k` that selects nothing, failed
writes to standard output, special files (FIFO, devices, folders), `resume last`, empty models.

Each test failed before the fix it guards (robustness findings 4, 6, 8, 9 and 14): the old
behaviour is named in each docstring. Commands that could hang run in a subprocess with a
timeout, and the test asserts the process finished.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from afp_dsl import stores
from afp_dsl.cli import main
from afp_dsl.store import from_url

SPEC = """
agent desk { tools = [refund] policies = [guard] }
tool refund { description = "refund" input { amount: number } impl = returns("refunded") }
policy guard { before refund { ask when args.amount > 100 because "needs a person" } }
test small_refund {
  user "x"
  model calls refund { amount: 5 }
  model says "refunded 5"
}
test big_refund {
  user "x"
  model calls refund { amount: 500 }
  model says "refunded 500"
}
"""
AFPC = [sys.executable, "-m", "afp_dsl.cli"]
HANG_LIMIT = 60  # seconds; a hang is the failure, not slowness


@pytest.fixture
def env(tmp_path):
    spec = tmp_path / "desk.afp"
    spec.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    return spec, tmp_path / "runs.db"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def paused_run(env) -> str:
    spec, db = env
    res = cli("run", spec, "-m", "please", "--script", "big_refund", "--store", db, "--json")
    assert res.exit_code == 3, res.output
    return json.loads(res.output.strip().splitlines()[-1])["run_id"]


def afpc(*args, cwd: Path, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([*AFPC, *map(str, args)], cwd=cwd, stdout=stdout,
                              stderr=subprocess.PIPE, timeout=HANG_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"afpc {' '.join(map(str, args))} did not finish: it hangs")


# ---------------------------------------------------------------- finding 4
@pytest.mark.parametrize("order", [("--approve", "--decline"), ("--decline", "--approve")])
def test_approve_and_decline_together_are_refused_and_decide_nothing(env, order):
    """Before: accepted, the last flag won (exit 0, the check-in decided by flag order)."""
    _, db = env
    rid = paused_run(env)
    res = cli("resume", rid, *order, "--store", db)
    assert res.exit_code == 2, res.output
    assert "mutually exclusive" in res.output and "exactly one" in res.output
    again = cli("resume", rid, "--decline", "--store", db)  # the check-in is still open
    assert again.exit_code == 0, again.output


# ---------------------------------------------------------------- finding 6
@pytest.mark.parametrize("option", ["-m", "--agent", "--model", "--script", "--store",
                                    "--provider", "--fallback"])
def test_run_refuses_text_options_that_are_not_utf8_before_running(env, option):
    """Before: `-m $'\\xff'` (a lone surrogate in Python) ran and was stored; exporting the
    trace to a file then failed blaming the folder. The other text options likewise."""
    spec, db = env
    args = {"-m": "please", "--store": db}
    args[option] = "bad \udcff byte"
    flat = [x for k, v in args.items() for x in (k, v)]
    res = cli("run", spec, *flat)
    assert res.exit_code == 2, res.output
    assert "not valid UTF-8" in res.output and "iconv" in res.output
    assert not db.exists()  # nothing ran, nothing was stored


@pytest.mark.parametrize("option", ["--note", "--by"])
def test_resume_refuses_a_note_or_name_that_is_not_utf8(env, option):
    """Before: the surrogate reached the stored `checkin.decided` event."""
    _, db = env
    rid = paused_run(env)
    res = cli("resume", rid, "--approve", option, "\udcff", "--store", db)
    assert res.exit_code == 2 and "not valid UTF-8" in res.output, res.output
    assert cli("resume", rid, "--approve", "--store", db).exit_code == 0  # still pending


def test_a_raw_non_utf8_byte_on_the_command_line_is_refused(env, tmp_path):
    """The real shell case: the byte 0xff in argv (before: exit 0, stored)."""
    spec, db = env
    done = subprocess.run([*map(os.fsencode, AFPC), b"run", os.fsencode(spec), b"-m", b"\xff",
                           b"--store", os.fsencode(db)], cwd=tmp_path, capture_output=True,
                          timeout=HANG_LIMIT)
    assert done.returncode == 2, done.stderr
    assert b"not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr
    assert not db.exists()


# ---------------------------------------------------------------- finding 8
def test_k_that_selects_no_test_is_a_usage_error_naming_the_close_test(env):
    """Before: "no tests ran", exit 0 (a typo made CI green)."""
    spec, _ = env
    res = cli("test", spec, "-k", "smal_refund")
    assert res.exit_code == 2, res.output
    assert "selects none" in res.output and "did you mean `small_refund`" in res.output


@pytest.mark.parametrize("pattern, problem", [
    ("(", "`(` is not closed"), ("small and", "ends with `and`"), ("and or not", "needs a word"),
    ("small refund", "need `and` or `or`"), ("", "empty"), ("refund not big", "`not` after"),
    ("(small or big", "`(` is not closed"), ("small)", "`)` closes no `(`"),
    ("small and ()", "`()` holds no word"), ("small (big)", "need `and` or `or`"),
])
def test_malformed_k_is_a_usage_error_naming_the_problem(env, pattern, problem):
    """Before: exit 0 ("no tests ran", or tests run for an expression that made no sense)."""
    spec, _ = env
    res = cli("test", spec, "-k", pattern)
    assert res.exit_code == 2, res.output
    assert "malformed" in res.output and problem in res.output, res.output


@pytest.mark.parametrize("pattern, selected", [
    ("SMALL", ["small_refund"]), ("Small_Refund", ["small_refund"]),
    ("DESK.AFP::big", ["big_refund"]),
    ("(small or big) and not big", ["small_refund"]),
    ("not (small or big)", None), ("refund and (Big or nothing)", ["big_refund"]),
    ("((small))", ["small_refund"]), ("not not small", ["small_refund"]),
])
def test_k_is_pytests_case_insensitive_and_groups_with_parentheses(env, pattern, selected):
    """Before: `-k SMALL` selected nothing (exit 2, "selects none") and any parenthesis was
    refused as malformed; pytest users expect both to work."""
    spec, _ = env
    res = cli("test", spec, "-k", pattern)
    if selected is None:  # (a pattern that selects no test stays a usage error)
        assert res.exit_code == 2 and "selects none" in res.output, res.output
        return
    ran = [line.split("::")[1].split()[0] for line in res.stdout.splitlines()
           if line.endswith(("PASSED", "FAILED"))]
    assert ran == selected, res.output
    assert res.exit_code in (0, 1) and "malformed" not in res.output


# ---------------------------------------------------------------- finding 9
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("explain", "AFP101"), ("check", "desk.afp", "--format", "json")])
def test_a_full_standard_output_is_a_clear_error_not_a_bug(env, tmp_path, args):
    """Before: "internal error: OSError … this is a bug in afpc", exit 2."""
    with open("/dev/full", "w") as full:
        done = afpc(*args, cwd=tmp_path, stdout=full)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "cannot write to standard output: No space left on device" in err
    assert "internal error" not in err and "Traceback" not in err and "Exception" not in err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_run_whose_answer_cannot_be_printed_names_the_recorded_run(env, tmp_path):
    """Before: the run was stored, then "internal error … a bug", exit 2, no run id shown."""
    spec, db = env
    with open("/dev/full", "w") as full:
        done = afpc("run", spec, "-m", "please", "--script", "small_refund", "--store", db,
                    cwd=tmp_path, stdout=full)
    err = done.stderr.decode()
    assert done.returncode == 1 and "cannot write to standard output" in err, err
    assert "recorded in the store" in err and "internal error" not in err
    run_id = re.search(r"run (\S+): answered", err).group(1)
    assert from_url(str(db)).run(run_id) is not None


def test_a_closed_pipe_is_quiet(env, tmp_path):
    """`afpc ... | head` whose reader left. Before: "internal error: BrokenPipeError", exit 2."""
    proc = subprocess.Popen([*AFPC, "compile", "desk.afp"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # long before the interpreter starts and writes
    try:
        _, err = proc.communicate(timeout=HANG_LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("afpc compile with a closed standard output did not finish")
    assert proc.returncode == 141 and err == b"", err


# ---------------------------------------------------------------- finding 14: special files
@pytest.mark.parametrize("args", [("check", "/dev/zero"), ("compile", "/dev/zero"),
                                  ("graph", "/dev/urandom"), ("test", "/dev/zero")])
def test_devices_are_refused_without_reading_them(tmp_path, args):
    """Before: each one read the endless device and hung."""
    if not Path(args[1]).exists():
        pytest.skip(f"needs {args[1]}")
    done = afpc(*args, cwd=tmp_path)
    out = (done.stdout + done.stderr).decode()
    assert done.returncode == 1, out
    assert f"`{args[1]}`" in out and "a device, not a regular file" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_check_refuses_a_fifo_without_blocking_on_it(tmp_path):
    """Before: `afpc check fifo.afp` blocked forever opening the FIFO."""
    os.mkfifo(tmp_path / "fifo.afp")
    done = afpc("check", "fifo.afp", cwd=tmp_path)
    out = (done.stdout + done.stderr).decode()
    assert done.returncode == 1 and "`fifo.afp`" in out and "named pipe (FIFO)" in out, out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_run_gives_the_real_reason_for_a_folder_or_a_fifo(env, tmp_path):
    """Before: both were "no such spec file"."""
    _, db = env
    (tmp_path / "specs").mkdir()
    os.mkfifo(tmp_path / "pipe.afp")
    folder = cli("run", tmp_path / "specs", "-m", "x", "--store", db)
    assert folder.exit_code == 2 and "it is a folder" in folder.output, folder.output
    assert "no such" not in folder.output
    fifo = cli("run", tmp_path / "pipe.afp", "-m", "x", "--store", db)
    assert fifo.exit_code == 2 and "named pipe (FIFO)" in fifo.output, fifo.output
    assert "no such" not in fifo.output


# ---------------------------------------------------------------- finding 14: resume, models
def test_resume_last_says_it_needs_a_run_id_and_lists_the_paused_runs(env):
    """Before: "run `last` has nothing to resume (unknown run, …)", exit 1."""
    _, db = env
    rid = paused_run(env)
    res = cli("resume", "last", "--approve", "--store", db)
    assert res.exit_code == 2, res.output
    assert "does not accept `last`" in res.output and rid in res.output


def test_resume_of_a_run_without_a_checkpoint_says_which_case_it_is(env):
    """Before: every case said "(unknown run, finished, or already resumed)", also for a run
    left `running` by a process that was killed, which is none of the three."""
    _, db = env
    rid = paused_run(env)
    assert cli("resume", rid, "--approve", "--store", db).exit_code == 0
    store = stores.sqlite(db)
    store.save_run("run-killed", "desk", None, "running", None, None, {}, [])  # as kill -9 leaves
    store.save_run("run-failed", "desk", None, "finished", "error", None, {}, [])  # at call 1
    store.close()
    said = {r: cli("resume", r, "--store", db) for r in (rid, "run-killed", "nope", "run-failed")}
    assert all(res.exit_code == 1 for res in said.values())
    assert "it ended (outcome `answered`), or it was already resumed" in said[rid].output
    assert "still `running`" in said["run-killed"].output
    assert "before any iteration completed" in said["run-failed"].output
    assert "such a run cannot be resumed" in said["run-killed"].output
    assert f"the store `{db}` holds no such run (is it in another store?" in said["nope"].output


@pytest.mark.parametrize("option, value", [("--model", ""), ("--model", "  "),
                                           ("--provider", "mock:"), ("--fallback", "mock:"),
                                           ("--provider", ":"), ("--fallback", " :llama")])
def test_an_empty_model_or_provider_name_is_refused(env, option, value):
    """Before: accepted; the run went ahead with a blank model. And `--provider :` said "names no
    model after the `:`; write `` for the default model"."""
    spec, db = env
    res = cli("run", spec, "-m", "please", option, value, "--store", db)
    assert res.exit_code == 2, res.output
    said = ["names no provider"] if value.strip().startswith(":") else ["is empty", "names no model"]
    assert any(words in res.output for words in said), res.output
    assert "``" not in res.output and not db.exists()


def test_run_on_compiled_ir_points_to_load_ir(env, tmp_path):
    """Before: only a parse error at `{`, with no hint that IR is loaded with `load_ir`."""
    spec, db = env
    ir_file = tmp_path / "desk.ir.json"
    assert cli("compile", spec, "-o", ir_file).exit_code == 0
    res = cli("run", ir_file, "-m", "x", "--store", db)
    assert res.exit_code == 1 and "afp_dsl.load_ir" in res.output, res.output


def test_a_store_that_fails_during_a_run_is_an_error_not_a_bug(tmp_path) -> None:
    """A store damaged between runs (a table dropped) made `afpc run` print 'internal error …
    this is a bug in afpc' (exit 2): it is the store's message, exit 1."""
    import sqlite3
    spec = tmp_path / "desk.afp"
    spec.write_text(SPEC, encoding="utf-8")
    db = tmp_path / "r.db"
    args = ["run", str(spec), "-m", "hi", "--script", "small_refund", "--store", str(db)]
    assert CliRunner().invoke(main, args).exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE event_batches")
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 1, out.output
    assert "damaged" in out.output and "internal error" not in out.output


def test_graph_run_of_another_spec_is_named_not_drawn_silently(tmp_path) -> None:
    """`graph --run` with a run recorded for another spec drew the plain graph with no word:
    a warning names the skills the run went through (the graph of its own spec gets none)."""
    root = Path(__file__).resolve().parent.parent / "examples"
    db = str(tmp_path / "g.db")
    ran = CliRunner().invoke(main, ["run", str(root / "support" / "support.afp"), "-m",
                                    "Order AB-1 was charged twice", "--store", db])
    assert ran.exit_code == 0, ran.output
    other = CliRunner().invoke(main, ["graph", str(root / "incident_triage" / "incident_triage.afp"),
                                      "--run", "last", "--store", db])
    assert other.exit_code == 0 and "warning: run `run-" in other.output, other.output
    assert "this graph does not have" in other.output
    own = CliRunner().invoke(main, ["graph", str(root / "support" / "support.afp"), "--run",
                                    "last", "--store", db])
    assert own.exit_code == 0 and "warning" not in own.output, own.output


def test_why_edge_names_an_edge_the_spec_does_not_declare(tmp_path) -> None:
    """`why --edge A->B` for an edge the run's spec does not have only said it never fired: a
    warning says the spec declares no such edge and lists those that leave A."""
    spec = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
    db = str(tmp_path / "w.db")
    ran = CliRunner().invoke(main, ["run", str(spec), "-m", "Order AB-1 was charged twice",
                                    "--store", db])
    assert ran.exit_code == 0, ran.output
    out = CliRunner().invoke(main, ["why", "last", "--edge", "triage->nope", "--store", db])
    assert "declares no edge `triage -> nope`" in out.output, out.output
    assert "`triage -> refunds`" in out.output
    real = CliRunner().invoke(main, ["why", "last", "--edge", "triage->refunds", "--store", db])
    assert real.exit_code == 0 and "warning" not in real.output, real.output


def test_why_skill_names_a_skill_the_spec_does_not_declare(tmp_path) -> None:
    """Before: `why --skill refundz` said only that the trace never mentions it (with a guess
    among any names, an instruction too); now a warning says the spec declares no such skill."""
    spec = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
    db = str(tmp_path / "w.db")
    ran = CliRunner().invoke(main, ["run", str(spec), "-m", "Order AB-1 was charged twice",
                                    "--store", db])
    assert ran.exit_code == 0, ran.output
    out = CliRunner().invoke(main, ["why", "last", "--skill", "refundz", "--store", db])
    assert "or steering `refundz`; did you mean `refunds`?" in out.output, out.output
    far = CliRunner().invoke(main, ["why", "last", "--skill", "zzz", "--store", db])
    assert ("declares no skill, fact, instruction or steering `zzz`; declared: `escalation`, "
            "`refunds`, `tone`, `triage`, `urgent`, `user_profile`") in far.output, far.output
    for name in ("refunds", "urgent"):  # (`--skill` takes a fact or an instruction too)
        real = CliRunner().invoke(main, ["why", "last", "--skill", name, "--store", db])
        assert real.exit_code == 0 and "warning" not in real.output, real.output


def test_why_edge_warns_also_when_the_spec_has_no_route_at_all(tmp_path) -> None:
    spec = tmp_path / "two.afp"
    spec.write_text('agent b { graph = g }\nskill s1 { description = "one" }\n'
                    'graph g { entry s1 }\n')
    db = str(tmp_path / "w.db")
    ran = CliRunner().invoke(main, ["run", str(spec), "-m", "hi", "--store", db])
    assert ran.exit_code == 0, ran.output
    out = CliRunner().invoke(main, ["why", "last", "--edge", "s1->zz", "--store", db])
    assert "declares no edge `s1 -> zz`; no edge leaves `s1`" in out.output, out.output


def test_explain_reach_suggests_a_skill_and_refuses_an_empty_one(tmp_path) -> None:
    """`--explain-reach ''` was silently ignored and a misspelt skill got no suggestion."""
    spec = str(Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp")
    typo = CliRunner().invoke(main, ["check", spec, "--explain-reach", "refundz"])
    assert typo.exit_code == 2, typo.output  # (before: exit 0, "`refundz` is in no graph")
    assert "no skill `refundz` is declared in the checked files; did you mean `refunds`?" in (
        typo.output), typo.output
    open_skill = tmp_path / "open.afp"  # a skill that exists but is in no graph: reported, exit 0
    open_skill.write_text('agent a { skills = [s] }\nskill s { description = "d" }\n',
                          encoding="utf-8")
    none = CliRunner().invoke(main, ["check", str(open_skill), "--explain-reach", "s"])
    assert none.exit_code == 0 and "skill `s` is in no graph" in none.output, none.output
    empty = CliRunner().invoke(main, ["check", spec, "--explain-reach", " "])
    assert empty.exit_code == 2 and "needs a skill name" in empty.output, empty.output


def test_an_export_holding_a_lone_surrogate_is_written_escaped_with_a_warning(tmp_path) -> None:
    """A run whose tool returned text with a lone surrogate made `trace export -o` fail with
    'check the folder exists and is writable': the file is written, the surrogate escaped."""
    import afp_dsl as afp
    spec = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
    db = str(tmp_path / "s.db")
    agent = afp.load(str(spec)).agent(
        store=afp.stores.sqlite(db), provider=afp.providers.mock(
            [[("lookup_order", {"order_id": "AB-1"})], "done"]),
        tools={"lookup_order": lambda order_id: "note \udcff"})
    assert agent.run("Order AB-1 was charged twice").outcome == "answered"
    out_file = tmp_path / "t.jsonl"
    out = CliRunner().invoke(main, ["trace", "export", "last", "--format", "jsonl", "--store", db,
                                    "-o", str(out_file)])
    assert out.exit_code == 0 and "lone surrogate" in out.output, out.output
    lines = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert any("note \udcff" == e["payload"].get("result") for e in lines)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("args", [("check", "desk.afp", "-o", "out.fifo"),
                                  ("compile", "desk.afp", "-o", "out.fifo"),
                                  ("test", "desk.afp", "--junit", "out.fifo")])
def test_an_output_fifo_nobody_reads_is_refused_without_blocking(env, tmp_path, args):
    """Before: `-o` or `--junit` naming a named pipe with no reader blocked forever opening it."""
    os.mkfifo(tmp_path / "out.fifo")
    done = afpc(*args, cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "`out.fifo`" in err and "no process is reading it" in err and "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_an_output_fifo_with_a_reader_gets_the_whole_output(env, tmp_path):
    """A pipe that has its reader (as a shell's `>(...)` gives) is written as a file is (a guard:
    the non-blocking open must not refuse it)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        done = afpc("compile", "desk.afp", "-o", "out.fifo", cwd=tmp_path)
        got, _ = reader.communicate(timeout=HANG_LIMIT)
    finally:
        reader.kill()
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(got)["program"], got[:200]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_an_import_of_a_folder_or_a_fifo_says_what_it_is_not_that_it_is_missing(tmp_path):
    """Before: `import "pipe.afp"` naming a FIFO or a folder said "not found, no such file", and
    `import ""` said "cannot import ``: it is a folder" (the importing file's own folder)."""
    from afp_dsl.api import analyse
    os.mkfifo(tmp_path / "pipe.afp")
    (tmp_path / "dir.afp").mkdir()
    spec = tmp_path / "main.afp"
    spec.write_text('import "pipe.afp" as p\nimport "dir.afp" as d\nimport "gone.afp" as g\n'
                    'import "" as e\nagent a { system = "x" }\n', encoding="utf-8")
    found = {d.message for d in analyse(spec)[1] if d.code == "AFP107"}
    assert "cannot import `pipe.afp`: it is a named pipe (FIFO), not a regular file" in found
    assert "cannot import `dir.afp`: it is a folder" in found
    assert "imported module `gone.afp` not found" in found
    assert "the import path is empty" in found and len(found) == 4


def test_a_folder_check_reports_an_import_cycle_once(tmp_path) -> None:
    """Each file of the cycle, checked as a root, found it at its own import: one cause, two
    diagnostics. A second, different cycle is still reported."""
    (tmp_path / "x.afp").write_text('import "y.afp" as y\nagent a { }\n', encoding="utf-8")
    (tmp_path / "y.afp").write_text('import "x.afp" as x\nagent b { }\n', encoding="utf-8")
    (tmp_path / "p.afp").write_text('import "q.afp" as q\nagent c { }\n', encoding="utf-8")
    (tmp_path / "q.afp").write_text('import "p.afp" as p\nagent d { }\n', encoding="utf-8")
    out = CliRunner().invoke(main, ["check", "--format", "short", str(tmp_path)])
    assert out.exit_code == 1
    assert out.output.count("AFP108") == 2, out.output


def test_why_and_show_give_file_and_line_from_any_folder(tmp_path, monkeypatch):
    """A run records module keys relative to the folder it started in; from another folder the
    locations turned into character offsets (`support.afp@550`)."""
    root = Path(__file__).resolve().parent.parent
    db = str(tmp_path / "w.db")
    monkeypatch.chdir(root)
    ran = CliRunner().invoke(main, ["run", "examples/support/support.afp", "--script",
                                    "small_refund", "-m", "I was charged twice for order AB-12",
                                    "--store", db])
    assert ran.exit_code == 0, ran.output
    monkeypatch.chdir(tmp_path)
    for args in (["why", "last"], ["trace", "show", "last"]):
        out = CliRunner().invoke(main, args + ["--store", db]).output
        assert "support.afp:10)" in out and "support.afp@" not in out, out


# ---------------------------------------------------------------- robustness campaign 777001
@pytest.mark.parametrize("args", [("trace", "show", "last"), ("why", "last"),
                                  ("why", "last", "--format", "json"),
                                  ("trace", "export", "last", "--format", "jsonl"),
                                  ("trace", "export", "last", "--format", "thinking")])
def test_a_recorded_lone_surrogate_is_printed_escaped_with_a_warning(tmp_path, args) -> None:
    """A tool that returned text with a lone surrogate (`\\ud800`, which no UTF-8 output can
    carry) made `trace show`, `why` and `trace export` to standard output an "internal error":
    the text is printed with the surrogate as a `\\u` escape, and a warning says so."""
    import afp_dsl as afp
    spec = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
    db = str(tmp_path / "s.db")
    agent = afp.load(str(spec)).agent(
        store=afp.stores.sqlite(db), provider=afp.providers.mock(
            [[("lookup_order", {"order_id": "AB-1"})], "done"]),
        tools={"lookup_order": lambda order_id: "note \ud800"})
    assert agent.run("Order AB-1 was charged twice").outcome == "answered"
    out = CliRunner().invoke(main, [*args, "--store", db])
    assert out.exit_code == 0 and "internal error" not in out.output, out.output
    assert "lone surrogate" in out.output and "\\ud800" in out.output, out.output


def test_a_junit_file_in_a_missing_folder_is_refused_before_the_tests_run(tmp_path) -> None:
    """Before: every test ran, and only then did writing the report fail."""
    spec = str(Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp")
    out = CliRunner().invoke(main, ["test", spec, "--junit", str(tmp_path / "no" / "j.xml")])
    assert out.exit_code == 2 and "its folder does not exist" in out.output, out.output
    assert "passed" not in out.output and "PASSED" not in out.output, out.output


@pytest.mark.parametrize("value,code", [("bogus", 2), ("json", 0), ("", 0), ("  ", 0)])
def test_a_bad_afpc_output_format_names_the_variable(env, value, code):
    """Before: click read the variable and said "Invalid value for '--format'", an option the
    command line never held. An empty (unset shell) variable means the default."""
    spec, _ = env
    res = CliRunner().invoke(main, ["check", str(spec)], env={"AFPC_OUTPUT_FORMAT": value})
    assert res.exit_code == code, res.output
    if code == 2:
        assert "AFPC_OUTPUT_FORMAT is 'bogus'" in res.output and "--format" not in res.output
    elif value == "json":
        assert json.loads(res.stdout) == []


def test_the_format_option_wins_over_the_variable(env):
    spec, _ = env
    res = CliRunner().invoke(main, ["check", str(spec), "--format", "short"],
                             env={"AFPC_OUTPUT_FORMAT": "bogus"})
    assert res.exit_code == 0, res.output


def test_an_unknown_store_scheme_lists_every_form():
    with pytest.raises(stores.StoreError) as exc:
        from_url("redis://localhost/0")
    for form in ("sqlite:///path", "postgresql://", "memory:"):
        assert form in str(exc.value)


def test_junit_to_standard_output_is_refused_before_the_tests_run(env, tmp_path):
    """Before: `--junit -` wrote a file named `-` (while `-o -` is standard output)."""
    spec, _ = env
    res = CliRunner().invoke(main, ["test", str(spec), "--junit", "-"])
    assert res.exit_code == 2 and "name a file" in res.output and "PASSED" not in res.output


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_explain_reach_keeps_a_json_report_one_document(fmt: str) -> None:
    """tooling §2: `--format json` is machine output; the explanation goes to stderr then."""
    spec = str(Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp")
    res = CliRunner().invoke(main, ["check", spec, "--format", fmt, "--explain-reach", "refunds"])
    assert res.exit_code == 0, res.output
    json.loads(res.stdout)
    assert "is reached by" in res.stderr, res.stderr


def test_a_fault_inside_the_graph_drawing_is_an_internal_error(monkeypatch) -> None:
    """tooling §2: an internal error names the bug report to file and exits 2; only the choice
    of graph (none, several, no such name) is the user's error (exit 1)."""
    from afp_dsl import graph_export
    spec = str(Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp")

    def broken(*args, **kwargs):
        raise ValueError("a fault in the drawing")
    monkeypatch.setattr(graph_export, "mermaid_caption", broken)
    res = CliRunner().invoke(main, ["graph", spec])
    assert res.exit_code == 2, res.output
    assert "afpc: internal error: ValueError: a fault in the drawing" in res.stderr
    assert "please file a bug report at https://" in res.stderr
    none = CliRunner().invoke(main, ["graph", spec, "--graph", "nope"])
    assert none.exit_code == 2 and "internal error" not in none.output, none.output


def test_graph_with_several_graphs_and_none_chosen_is_a_usage_error(tmp_path):
    """Exit 2, as for an unknown `--graph` (both are the caller's choice); no graph at all is 1."""
    from click.testing import CliRunner
    from afp_dsl.cli import main
    spec = tmp_path / "two.afp"
    spec.write_text('agent a { graph = g1 }\nagent b { graph = g2 }\nskill s { description = "s" }\n'
                    'graph g1 { entry s }\ngraph g2 { entry s }\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["graph", str(spec)])
    assert r.exit_code == 2 and "several graphs" in r.output and "--graph NAME" in r.output
    assert CliRunner().invoke(main, ["graph", str(spec), "--graph", "g3"]).exit_code == 2
    assert CliRunner().invoke(main, ["graph", str(spec), "--graph", "g1"]).exit_code == 0


def test_graph_run_of_an_agent_the_spec_lacks_or_without_a_graph_says_so(tmp_path) -> None:
    """`graph --run` with a run of an agent that went through no skill (one another spec
    declares, or one with no graph) drew the plain graph with no word: a warning names the
    agent and why no path is drawn; the diagram is still drawn (exit 0)."""
    root = Path(__file__).resolve().parent.parent / "examples"
    db = str(tmp_path / "g.db")
    ran = CliRunner().invoke(main, ["run", str(root / "due_diligence" / "due_diligence.afp"),
                                    "--agent", "analyst", "-m", "Share price of NWND?",
                                    "--script", "price_only_needs_no_inner_run", "--store", db])
    assert ran.exit_code == 0, ran.output
    other = CliRunner().invoke(main, ["graph", str(root / "support" / "support.afp"),
                                      "--run", "last", "--store", db])
    assert other.exit_code == 0 and other.stdout.startswith("flowchart TD"), other.output
    assert "is a run of agent `analyst`, which this spec does not declare (its agents: " \
           "`support`)" in other.stderr
    spec = tmp_path / "two.afp"
    spec.write_text('agent a { system = "a" graph = g }\nagent b { system = "b" }\n'
                    'skill s { description = "s" }\ngraph g { entry s }\n', encoding="utf-8")
    ran = CliRunner().invoke(main, ["run", str(spec), "--agent", "b", "-m", "hi", "--store", db])
    assert ran.exit_code == 0, ran.output
    drawn = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--store", db])
    assert drawn.exit_code == 0 and "agent `b`, which has no graph, so no path" in drawn.stderr
    ran = CliRunner().invoke(main, ["run", str(spec), "--agent", "a", "-m", "hi", "--store", db])
    own = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--store", db])
    assert own.exit_code == 0 and "warning" not in own.stderr, own.stderr


def test_graph_run_draws_the_graph_of_the_agent_that_ran(tmp_path) -> None:
    """A spec with several graphs: `graph FILE --run RUN` was a usage error (`pass --graph`)
    although the run says which agent ran; it draws that agent's graph, as the HTML report does.
    `--graph` still picks another one (with the warning that the run is not on it)."""
    spec = tmp_path / "two.afp"
    spec.write_text('agent a { system = "a" graph = ga }\nagent b { system = "b" graph = gb }\n'
                    'skill s { description = "s" }\nskill t { description = "t" }\n'
                    'graph ga { entry s }\ngraph gb { entry t }\n', encoding="utf-8")
    db = str(tmp_path / "two.db")
    ran = CliRunner().invoke(main, ["run", str(spec), "--agent", "b", "-m", "hi", "--store", db])
    assert ran.exit_code == 0, ran.output
    drawn = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--store", db])
    assert drawn.exit_code == 0, drawn.output
    assert 'n_t["t"]' in drawn.stdout and "class n_t visited" in drawn.stdout
    assert 'n_s["s"]' not in drawn.stdout and not drawn.stderr
    other = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--graph", "ga",
                                      "--store", db])
    assert other.exit_code == 0 and 'n_s["s"]' in other.stdout
    assert "which this graph does not have" in other.stderr
    plain = CliRunner().invoke(main, ["graph", str(spec)])
    assert plain.exit_code == 2 and "several graphs" in plain.output
