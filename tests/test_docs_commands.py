"""The documentation's shell commands and Python blocks run, exit as the page says, and print
what the page shows.

Pages: docs/*.md, README.md and examples/README.md. Each page is replayed in document order in its own temporary
folder holding a copy of the repository's `examples/`, `docs/`, `stdlib/` and README.md:

* a ```afp or ```afp-error block whose info string names a file (```afp file=library.afp) is
  written to that file, so later commands of the page can use it;
* every command of a ```sh, ```bash, ```shell or ```console block (in ```console only the lines
  starting with `$ `; a trailing `\\` joins lines) is RUN with bash, with the installed `afpc` and
  `python` first on PATH, when it is one of:
    - `afpc check|test|graph|compile|explain|fmt ...`, `afpc --version`, `afpc --help`;
    - `afpc why|trace|resume ...` (they read the page's run store, e.g. `afpc why last`), once
      the installed `afpc` has that command;
    - `afpc run ...` without `--provider`/`--fallback`, or with the `mock` provider;
    - `python -c ...` and `python -m afp_dsl...`;
  (leading `VAR=value` assignments are allowed). It must exit 0, or the code a trailing comment
  `# exits N` announces.
* SKIPPED, by this rule: commands that need a real provider (`--provider`/`--fallback` other
  than `mock`: openai, anthropic, ollama, ...), anything that is not in the list above (`make`,
  `pip install`, `git`, `source`, `cd`, `export`, `ollama`, `python -m pytest`), commands
  holding a placeholder (`RUN`, `FILE`, `PATH`, `CODE`, `<...>` or `…`: a run id cannot be known
  in advance), and store commands (`why`, `trace`, `resume`) this build of `afpc` lacks.
* what a command prints (standard output and standard error, merged as on a terminal) must be
  what the page shows, when it shows it:
    - a ```text block whose info string says `output` (```text output) is the output of the
      shell command just before it on the page (the last command of the block before);
    - in a ```console block, the lines after a `$ ` command, up to the next `$ `, are its output;
  the comparison ignores trailing blanks, takes run ids (`run-` and 12 hex digits) as equal, and
  reads `…` as "any text" within a line, or "any lines" on a line of its own. Such a block must
  follow a command that runs: the output of a skipped command cannot be shown unchecked.
* ```python blocks of docs/embedding.md, docs/getting-started.md and README.md are executed as
  scripts in that folder (must exit 0), except blocks that build a real provider
  (`providers.openai(`, `providers.anthropic(`, `providers.ollama(`), which are skipped.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "examples" / "README.md"]
PYTHON_PAGES = {"docs/embedding.md", "docs/getting-started.md", "README.md"}
SHELLS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
AFPC_RUNNABLE = {"check", "test", "graph", "compile", "explain", "fmt", "run", "--version", "--help", "-h"}
AFPC_STORE_READERS = {"why", "trace", "resume"}
PLACEHOLDER = re.compile(r"\b(RUN|FILE|PATH|CODE)\b|<[^<>\s]+>|…")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")
REAL_PROVIDER = re.compile(r"providers\.(openai|anthropic|ollama)\(")
ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


@attrs.frozen
class Step:
    where: str          # page:line
    kind: str           # file | shell | python | output
    text: str
    name: str = ""      # file name for `file` steps
    expect: int = 0     # expected exit code for `shell` steps
    shows: str | None = None  # what a `shell` step prints (console blocks); `output`: in `text`


def _info(info: str) -> tuple[str, dict[str, str]]:
    words = info.strip().split()
    kind = words[0] if words else ""
    attrs_ = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return kind, attrs_


def _commands(kind: str, body: str) -> list[tuple[int, str, str | None]]:
    """(line offset in the block, command, what a console block shows it printing, or None)
    triples; continuation lines joined."""
    out: list[tuple[int, str, str | None]] = []
    shown: list[str] | None = None
    pending, start = "", 0
    for i, line in enumerate(body.splitlines()):
        if not pending:
            if kind == "console":
                if not line.startswith("$ "):
                    if shown is not None:
                        shown.append(line)
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = i
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        shown = [] if kind == "console" else None
        out.append((start, pending + line, shown))
        pending = ""
    return [(offset, cmd, "\n".join(lines) if lines else None) for offset, cmd, lines in out]


def steps(page: Path) -> list[Step]:
    rel = page.relative_to(ROOT).as_posix()
    text = page.read_text(encoding="utf-8")
    out: list[Step] = []
    for m in FENCE.finditer(text):
        kind, meta = _info(m.group(1))
        line = text.count("\n", 0, m.start()) + 1
        where = f"{rel}:{line}"
        if kind in ("afp", "afp-error") and "file" in meta:
            out.append(Step(where, "file", m.group(2), name=meta["file"]))
        elif kind in SHELLS:
            for offset, cmd, shows in _commands(kind, m.group(2)):
                found = EXITS.search(cmd)
                out.append(Step(f"{rel}:{line + 1 + offset}", "shell", cmd,
                                expect=int(found.group(1)) if found else 0, shows=shows))
        elif kind == "text" and "output" in m.group(1).split()[1:]:
            out.append(Step(where, "output", "", shows=m.group(2)))
        elif kind == "python" and rel in PYTHON_PAGES:
            out.append(Step(where, "python", m.group(2)))
    return out


def skip_reason(step: Step) -> str | None:
    """Why a step is not run (None: it runs). The rule of the module docstring."""
    if step.kind in ("file", "output"):
        return None
    if step.kind == "python":
        return "builds a real provider" if REAL_PROVIDER.search(step.text) else None
    cmd = EXITS.sub("", step.text).strip()
    if PLACEHOLDER.search(cmd):
        return "holds a placeholder"
    try:
        words = shlex.split(cmd, comments=True)
    except ValueError:
        return "not a simple command"
    while words and ENV_ASSIGN.match(words[0]):
        words = words[1:]
    if not words:
        return "no command"
    prog, rest = words[0], words[1:]
    if prog in ("python", "python3"):
        if rest[:1] == ["-c"] or (rest[:1] == ["-m"] and rest[1:2] and rest[1].startswith("afp_dsl")):
            return None
        return f"`{prog} {' '.join(rest[:2])}` is not run"
    if prog != "afpc":
        return f"`{prog}` is not run"
    if rest and rest[0] in AFPC_STORE_READERS:
        return None if rest[0] in _afpc_commands() else f"this `afpc` has no `{rest[0]}` command yet"
    if not rest or rest[0] not in AFPC_RUNNABLE:
        return f"`afpc {rest[0] if rest else ''}` is not run"
    for flag in ("--provider", "--fallback"):
        for i, w in enumerate(rest):
            value = rest[i + 1] if w == flag and i + 1 < len(rest) else \
                w.split("=", 1)[1] if w.startswith(flag + "=") else None
            if value is not None and value.split(":", 1)[0] != "mock":
                return f"needs a real provider ({value})"
    return None


def _afpc_commands() -> set[str]:
    """Every command of the installed `afpc`, the lazily loaded ones (`why`, `trace`, ...) too:
    `main.commands` holds those only once something has used them."""
    import click

    from afp_dsl.cli import main
    return set(main.list_commands(click.Context(main)))


def _workspace(tmp: Path) -> Path:
    for name in ("examples", "docs", "stdlib"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp / name,
                            ignore=shutil.ignore_patterns(".afp", "__pycache__", "node_modules"))
    shutil.copy(ROOT / "README.md", tmp / "README.md")
    return tmp


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AFP_STORE", "AFPC_OUTPUT_FORMAT")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    return env


def _afpc_installed() -> bool:
    return (Path(sys.executable).parent / "afpc").exists() or shutil.which("afpc") is not None


def _run(step: Step, cwd: Path, env: dict[str, str]) -> str | None:
    """Run one step; a failure message, or None."""
    return _execute(step, cwd, env)[0]


def _execute(step: Step, cwd: Path, env: dict[str, str]) -> tuple[str | None, str]:
    """Run one step: (a failure message or None, what it printed, both streams merged)."""
    if step.kind == "file":
        target = cwd / step.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text, encoding="utf-8")
        return None, ""
    if step.kind == "python":
        script = cwd / "_doc_block.py"
        script.write_text(step.text, encoding="utf-8")
        argv, expect, shown = [sys.executable, str(script)], 0, "python block"
    else:
        argv, expect, shown = ["bash", "-c", step.text], step.expect, step.text
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=180)
    if proc.returncode != expect:
        return (f"{step.where}: `{shown}` exited {proc.returncode}, the page implies {expect}\n"
                f"--- output\n{proc.stdout[-4000:]}"), proc.stdout
    if step.kind == "shell" and step.shows is not None:
        return _compare(step, step, proc.stdout), proc.stdout
    return None, proc.stdout


RUN_ID = re.compile(r"\brun-[0-9a-f]{12}\b")


def _lines(text: str) -> list[str]:
    return [RUN_ID.sub("run-\x00", line.rstrip()) for line in text.rstrip().splitlines()]


def shows_match(shown: str, printed: str) -> bool:
    """`printed` is what the page shows: line by line, trailing blanks and run ids aside; `…`
    is any text within a line, and any lines (none too) on a line of its own."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line.strip() == "…"
                      else ".*?".join(map(re.escape, line.split("…"))) + "\n"
                      for line in _lines(shown))
    return re.fullmatch(pattern, "".join(line + "\n" for line in _lines(printed))) is not None


