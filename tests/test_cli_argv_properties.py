"""Any command line gets an answer: arbitrary `afpc` argument lists (every command, its options,
odd values, missing and extra arguments) end with a documented exit code and a message, never a
traceback. Runs in a folder holding a valid spec, a spec with errors and a store with one run.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from afp_dsl import cli

SPEC = """
agent desk {
  system = "Help."
  tools = [lookup]
  graph = flow
}
tool lookup { description = "Look up." input { id: string } }
skill triage { description = "Triage." tools = [lookup] }
skill done { description = "Done." }
graph flow {
  entry triage
  route triage -> done on lookup when result.status == "ok"
}
test t {
  agent = desk
  user "find A1"
  model calls lookup { id: "A1" }
  tool lookup returns { status: "ok" }
  model says "Found."
  expect called lookup 1
}
"""
COMMANDS = ["check", "compile", "run", "resume", "test", "graph", "why", "explain", "trace",
            "trace list", "trace show", "trace export", "--version", "--help", "nope"]
OPTIONS = ["--format", "--strict", "-o", "--output", "--output-file", "--explain-reach", "--agent",
           "-m", "--message", "--provider", "--model", "--retries", "--fallback", "--stream",
           "--script", "--store", "--json", "--approve", "--decline", "--by", "--note", "-k",
           "--junit", "--graph", "--run", "--event", "--skill", "--iteration", "--edge", "--all",
           "-h", "--", "-"]
VALUES = ["spec.afp", "bad.afp", "missing.afp", ".", "sub", "last", "desk", "triage", "done",
          "triage->done", "a->b", "->", "t", "text", "json", "sarif", "short", "github", "mermaid",
          "dot", "jsonl", "html", "otlp-json", "thinking", "mock", "mock:m", "openai", "nope:x", "0",
          "-1", "3", "99999999999999999999", "AFP101", "afp999", "", " ", "\x00", "é😀", "a" * 300,
          "sqlite:///runs.db", "postgresql://127.0.0.1:1/none", "runs.db", "out/x.json", "r-1",
          "run-unknown", "1", "not (t)"]
argv = st.lists(st.one_of(st.sampled_from(OPTIONS), st.sampled_from(VALUES),
                          st.text(max_size=12)), max_size=7)
value = st.one_of(st.sampled_from(VALUES), st.text(max_size=8))
FILES = ["spec.afp", "bad.afp", "sub", ".", "missing.afp"]
RUNS = ["last", "r-1", "run-unknown", ""]
# Each command with what it takes first and its own options (flags take no value): so most
# examples get past the parser into the command itself, with odd values.
SHAPES = {
    "check": (FILES, ["--format", "--strict", "-o", "--explain-reach"]),
    "compile": (FILES, ["-o"]),
    "run": (FILES, ["--agent", "-m", "--provider", "--model", "--retries", "--fallback", "--stream",
                    "--script", "--store", "--json"]),
    "resume": (RUNS, ["--approve", "--decline", "--by", "--note", "--store", "--json"]),
    "test": (FILES, ["-k", "--junit"]),
    "graph": (FILES, ["--graph", "--format", "-o", "--run", "--store"]),
    "why": (RUNS, ["--event", "--skill", "--iteration", "--edge", "--format", "--store"]),
    "explain": (["AFP101", "afp202", "AFP999", "x", ""], []),
    "trace show": (RUNS, ["--store"]),
    "trace list": ([], ["--all", "--format", "--store"]),
    "trace export": (RUNS, ["--format", "-o", "--store"]),
}
FLAGS = {"--strict", "--stream", "--json", "--approve", "--decline", "--all"}


@st.composite
def shaped(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(SHAPES)))
    firsts, options = SHAPES[command]
    out = command.split() + ([draw(st.sampled_from(firsts))] if firsts else [])
    for opt in draw(st.lists(st.sampled_from(options), max_size=4)) if options else []:
        out += [opt] if opt in FLAGS else [opt, draw(value)]
    if command == "run" and "-m" not in out and draw(st.booleans()):
        out += ["-m", draw(value)]
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("argv")
    (root / "spec.afp").write_text(SPEC, encoding="utf-8")
    (root / "bad.afp").write_text("agent a { tools = [missing] }\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "x.afp").write_text(SPEC.replace("desk", "desk2"), encoding="utf-8")
    old = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(cli.main, ["run", "spec.afp", "-m", "find A1", "--script", "t"])
        assert result.exit_code == 0, result.output  # the store holds one run for trace/why/graph
    finally:
        os.chdir(old)
    return root


@settings(max_examples=250, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), rest=argv)
@example(command="trace show", rest=["last", "--format", "json"])
@example(command="why", rest=["last", "--iteration", "99999999999999999999", "--skill", "triage"])
@example(command="graph", rest=["spec.afp", "--run", "run-unknown"])
@example(command="run", rest=["spec.afp", "-m", "x", "--store", "postgresql://127.0.0.1:1/none"])
@example(command="run", rest=["spec.afp", "-m", "\x00", "--retries", "-1"])
@example(command="check", rest=["-o", "sub", "spec.afp"])
@example(command="check", rest=["a" * 300])  # was an internal error (ENAMETOOLONG)
@example(command="check", rest=["a\x00b/c.afp"])  # was an internal error (a missing path, NUL)
@example(command="test", rest=["x\x00/y"])
@example(command="fmt", rest=["q\x00/r.afp"])
@example(command="graph", rest=["a" * 300 + ".afp"])
@example(command="test", rest=["a" * 300 + ".afp"])
@example(command="compile", rest=["a" * 300 + ".afp"])
def test_any_command_line_ends_with_a_documented_exit_code_and_no_traceback(folder, command, rest):
    _invoke_and_check(folder, command.split() + rest)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=shaped())
@example(args=["why", "last", "--iteration", "99999999999999999999", "--skill", "triage"])
@example(args=["trace", "export", "last", "--format", "thinking", "-o", "sub"])
@example(args=["resume", "last", "--approve", "--decline"])
@example(args=["run", "spec.afp", "-m", "x", "--fallback", "nope:x", "--retries", "99999999999999999999"])
@example(args=["compile", "spec.afp", "-o", "\x00"])  # was a ValueError out of click.Path
@example(args=["check", "spec.afp", "-o", "no/such/folder/report.txt"])  # was an internal error
@example(args=["test", "spec.afp", "--junit", "no/such/folder/junit.xml"])
@example(args=["trace", "show", "last", "--store", "\x00"])  # was an internal error (sqlite)
def test_each_command_with_odd_values_ends_with_a_documented_exit_code(folder, args):
    _invoke_and_check(folder, args)


def _invoke_and_check(folder: Path, args: list[str]) -> None:
    old = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(cli.main, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    command, rest = args[0], args[1:]
    out = result.output
    assert "Traceback" not in out and "internal error" not in out, out
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{command} {rest}: {result.exception!r}"
    assert result.exit_code in (0, 1, 2, 3), (command, rest, result.exit_code, out)
    if result.exit_code == 2:  # a usage error says what was wrong
        assert out.strip(), (command, rest)
    if "no/such/folder" in " ".join(rest):
        assert result.exit_code == 2 and "cannot write `no/such/folder/" in out, out


def test_a_path_the_system_refuses_is_named_with_the_reason(folder):
    """An OSError about a path (here ENAMETOOLONG) is the user's input, not a bug: one line that
    names the path (shortened) and the system's reason, exit code 2."""
    old = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(cli.main, ["check", "b" * 300], catch_exceptions=True)
    finally:
        os.chdir(old)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert "File name too long" in result.output and "b" * 50 + "…" in result.output
