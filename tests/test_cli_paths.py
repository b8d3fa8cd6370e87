"""`afpc` on paths it must not take quietly: an unreadable folder below a checked one, an empty
path or option value (an unset shell variable), a spec too large or not text given to `run`,
help or version text that cannot be written, and an output file that is one of the inputs.

Each case failed before its fix: the old behaviour is named in each docstring.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from afp_dsl.cli import main

AFPC = [sys.executable, "-m", "afp_dsl.cli"]
BAD = 'agent a {\n  system = "x"\n  tools = [nope]\n}\n'
GOOD = 'agent b {\n  system = "x"\n}\n'
TEST = 'agent c {\n  system = "x"\n}\ntest t {\n  user "hi"\n  model says "hello"\n}\n'


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _unreadable_cmd() -> list[str] | None:
    """A prefix that runs afpc unable to read a folder with mode 000: nothing as a plain user;
    as root, `setpriv` dropping the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
            "-dac_override,-dac_read_search"]


@pytest.fixture
def tree(tmp_path: Path):
    root = tmp_path / "tree"
    for sub in ("sub", ".hidden", "node_modules"):
        (root / sub).mkdir(parents=True)
        (root / sub / "bad.afp").write_text(BAD, encoding="utf-8")
    (root / "ok.afp").write_text(GOOD, encoding="utf-8")
    (root / "sub" / "t.afp").write_text(TEST, encoding="utf-8")
    yield root
    for sub in ("sub", ".hidden"):
        (root / sub).chmod(0o755)