def _compare(step: Step, command: Step, printed: str) -> str | None:
    if shows_match(step.shows or "", printed):
        return None
    return (f"{step.where}: the page shows, as what `{command.text}` prints:\n{step.shows}\n"
            f"--- but it printed\n{printed[-4000:]}")


def _command_before(page_steps: list[Step], index: int) -> Step | None:
    """The shell command an `output` step shows the output of: the one just before it."""
    for step in reversed(page_steps[:index]):
        if step.kind == "shell":
            return step
        if step.kind != "file":
            return None
    return None


ALL = {p.relative_to(ROOT).as_posix(): steps(p) for p in PAGES if p.is_file()}
WITH_STEPS = sorted(k for k, v in ALL.items() if any(skip_reason(s) is None and s.kind != "file" for s in v))


@pytest.mark.skipif(not _afpc_installed(), reason="the `afpc` command is not installed")
@pytest.mark.parametrize("page", WITH_STEPS)
def test_page_commands_run(page: str, tmp_path: Path):
    cwd, env = _workspace(tmp_path), _env()
    failures, printed = [], {}
    for i, step in enumerate(ALL[page]):
        if step.kind == "output":
            command = _command_before(ALL[page], i)
            problem = (_compare(step, command, printed[command.where]) if command and
                       command.where in printed else f"{step.where}: follows no command that ran")
        elif skip_reason(step) is None:
            problem, printed[step.where] = _execute(step, cwd, env)
        else:
            continue
        if problem:
            failures.append(problem)
    assert not failures, "\n\n".join(failures)


