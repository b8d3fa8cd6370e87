"""`afpc test` (tooling.md §2): run the `test` blocks of spec files or folders.

Role:       a thin click command over `testing` and `testing_report`; its clock (each test's
            wall time, for JUnit) is read here, never in `testing`.
Emits:      exit codes 0 all pass, 1 a failure or a file that does not load, 2 usage (also a
            `-k` that is malformed or selects no test, and a `--junit` that cannot be written).
            One line per test and the failures on stdout; the tally and the progress (a live
            line on a terminal, a line per file when several files go to a log) on stderr.
Invariants: prints only redacted text (answers as the trace recorded them).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

import click

from .cli_io import FilePath, refuse_input, echo, guarded, utf8_text, write_file


@click.command("test")
@click.argument("paths", nargs=-1, required=True)
@click.option("-k", "pattern", callback=utf8_text,
              help="Only tests whose `file::name` contains this, in any case (and/or/not, "
                   "parentheses).")
@click.option("--junit", "junit_file", type=FilePath(),
              help="Also write a JUnit XML report.")
@guarded
def test_(paths: tuple[str, ...], pattern: str | None, junit_file: str | None) -> None:
    """Run the `test` blocks of spec files or folders."""
    from .cli import collect_files
    from .testing import run_files
    from .testing_select import parse_pattern
    from .testing_report import junit, report, summary
    if pattern is not None:
        try:
            parse_pattern(pattern)
        except ValueError as exc:
            raise click.BadParameter(f"`{pattern}` is malformed: {exc}", param_hint="-k") from None
    files = [Path(f) for f in collect_files(paths, missing="keep")]  # (`run_files` takes a `str` for spec text)
    if junit_file == "-":  # (`-o -` is standard output; here the test lines already are)
        raise click.BadParameter("`-` would mix the XML with the test lines on standard output; "
                                 "name a file, e.g. `--junit afp-tests.xml`", param_hint="--junit")
    if junit_file and not os.path.isdir(os.path.dirname(os.path.abspath(junit_file))):
        raise click.BadParameter(f"cannot write `{junit_file}`: its folder does not exist; "
                                 f"create it, or name a file in a folder that does (checked "
                                 f"before the tests run)", param_hint="--junit")
    if junit_file:
        refuse_input(junit_file, files)  # (checked before the tests run, as the folder is)
    found: list[str] = []
    tty = _stderr_tty()
    seconds: dict[str, float] = {}
    read: list[str] = []  # (every module loaded: the report must not replace an imported one)
    results, problems = run_files(files, pattern, found=found, progress=_progress(tty, len(files)),
                                  clock=time.perf_counter, seconds=seconds, modules=read)
    if tty:
        click.echo("\r\x1b[K", err=True, nl=False)  # clear the live progress line
    if pattern is not None and not results and not problems:
        raise _no_match(pattern, found)
    text = report(results, problems, with_summary=False)
    if text:
        echo(text)
    click.echo(summary(results, problems), err=True)
    if junit_file:
        write_file(junit_file, junit(results, problems, seconds), reads=read)
    sys.exit(1 if problems or any(not r.passed for r in results) else 0)


def _stderr_tty() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _progress(tty: bool, n: int) -> Callable[[int, int, Path], None] | None:
    """Progress on standard error (tooling.md §2): one live line on a terminal; a line per file
    when several files run into a log; nothing for a single file into a log."""
    if not tty and n < 2:
        return None

    def show(i: int, total: int, f: Path) -> None:
        if tty:
            click.echo(f"\r\x1b[K[{i}/{total}] {f}", err=True, nl=False)
        else:
            click.echo(f"[{i}/{total}] {f}", err=True)
    return show


def _no_match(pattern: str, names: list[str]) -> click.BadParameter:
    """`-k` selected nothing: a usage error (a typo must not pass CI), with the closest names."""
    from .suggest import closest
    if not names:
        return click.BadParameter(f"`{pattern}` selects nothing: the files declare no test",
                                  param_hint="-k")
    close = closest(pattern, names)
    hint = f"did you mean `{close}`? " if close else ""
    shown = ", ".join(sorted(set(names))[:10]) + (", …" if len(set(names)) > 10 else "")
    return click.BadParameter(f"`{pattern}` selects none of the {len(names)} tests; {hint}"
                              f"tests: {shown}", param_hint="-k")
