"""The `afpc` command line: a thin click layer over the API; the only module that prints or exits.

Role:       parses arguments, calls `api`/`render`, maps results to exit codes
            (0 clean, 1 findings or failure, 2 usage or internal error, 3 paused runs).
Invariants: no traceback ever reaches the user: internal errors print one line (the traceback
            only with AFPC_DEBUG=1) and exit 2; a failed write to standard output is one line
            and exit 1 (a closed pipe, `| head`, is quiet: exit 141, as for SIGPIPE).
"""
from __future__ import annotations

import errno
import functools
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable

import click

from . import __version__
from .diagnostics import Diagnostic, Severity, sorted_diagnostics
from .render import FORMATS, explain, render, unknown_code

if TYPE_CHECKING:
    from pathlib import Path

class CliError(Exception):
    """Bad input met by a command: one line on stderr, exit 1 (or `code`, 2 for usage)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class FilePath(click.Path):
    """`click.Path` for files, which answers a path it cannot even look at (a NUL byte in it,
    a name too long) with a usage error instead of crashing in `os.stat`."""

    def __init__(self, writable: bool = False):
        super().__init__(dir_okay=False, writable=writable)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "":  # (an unset shell variable, most likely: never "standard output")
            self.fail("is empty; name a file", param, ctx)
        try:
            return super().convert(value, param, ctx)
        except (ValueError, OSError) as exc:
            self.fail(f"{value!r} is not a usable file path ({exc})", param, ctx)


def write_file(path: str, text: str) -> None:
    """Write a report or an export; a path that cannot be written is a usage error naming it."""
    try:
        try:
            _write(path, text, "strict")
        except UnicodeEncodeError:  # a lone surrogate (recorded by an older afp): kept, escaped
            _write(path, text, "backslashreplace")
            click.echo(f"afpc: warning: `{path}`: text that is not valid Unicode (a lone "
                       f"surrogate) was written as a `\\u` escape", err=True)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a named pipe that nobody reads: opening it would block
            raise CliError(f"cannot write `{path}`: it is a named pipe and no process is reading "
                           f"it; start the reader first, or write to a regular file", code=2) from None
        raise CliError(f"cannot write `{path}`: {exc.strerror or exc}; check the folder exists "
                       f"and is writable", code=2) from None
    except ValueError as exc:
        raise CliError(f"cannot write `{path}`: {exc}; check the folder exists and is "
                       f"writable", code=2) from None


def _write(path: str, text: str, errors: str) -> None:
    """`Path.write_text`, except that the file is opened without blocking: a named pipe with no
    reader fails at once (ENXIO) instead of waiting forever; a pipe that has its reader (a
    shell's `>(...)`), a terminal, `/dev/null` or a regular file is written as usual."""
    data = text.encode("utf-8", errors)  # (before opening: an encoding error truncates nothing)
    nonblock = getattr(os, "O_NONBLOCK", 0)  # (POSIX; elsewhere a plain open)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nonblock, 0o666)
    with open(fd, "wb") as out:
        if nonblock:
            os.set_blocking(fd, True)
        out.write(data)


def guarded(fn: Callable) -> Callable:
    """`CliError` → one line and its exit code; any unexpected exception → a one-line internal
    error and exit code 2 (never a traceback unless AFPC_DEBUG is set)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except CliError as e:
            click.echo(f"afpc: error: {e}", err=True)
            sys.exit(e.code)
        except OSError as e:
            if not _from_stdout(e):
                if e.filename is not None:  # a path the command was given (or derived) failed
                    click.echo(f"afpc: error: cannot use {_shown_path(e.filename)}: "
                               f"{e.strerror or e}", err=True)
                    sys.exit(2)
                _internal_error(e)
            _drop_stdout()
            if isinstance(e, BrokenPipeError):  # `afpc ... | head`: the reader left; stay quiet
                sys.exit(141)
            click.echo(f"afpc: error: cannot write to standard output: {e.strerror or e}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("afpc: interrupted", err=True)
            sys.exit(130)
        except RecursionError:
            click.echo("afpc: error: the input is nested too deeply to process", err=True)
            sys.exit(2)
        except Exception as e:  # noqa: BLE001 - the CLI boundary
            if _store_error(e):  # a store that fails or is damaged: its message names the fix
                click.echo(f"afpc: error: {e}", err=True)
                sys.exit(1)
            _internal_error(e)
    return wrapper


def _shown_path(name: Any) -> str:
    """A path for an error line: quoted, control characters escaped, at most 120 characters."""
    text = os.fsdecode(name) if isinstance(name, (str, bytes)) else str(name)
    text = text if len(text) <= 120 else text[:60] + "…" + text[-59:]
    return repr(text) if not text.isprintable() else f"`{text}`"


def _store_error(e: Exception) -> bool:
    """Whether `e` is the run store's error (looked up only if a store was loaded: importing
    the store module here would slow every `afpc check`)."""
    store = sys.modules.get("afp_dsl.store")
    return store is not None and isinstance(e, store.StoreError)


def _internal_error(e: Exception) -> None:
    if os.environ.get("AFPC_DEBUG"):
        import traceback  # (only here: every command would pay for its import)
        traceback.print_exception(e)
    tracker = bug_tracker()
    where = f"at {tracker}" if tracker else "to the afpc maintainers"
    click.echo(f"afpc: internal error: {type(e).__name__}: {e}\n"
               f"this is a bug in afpc {__version__}; please file a bug report {where} with the "
               f"command line, the spec files it read, and the traceback AFPC_DEBUG=1 prints",
               err=True)
    sys.exit(2)


_TRACKER_LABELS = ("issues", "bug tracker", "bugs", "tracker", "issue tracker")


def bug_tracker() -> str | None:
    """The issue tracker URL of the installed package's metadata (pyproject `[project.urls]`,
    label `Issues` or `Bug Tracker`), or None (not installed, or no such URL)."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata
        urls = metadata("afp-dsl").get_all("Project-URL") or []
    except (ImportError, PackageNotFoundError, OSError, ValueError):
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in _TRACKER_LABELS and url.strip():
            return url.strip()
    return None