def test_shown_output_follows_a_command_that_runs():
    """Output a page shows must be checked: never after a skipped command (a placeholder, a real
    provider), whose output would stand unverified."""
    unchecked = []
    for page_steps in ALL.values():
        for i, step in enumerate(page_steps):
            command = _command_before(page_steps, i) if step.kind == "output" else \
                step if step.kind == "shell" and step.shows is not None else None
            if (step.kind == "output" and command is None) or \
                    (command is not None and skip_reason(command) is not None):
                unchecked.append(step.where)
    assert not unchecked, unchecked


def test_the_pages_show_checked_output():
    """The outputs verified so far stay verified: each page keeps its checked blocks."""
    counts = {page: sum(1 for s in page_steps if s.kind == "output" or s.shows is not None)
              for page, page_steps in ALL.items()}
    assert counts["docs/getting-started.md"] >= 3
    assert counts["docs/cli.md"] >= 1
    assert counts["docs/stores.md"] >= 2
    assert "examples/README.md" in WITH_STEPS


@pytest.mark.parametrize("shown,printed,same", [
    ("a\nb", "a\nb\n", True),
    ("a\nb", "a  \nb\n\n", True),                    # trailing blanks aside
    ("a\nb", "a\nc\n", False),
    ("a\nb", "a\n", False),                          # a missing line
    ("a", "a\nb\n", False),                          # an extra line
    ("run run-957f36c8914d: paused", "run run-0123456789ab: paused\n", True),
    ("run run-957f36c8914d: paused", "run run-0123: paused\n", False),
    ("x: …!", "x: anything at all!\n", True),
    ("x: …!", "x: anything\nat all!\n", False),     # `…` within a line stays in the line
    ("a\n…\nz", "a\nb\nc\nz\n", True),
    ("a\n…\nz", "a\nz\n", True),
    ("a\n…\nz", "a\nb\n", False),
])
def test_shows_match(shown: str, printed: str, same: bool):
    assert shows_match(shown, printed) is same