@pytest.mark.parametrize("command", ["check", "test"])
def test_an_unreadable_folder_below_a_checked_one_is_an_error(tree: Path, command: str) -> None:
    """Before: `Path.rglob` skipped it, and `afpc check` said nothing and exited 0 (a CI gate
    passing without checking the specs inside). Hidden folders are not entered, so an
    unreadable one is no error."""
    prefix = _unreadable_cmd()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a folder unreadable")
    (tree / ".hidden").chmod(0)
    readable = subprocess.run(prefix + AFPC + [command, str(tree)], capture_output=True, text=True,
                              timeout=120)
    assert readable.returncode == 1  # bad.afp in sub/ is found (and not the hidden ones alone)
    (tree / "sub").chmod(0)
    proc = subprocess.run(prefix + AFPC + [command, str(tree)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"cannot read the folder `{tree / 'sub'}`: Permission denied" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_folder_walk_keeps_the_order_and_skips_hidden_folders(tree: Path) -> None:
    from afp_dsl.cli import collect_files
    (tree / "sub" / "z").mkdir()
    (tree / "sub" / "z" / "a.afp").write_text(GOOD, encoding="utf-8")
    (tree / "sub" / "fifo.afp").mkdir()  # a folder named like a spec is not a spec
    got = [os.path.relpath(p, tree) for p in collect_files([str(tree)])]
    assert got == ["ok.afp", "sub/bad.afp", "sub/t.afp", "sub/z/a.afp"]


@pytest.mark.parametrize("args", [["check", ""], ["test", ""], ["check", "x.afp", ""]])
def test_an_empty_path_is_a_usage_error_not_the_working_folder(tmp_path: Path, args, monkeypatch) -> None:
    """Before: `afpc check ''` checked every spec below the working folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.afp").write_text(GOOD, encoding="utf-8")
    res = cli(*args)
    assert res.exit_code == 2 and "an empty path was given" in res.output


@pytest.mark.parametrize("args, option", [
    (["graph", "{spec}", "-o", ""], "'-o' / '--output'"),
    (["compile", "{spec}", "-o", ""], "'-o' / '--output'"),
    (["check", "{spec}", "-o", ""], "'-o' / '--output-file'"),
    (["compile", ""], "'FILE'"),
    (["test", "{spec}", "--junit", ""], "'--junit'"),
    (["run", "{spec}", "-m", "hi", "--store", ""], "'--store'"),
    (["trace", "list", "--store", " "], "'--store'"),
    (["graph", "{spec}", "--run", "last", "--store", ""], "'--store'"),
])
def test_an_empty_option_value_is_a_usage_error(tmp_path: Path, args, option, monkeypatch) -> None:
    """Before: `-o ''` wrote to standard output, `--junit ''` wrote nothing, and `--store ''`
    used the default store, each without a word."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.afp"
    spec.write_text(TEST, encoding="utf-8")
    res = cli(*[a.format(spec=spec) for a in args])
    assert res.exit_code == 2, res.output
    assert f"Invalid value for {option}" in res.output and "empty" in res.output
    assert not (tmp_path / ".afp").exists()  # no default store was made


def test_run_of_a_spec_too_large_prints_the_reason_not_the_file(tmp_path: Path) -> None:
    """Before: the error's caret drawing re-read the whole 17 MB file onto stderr."""
    big = tmp_path / "big.afp"
    big.write_text("# " + "x" * (17 * 1024 * 1024) + "\n", encoding="utf-8")
    proc = subprocess.run(AFPC + ["run", str(big), "-m", "hi"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and len(proc.stderr) < 2000, len(proc.stderr)
    assert "specs are limited to 16 MiB" in proc.stderr and "has errors" in proc.stderr
    # one unit on both sides (before: "it is 17.8 MB; specs are limited to 16 MiB")
    assert "it is 17,825,795 bytes (17.0 MiB)" in proc.stderr, proc.stderr


def test_run_of_a_binary_file_draws_no_bytes_of_it(tmp_path: Path) -> None:
    """Before: its bytes were drawn under the caret as replacement characters."""
    binary = tmp_path / "bin.afp"
    binary.write_bytes(b"agent \xff\xfe\x80\x81 {\n" * 50)
    res = subprocess.run(AFPC + ["run", str(binary), "-m", "hi"], capture_output=True, timeout=120)
    err = res.stderr.decode("utf-8")
    assert res.returncode == 1 and "not UTF-8 text" in err
    assert "\ufffd" not in err and len(err) < 1000


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["check", "--help"], ["-h"]])
def test_help_and_version_that_cannot_be_written_are_an_error_not_a_traceback(args) -> None:
    """Before: an `OSError` traceback (click answers these eager options outside any command)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(AFPC + args, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "afpc: error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", [["check", "{spec}", "--format", "json"], ["compile", "{spec}"],
                                  ["graph", "{spec}"]])
def test_output_dash_is_standard_output(tmp_path, monkeypatch, args):
    """Before: `-o -` wrote a file named `-` in the working folder and printed nothing."""
    spec = tmp_path / "g.afp"
    spec.write_text('agent a { system = "x" graph = g }\nskill s { description = "s" }\n'
                    'graph g { entry s }\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = cli(*[a.format(spec=spec) for a in args], "-o", "-")
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() and not (tmp_path / "-").exists()


@pytest.mark.parametrize("args", [["check", "-"], ["compile", "-"], ["run", "-", "-m", "hi"],
                                  ["test", "-"]])
def test_a_spec_named_dash_says_standard_input_is_not_read(tmp_path, monkeypatch, args):
    """Before: `no such file: -`, which does not say that a spec must be saved to a file."""
    monkeypatch.chdir(tmp_path)
    res = cli(*args)
    assert res.exit_code == 2
    assert "does not read a spec from standard input" in res.stderr


def test_a_folder_s_broken_link_or_pipe_is_reported_not_skipped(tmp_path):
    """Before: `afpc check specs/` skipped a `*.afp` that was a symbolic link to nothing or a
    named pipe, and passed (exit 0) without checking it; given alone, the broken link was
    reported under its target's name."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ok.afp").write_text(GOOD, encoding="utf-8")
    (specs / "gone.afp").symlink_to(tmp_path / "moved.afp")
    os.mkfifo(specs / "pipe.afp")
    res = cli("check", specs, "--format", "json")
    assert res.exit_code == 1, res.output
    found = {(Path(d["file"]).name, d["code"]) for d in json.loads(res.stdout)}
    assert found == {("gone.afp", "AFP006"), ("pipe.afp", "AFP006")}
    gone = [d for d in json.loads(res.stdout) if Path(d["file"]).name == "gone.afp"][0]
    assert "symbolic link to" in gone["message"] and "does not exist" in gone["message"]


@pytest.mark.parametrize("args, victim", [
    (["check", "main.afp", "-o", "main.afp"], "main.afp"),
    (["check", "main.afp", "-o", "./common.afp"], "common.afp"),  # (an imported module)
    (["compile", "main.afp", "-o", "common.afp"], "common.afp"),
    (["graph", "main.afp", "-o", "link.afp"], "main.afp"),  # (the same file by another name)
    (["graph", "main.afp", "--run", "last", "--store", "runs.db", "-o", "runs.db"], "runs.db"),
    (["test", "main.afp", "--junit", "main.afp"], "main.afp"),
    (["test", "main.afp", "--junit", "common.afp"], "common.afp"),  # (known once it is loaded)
    (["trace", "export", "last", "--format", "jsonl", "--store", "runs.db", "-o", "runs.db"],
     "runs.db"),
])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, monkeypatch, args,
                                                                   victim):
    """Before: `-o`/`--junit` naming a file the command reads replaced it: the spec by its own
    (empty) report, IR or diagram, or the run store, and all its runs, by one run's export."""
    monkeypatch.chdir(tmp_path)
    Path("common.afp").write_text('fact f { data = "x" }\n', encoding="utf-8")
    Path("main.afp").write_text('import "./common.afp" as c\nagent a { system = "x" graph = g '
                                'context = [c.f] }\nskill s { description = "s" }\n'
                                'graph g { entry s }\ntest t { user "hi" model says "ok" }\n',
                                encoding="utf-8")
    Path("link.afp").symlink_to("main.afp")
    assert cli("run", "main.afp", "-m", "hi", "--store", "runs.db").exit_code == 0
    before = Path(victim).read_bytes()
    res = cli(*args)
    assert res.exit_code == 2, res.output
    assert "which this command reads, and writing there would destroy it" in res.stderr
    assert Path(victim).read_bytes() == before


@pytest.mark.parametrize("args", [("check",), ("test",), ("graph",), ("compile",), ("fmt",),
                                  ("fmt", "--check"), ("run", "-m", "hi")])
def test_a_spec_path_that_names_no_file_exits_1_not_2(tmp_path, args):
    """docs/cli.md's common rules: a spec path that names no file is reported as a spec with
    errors (exit 1); exit 2 is a usage error such as a missing argument. The page once listed "a
    missing file" among the usage errors (exit 2), which no command did."""
    res = cli(*args[:1], tmp_path / "nope.afp", *args[1:])
    assert res.exit_code == 1, (args, res.exit_code, res.output)
    assert cli(args[0]).exit_code == 2  # no path at all: a usage error


def test_the_common_rules_say_a_missing_spec_path_exits_1():
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    rules = " ".join(page.split("Common rules:", 1)[1].split("## ", 1)[0].split())
    assert "a missing file" not in rules
    assert "a spec path that names no file is not a usage error: it exits 1" in rules.lower()
    graph = " ".join((Path(__file__).resolve().parent.parent / "docs" / "graph.md")
                     .read_text(encoding="utf-8").split("## ", 1)[0].split())
    assert "a missing file" not in graph  # (graph.md listed it among its usage errors, exit 2)
    assert "a FILE that does not exist is one, `AFP109` file-not-found" in graph


def test_graph_exit_codes_are_the_ones_the_pages_give(tmp_path):
    """No graph at all is 1; several graphs and no `--graph` is a usage error, 2 (a choice the
    caller must make, as an unknown `--graph`). docs/cli.md's table said "1 ... no single graph"
    and docs/graph.md "1 ... it declares no graph or several"."""
    none = tmp_path / "none.afp"
    none.write_text(GOOD, encoding="utf-8")
    two = tmp_path / "two.afp"
    two.write_text('skill s { description = "s" }\ngraph g1 { entry s }\ngraph g2 { entry s }\n'
                   'agent a { graph = g1 }\n', encoding="utf-8")
    assert cli("graph", none).exit_code == 1
    assert cli("graph", two).exit_code == 2
    docs = Path(__file__).resolve().parent.parent / "docs"
    table = next(line for line in (docs / "cli.md").read_text(encoding="utf-8").splitlines()
                 if line.startswith("| [`afpc graph FILE`]"))
    assert "no single graph" not in table and "several graphs and no `--graph`" in table
    page = " ".join((docs / "graph.md").read_text(encoding="utf-8").split("## ", 1)[0].split())
    assert "no graph or several" not in page and "several graphs and no `--graph`" in page


def test_python_dash_m_afp_dsl_is_afpc(tmp_path):
    """`python -m afp_dsl` (the command line where the scripts folder is not on PATH) failed:
    the package had no `__main__`. It now behaves as `afpc`, its name included."""
    spec = tmp_path / "bad.afp"
    spec.write_text(BAD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "AFPC_OUTPUT_FORMAT"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-m", "afp_dsl", "check", "--format", "short", str(spec)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1 and "error[AFP101]" in run.stdout, run.stdout + run.stderr
    usage = subprocess.run([sys.executable, "-m", "afp_dsl", "check"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert usage.returncode == 2 and usage.stderr.startswith("Usage: afpc check"), usage.stderr
