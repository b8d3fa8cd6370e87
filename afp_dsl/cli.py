"""The `afpc` command line: a thin click layer over the API; with `cli_*`, the only modules that
print or exit.

Role:       parses arguments, calls `api`/`render`, maps results to exit codes
            (0 clean, 1 findings or failure, 2 usage or internal error, 3 paused runs); the
            group, `check`, `compile` and `explain` (the other commands load on demand).
Invariants: no traceback ever reaches the user (`cli_io.guarded` wraps every command).
"""
from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any, Iterable

import click

from . import __version__
from .diagnostics import Diagnostic, Severity, sorted_diagnostics
from .cli_io import (CliError, FilePath, _drop_stdout, _from_stdout, _internal_error,  # noqa: F401
                     _shown_path, echo, emit, guarded, refuse_stdin, stdin_hint, store_text, use_color, utf8_text,
                     write_file)
from .render import FORMATS, explain, render, unknown_code

if TYPE_CHECKING:
    from pathlib import Path

# Commands living in their own modules, imported only when invoked or listed: `afpc check` then
# pays nothing for the interpreter, the store or the graph drawing (click's "lazy group" recipe).
LAZY_COMMANDS = {
    "graph": "cli_graph:graph", "run": "cli_run:run_", "resume": "cli_resume:resume_",
    "test": "cli_test:test_", "trace": "cli_trace:trace", "why": "cli_trace:why",
    "fmt": "cli_fmt:fmt_",
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


def collect_files(paths: Iterable[str], missing: str = "usage") -> list[str]:
    """Files given directly, plus every `*.afp` below given folders (sorted, deduplicated), as
    the strings `pathlib.Path` would hold. A path that names nothing is a usage error, or with
    `missing="keep"` kept as a file, for its check to report (AFP109 file-not-found) beside
    the others'. Speed: strings, so that `afpc check` of files (no folder) never imports
    `pathlib` (`afp_dsl.paths` answers as it would)."""
    from . import paths as ps
    out: list[str] = []
    for raw in paths:
        if raw == "":  # (`ps.plain` would read it as `.`: the whole working folder)
            raise click.UsageError("an empty path was given (an unset shell variable?): name a "
                                   "file or folder, or `.` for the working folder")
        refuse_stdin(raw)
        if "\x00" in raw:  # (no file can have this name; the system refuses to look it up)
            raise click.UsageError(f"{raw!r} is not a usable file path (embedded null byte)")
        p = ps.plain(raw)
        if ps.is_dir(p):
            out.extend(_folder_specs(p))
        elif ps.exists(p) or ps.is_symlink(p) or missing == "keep":
            out.append(p)
        else:
            raise click.UsageError(f"no such file or folder: {raw}{stdin_hint(raw)}")
    seen: set[str] = set()
    return [p for p in out if not (ps.real_path(p) in seen or seen.add(ps.real_path(p)))]


def _folder_specs(folder: str) -> list[str]:
    """Every `*.afp` file below `folder`, sorted as paths, outside hidden folders (not entered).
    A folder that cannot be read is an error naming it: skipping it would let a gate pass
    without checking what is inside. (`os.walk` rather than `Path.rglob`, which skips such a
    folder silently.) For the same reason a `*.afp` that is not a regular file (a symlink to
    nothing, a named pipe) is kept: checking it reports why it cannot be read, never reading
    a pipe."""
    from pathlib import Path
    found: list[Path] = []
    unreadable: list[OSError] = []
    for top, dirs, names in os.walk(folder, onerror=unreadable.append):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d == "node_modules")]
        found += [Path(top, n) for n in names if n.endswith(".afp")]
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



@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Output format  [default: $AFPC_OUTPUT_FORMAT, else text]")
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too.")
@click.option("-o", "--output-file", "output", type=FilePath(writable=True),
              help="Write the report to a file instead of standard output.")
@click.option("--explain-reach", "reach", metavar="SKILL",
              help="Print a path from an entry to SKILL (or why there is none).")
@guarded
def check(paths: tuple[str, ...], fmt: str, strict: bool, output: str | None, reach: str | None) -> None:
    """Parse and check spec files or folders (recursively, *.afp)."""
    fmt = fmt or _env_format()
    if reach is not None and not reach.strip():
        raise click.BadParameter("needs a skill name, e.g. `--explain-reach refunds`",
                                 param_hint="--explain-reach")
    files = collect_files(paths, missing="keep")  # (a missing path: AFP109 in the report)
    if not files:  # (still a report: a SARIF or JSON consumer reads an empty one, not nothing)
        click.echo("afpc: no .afp files found in " + ", ".join(paths), err=True)
        emit(render([], {}, fmt, color=False, tool_version=__version__), output)
        return
    diags, sources = check_files(files)
    color = fmt == "text" and not output and use_color(sys.stdout)
    emit(render(diags, sources, fmt, color=color, tool_version=__version__), output,
         reads=[*files, *sources])
    if reach is not None:  # (to stderr when stdout holds a JSON or SARIF document)
        click.echo(reach_text(files, reach), err=fmt in ("json", "sarif") and not output)
    if len(files) > 1 or fmt == "text":
        click.echo(f"checked {len(files)} file{'s' if len(files) != 1 else ''}", err=True)
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    sys.exit(1 if any(d.severity in failing for d in diags) else 0)


def _env_format() -> str:
    """`--format`'s default: $AFPC_OUTPUT_FORMAT (unset or blank: `text`). Read here rather than
    by click's `envvar=`, whose error for a bad value names `--format`, which was never given."""
    value = os.environ.get("AFPC_OUTPUT_FORMAT", "").strip()
    if value and value not in FORMATS:
        raise click.UsageError(f"AFPC_OUTPUT_FORMAT is {value[:40]!r}, which is not a format: use "
                               f"one of {', '.join(FORMATS)}, or unset it (the default is text)")
    return value or "text"


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
    """The checked program of one spec file; on errors (a path naming no file is AFP109),
    render them to stderr and exit 1."""
    from . import paths as ps
    refuse_stdin(file)
    program, diags = analyse(ps.plain(file))
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
    emit(ir_to_json(program) + "\n", output, reads=[file, *(m.key for m in program.modules)])
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