def test_console_blocks_and_output_blocks_are_read():
    [(_, cmd, shows)] = _commands("console", "$ afpc x   # exits 1\nafpc: no\n  more\n")
    assert cmd.startswith("afpc x") and shows == "afpc: no\n  more"
    [(_, _, none)] = _commands("console", "$ afpc x\n")
    assert none is None
    page = [Step("p:1", "shell", "afpc graph x.afp"), Step("p:5", "output", "", shows="flowchart TD")]
    assert _command_before(page, 1) is page[0]
    assert _command_before([Step("p:1", "python", "x"), page[1]], 1) is None


def test_a_wrong_output_is_reported(tmp_path: Path):
    step = Step("page.md:3", "shell", "echo one; echo two >&2", shows="one\ntwo")
    assert _execute(step, tmp_path, _env())[0] is None
    wrong = attrs.evolve(step, shows="one\nthree")
    problem = _execute(wrong, tmp_path, _env())[0]
    assert problem is not None and "page.md:3" in problem and "three" in problem


def test_the_getting_started_page_is_exercised():
    """The newcomer path must stay tested: its spec, commands and `why` block all run."""
    gs = ALL.get("docs/getting-started.md", [])
    run = [s for s in gs if skip_reason(s) is None]
    assert any(s.kind == "file" for s in run)
    assert any(s.kind == "python" and "why()" in s.text for s in run)
    shown = " ".join(s.text for s in run if s.kind == "shell")
    for cmd in ("afpc check", "afpc test", "afpc run", "afpc graph", "afpc explain"):
        assert cmd in shown, cmd


@pytest.mark.parametrize("cmd,runs", [
    ("afpc check examples/", True),
    ("afpc run x.afp -m hi --provider mock", True),
    ("afpc run x.afp -m hi --provider mock:any --script t", True),
    ("PYTHONPATH=examples/support afpc run x.afp -m hi", True),
    ("python -c 'import afp_dsl'", True),
    ("python -m afp_dsl.docgen diagnostics", True),
    ("afpc run x.afp -m hi --provider openai", False),
    ("afpc run x.afp -m hi --provider=anthropic:claude", False),
    ("afpc run x.afp -m hi --fallback ollama:llama3.2", False),
    ("afpc resume RUN --approve", False),
    ("afpc why RUN", False),
    ("afpc graph x.afp --run RUN", False),
    ("make demo", False),
    ("pip install -e .", False),
    ("python -m pytest -q", False),
])
def test_the_skip_rule(cmd: str, runs: bool):
    assert (skip_reason(Step("x", "shell", cmd)) is None) is runs


def test_store_commands_run_once_afpc_has_them():
    for name in ("why", "trace"):
        step = Step("x", "shell", f"afpc {name} last")
        assert (skip_reason(step) is None) is (name in _afpc_commands())


def test_lazily_loaded_commands_count_as_present():
    """`why`, `trace` and `resume` are loaded on first use; before this, `main.commands` lacked
    them in a fresh process, so every `afpc why`/`afpc trace` line of the docs was skipped."""
    import subprocess as sp
    code = ("import sys; sys.path.insert(0, 'tests'); import test_docs_commands as t; "
            "print(sorted({'why', 'trace', 'resume'} - t._afpc_commands()))")
    out = sp.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_exit_annotations_are_read():
    [(_, cmd, _)] = _commands("sh", "afpc check bad.afp   # exits 1\n")
    assert EXITS.search(cmd).group(1) == "1"
    [(_, joined, shows)] = _commands("console", "$ afpc check a \\\n  b\noutput line\n")
    assert joined.split() == ["afpc", "check", "a", "b"] and shows == "output line"


def test_a_wrong_exit_code_is_reported(tmp_path: Path):
    assert _run(Step("x", "shell", "exit 3", expect=3), tmp_path, _env()) is None
    problem = _run(Step("page.md:7", "shell", "exit 3"), tmp_path, _env())
    assert problem is not None and "page.md:7" in problem and "exited 3" in problem