def _from_stdout(exc: BaseException) -> bool:
    """Whether `exc` was raised writing standard output: every command prints through
    `click.echo`, so the failing write is an `echo` frame without `err=True`."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is click.echo.__code__ and not frame.f_locals.get("err"):
            return True
        tb = tb.tb_next
    return False


def _drop_stdout() -> None:
    """Point standard output at the null device, so the interpreter's final flush of what could
    not be written does not fail again (with a traceback-like "Exception ignored" line)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (a test runner's buffer)
        pass


def utf8_text(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Option callback: refuse text that is not valid UTF-8 (bytes the shell passed through, which
    Python keeps as lone surrogates) before anything runs or is stored."""
    for text in value if isinstance(value, tuple) else (value,):
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                raise click.BadParameter(
                    f"is not valid UTF-8 text (a stray byte at character {e.start + 1}); pass UTF-8 "
                    f"text, e.g. convert it with `iconv -t UTF-8` or fix the terminal's encoding",
                    ctx, param) from None
    return value


def store_text(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """`--store` callback: UTF-8 and not empty (an empty value, most likely an unset shell
    variable, would otherwise fall back to the default store without a word)."""
    value = utf8_text(ctx, param, value)
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; name a store (a file path, `sqlite:///PATH` or a "
                                 "`postgresql://` URL), or leave the option out to use "
                                 "$AFP_STORE or .afp/runs.db", ctx, param)
    return value


# Commands living in their own modules, imported only when invoked or listed: `afpc check` then
# pays nothing for the interpreter, the store or the graph drawing (click's "lazy group" recipe).
LAZY_COMMANDS = {
    "graph": "cli_graph:graph", "run": "cli_run:run_", "resume": "cli_run:resume_",
    "test": "cli_run:test_", "trace": "cli_trace:trace", "why": "cli_trace:why",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and name not in self.commands:
            import importlib
            module, attr = LAZY_COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(f"{__package__}.{module}"), attr), name)
        return super().get_command(ctx, name)

    def main(self, *args: Any, **kw: Any) -> Any:
        """click's `main`, plus the one failure it lets through outside any command: writing the
        `--help` or `--version` text (eager options, answered before a command's `guarded`
        runs) to an output that refuses it, e.g. a full disk."""
        try:
            return super().main(*args, **kw)
        except OSError as e:
            if not _from_stdout(e):
                _internal_error(e)
            _drop_stdout()
            click.echo(f"afpc: error: cannot write to standard output: {e.strerror or e}", err=True)
            sys.exit(1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="afpc")
def main() -> None:
    """afpc: check, draw, compile, run and explain `.afp` agent specs."""


# ---------------------------------------------------------------- check
def analyse(path: str | Path) -> tuple[Any, list[Diagnostic]]:
    """`api.analyse_path`, imported on first use: the commands that only read the store
    (`trace`, `why`, `resume`'s decisions) never load the front end and the checker. Speed:
    imported with the collector paused, as the check runs: the checker and the IR classes are
    thousands of long-lived objects that young collections would scan only to promote them."""
    from .collector import gc_paused
    with gc_paused():
        from .api import analyse_path
        return analyse_path(os.fspath(path))


def collect_files(paths: Iterable[str]) -> list[str]:
    """Files given directly, plus every `*.afp` below given folders (sorted, deduplicated), as
    the strings `pathlib.Path` would hold. Speed: strings, so that `afpc check` of files (no
    folder) never imports `pathlib` (`afp_dsl.paths` answers as it would)."""
    from . import paths as ps
    out: list[str] = []
    for raw in paths:
        if raw == "":  # (`ps.plain` would read it as `.`: the whole working folder)
            raise click.UsageError("an empty path was given (an unset shell variable?): name a "
                                   "file or folder, or `.` for the working folder")
        p = ps.plain(raw)
        if ps.is_dir(p):
            out.extend(_folder_specs(p))
        elif ps.exists(p) or ps.is_symlink(p):
            out.append(p)
        else:
            raise click.UsageError(f"no such file or folder: {raw}")
    seen: set[str] = set()
    return [p for p in out if not (ps.real_path(p) in seen or seen.add(ps.real_path(p)))]


def _folder_specs(folder: str) -> list[str]:
    """Every `*.afp` file below `folder`, sorted as paths, outside hidden folders (not entered).
    A folder that cannot be read is an error naming it: skipping it would let a gate pass
    without checking what is inside. (`os.walk` rather than `Path.rglob`, which skips such a
    folder silently.)"""
    from pathlib import Path
    found: list[Path] = []
    unreadable: list[OSError] = []
    for top, dirs, names in os.walk(folder, onerror=unreadable.append):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d == "node_modules")]
        found += [Path(top, n) for n in names if n.endswith(".afp") and os.path.isfile(os.path.join(top, n))]
    if unreadable:
        e = unreadable[0]
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise CliError(f"cannot read the folder {_shown_path(e.filename or folder)}{more}: "
                       f"{e.strerror or e}; afpc does not skip what it cannot read: fix its "
                       f"permissions, or name the files to check", code=2)
    return [str(q) for q in sorted(found)]


def check_files(files: list[str]) -> tuple[list[Diagnostic], dict[str, str]]:
    diags: list[Diagnostic] = []
    sources: dict[str, str] = {}
    cycles: set[frozenset[str]] = set()
    for f in files:
        program, found = analyse(f)
        diags.extend(d for d in found if _new_cycle(d, cycles))
        if program is not None:
            sources.update({m.key: m.source for m in program.modules})
    return sorted_diagnostics(diags), sources


def _new_cycle(d: Diagnostic, seen: set[frozenset[str]]) -> bool:
    """False for an import cycle already reported from another file of the same check: each
    file of a cycle checked as a root finds it, at its own import (one cause, one diagnostic)."""
    if d.code != "AFP108":
        return True
    key = frozenset(re.findall(r"`([^`]+)`", d.message))
    if key in seen:
        return False
    seen.add(key)
    return True


def use_color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def emit(text: str, output: str | None) -> None:
    if output:
        write_file(output, text)
    elif text:
        echo(text, nl=not text.endswith("\n"))


def echo(text: str, nl: bool = True) -> None:
    """`click.echo` to standard output for text that may hold what a run recorded: a lone
    surrogate (a tool's text from a sloppy decoder) that standard output cannot encode is printed
    as a `\\u` escape with a warning, as `write_file` does, instead of failing the command."""
    try:
        click.echo(text, nl=nl)
    except UnicodeEncodeError:  # (raised before anything is written: the text is encoded whole)
        click.echo(text.encode("utf-8", "backslashreplace").decode("utf-8"), nl=nl)
        click.echo("afpc: warning: text that is not valid Unicode (a lone surrogate) was printed "
                   "as a `\\u` escape", err=True)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), envvar="AFPC_OUTPUT_FORMAT",
              default="text", show_default=True, help="Output format.")
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too.")
@click.option("-o", "--output-file", "output", type=FilePath(writable=True),
              help="Write the report to a file instead of standard output.")
@click.option("--explain-reach", "reach", metavar="SKILL",
              help="Print a path from an entry to SKILL (or why there is none).")
@guarded
def check(paths: tuple[str, ...], fmt: str, strict: bool, output: str | None, reach: str | None) -> None:
    """Parse and check spec files or folders (recursively, *.afp)."""
    if reach is not None and not reach.strip():
        raise click.BadParameter("needs a skill name, e.g. `--explain-reach refunds`",
                                 param_hint="--explain-reach")
    files = collect_files(paths)
    if not files:  # (still a report: a SARIF or JSON consumer reads an empty one, not nothing)
        click.echo("afpc: no .afp files found in " + ", ".join(paths), err=True)
        emit(render([], {}, fmt, color=False, tool_version=__version__), output)
        return
    diags, sources = check_files(files)
    color = fmt == "text" and not output and use_color(sys.stdout)
    emit(render(diags, sources, fmt, color=color, tool_version=__version__), output)
    if reach is not None:
        click.echo(reach_text(files, reach))
    if len(files) > 1 or fmt == "text":
        click.echo(f"checked {len(files)} file{'s' if len(files) != 1 else ''}", err=True)
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    sys.exit(1 if any(d.severity in failing for d in diags) else 0)


def reach_text(files: list[str], skill: str) -> str:
    try:
        from .checks.reach import reach_report
    except ImportError:  # pragma: no cover - the graph checks are optional during development
        return "afpc: reachability explanations are not available in this build"
    from . import ir
    from .analysis import Analysis
    from .suggest import closest
    out, skills = [], set()
    for f in files:
        program, _ = analyse(f)
        if program is not None:
            analysis = Analysis(program)
            skills.update(d.name for _, d in analysis.decls() if type(d) is ir.Skill)
            out.append(reach_report(analysis, skill))
    if skill.rpartition(".")[2] not in skills:  # (a typo would read as "in no graph", exit 0)
        close = closest(skill.rpartition(".")[2], sorted(skills))
        raise click.BadParameter(f"no skill `{skill}` is declared in the checked files"
                                 + (f"; did you mean `{close}`?" if close else ""),
                                 param_hint="--explain-reach")
    return "\n".join(t for t in out if t)


def checked_program(file: str) -> Any:
    """The checked program of one spec file; on errors, render them to stderr and exit 1."""
    from . import paths as ps
    path = ps.plain(file)
    if not ps.exists(path):
        raise click.UsageError(f"no such file: {file}")
    program, diags = analyse(path)
    if program is None or any(d.severity is Severity.ERROR for d in diags):
        sources = {m.key: m.source for m in program.modules} if program else {}
        click.echo(render(diags, sources, "text", color=use_color(sys.stderr)), err=True, nl=False)
        sys.exit(1)
    return program


# ---------------------------------------------------------------- compile, explain
@main.command(name="compile")
@click.argument("file", type=FilePath())
@click.option("-o", "--output", type=FilePath(writable=True), help="Write the IR here.")
@guarded
def compile_(file: str, output: str | None) -> None:
    """Write a spec's IR as JSON (loadable later without the parser)."""
    from .serde import ir_to_json
    program = checked_program(file)
    emit(ir_to_json(program) + "\n", output)
    if output:
        click.echo(f"wrote {output}", err=True)


@main.command(name="explain")
@click.argument("code")
@guarded
def explain_(code: str) -> None:
    """Print the long explanation of a diagnostic code (AFP101 or unknown-name)."""
    text = explain(code)
    if text is None:
        click.echo(f"afpc: {unknown_code(code)}", err=True)
        sys.exit(2)
    click.echo(text)


if __name__ == "__main__":  # `python -m afp_dsl.cli ...` behaves as `afpc ...`
    main()
