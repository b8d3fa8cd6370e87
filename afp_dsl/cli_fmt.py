"""`afpc fmt` (tooling.md §2): rewrite spec files in the canonical layout, comments kept.

Role:       a thin click command over `fmt.format_source`: expands folders as `afpc check`
            does, reads each file, rewrites it in place (atomically, keeping its mode), or with
            `--check`/`--diff` writes nothing; `-` formats standard input to standard output.
Emits:      exit 0 (done; with `--check`: nothing would change), 1 (`--check`: a file would
            change; or a file with a syntax error, unreadable or unwritable, left as it was),
            2 (usage, or a formatter bug: the file is left as it was). `reformatted FILE` /
            `would reformat FILE` and a summary on stderr; diffs and `-`'s text on stdout.
Invariants: a file with a syntax error is never rewritten (its diagnostic is printed as by
            `afpc check`); a file is replaced only by a complete formatted copy.
"""
from __future__ import annotations

import difflib
import os
import sys
import tempfile

import click

from .cli_io import CliError, echo, guarded, use_color


class _Skipped(Exception):
    """A file left as it was: the message is printed, `code` is its exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


@click.command("fmt")
@click.argument("paths", nargs=-1, required=True)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file would be reformatted.")
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff of the changes.")
@guarded
def fmt_(paths: tuple[str, ...], check: bool, diff: bool) -> None:
    """Rewrite spec files or folders (recursively, *.afp) in the canonical layout."""
    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("`-` (standard input) cannot be mixed with other paths")
        sys.exit(_stdin(check, diff))
    from .cli import collect_files
    files = collect_files(paths, missing="keep")  # (a missing path: named, exit 1, as `check`)
    if not files:
        click.echo("afpc: no .afp files found in " + ", ".join(paths), err=True)
        return
    changed, codes = [], [0]
    for f in files:
        try:
            if _one(f, check, diff):
                changed.append(f)
        except _Skipped as e:
            click.echo(str(e), err=True, nl=not str(e).endswith("\n"))
            codes.append(e.code)
    click.echo(_summary(len(files), len(changed), len(codes) - 1, check or diff), err=True)
    sys.exit(max(codes) if max(codes) > 1 else 1 if max(codes) or (check and changed) else 0)


def _one(path: str, check: bool, diff: bool) -> bool:
    """Format one file (or only say what would change); whether it changes."""
    text = _read(path)
    out = _formatted(text, path)
    if out == text:
        return False
    if diff:
        echo(_diff(text, out, path), nl=False, verbatim=True)
    if check or diff:
        click.echo(f"would reformat {path}", err=True)
    else:
        _replace(path, out)
        click.echo(f"reformatted {path}", err=True)
    return True


def _formatted(text: str, name: str) -> str:
    """`format_source`, with a syntax error or a formatter bug turned into `_Skipped`."""
    from .diagnostics import CompileError
    from .fmt import FormatterBug, format_source
    from .render import render
    try:
        return format_source(text, name)
    except CompileError as e:
        shown = render(e.diagnostics, {name: text.removeprefix("\ufeff")}, "text",
                       color=use_color(sys.stderr))
        raise _Skipped(shown + f"afpc: {name} does not parse; it was not formatted") from None
    except FormatterBug as e:
        raise _Skipped(f"afpc: internal error: {e}; this is a bug in afpc: please report it with "
                       f"the file", code=2) from None


def _read(path: str) -> str:
    from .loader import MAX_BYTES, not_a_file
    reason = not_a_file(path)
    if reason is None:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            reason = e.strerror or str(e)
        else:
            reason = _undecodable(data, MAX_BYTES)
    if reason == "no such file" and os.path.islink(path):  # (as `afpc check` names it)
        reason = f"it is a symbolic link to `{os.readlink(path)}`, which does not exist"
    if reason is not None:
        raise _Skipped(f"afpc: error: cannot read {path}: {reason}; it was not formatted")
    return data.decode("utf-8")


def _undecodable(data: bytes, limit: int) -> str | None:
    if len(data) > limit:
        return f"it is larger than {limit // (1024 * 1024)} MiB, the limit for a spec"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"it is not UTF-8 text (byte {e.start})"
    return None


def _replace(path: str, text: str) -> None:
    """Write `text` over `path` atomically: a complete copy in the same folder (with the file's
    permissions) replaces it, so an interruption leaves the old file or the new one. A symbolic
    link stays a link: its target is rewritten."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    try:
        mode = os.stat(target).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".afpc-fmt-", suffix=".tmp")
    except OSError as e:
        raise _Skipped(f"afpc: error: cannot write {path}: {e.strerror or e}; it was left as it was")
    try:
        with open(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as e:
        os.unlink(tmp)
        raise _Skipped(f"afpc: error: cannot write {path}: {e.strerror or e}; it was left as it was")


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(_lines(old), _lines(new), f"{path} (original)",
                                 f"{path} (formatted)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def _lines(text: str) -> list[str]:
    """`text`'s lines as `patch` reads them: cut after each `\\n` only (`str.splitlines` also
    cuts at `\\r`, U+2028, form feeds…, which would put a bogus "no newline" marker in the
    diff); a last line without one is kept as it is."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _summary(total: int, changed: int, failed: int, dry: bool) -> str:
    def n(k: int) -> str:
        return f"{k} file{'s' if k != 1 else ''}"
    done = f"{n(changed)} would be reformatted" if dry else f"{n(changed)} reformatted"
    text = f"{done}, {n(total - changed - failed)} unchanged"
    return text + (f", {n(failed)} not formatted (see above)" if failed else "")


def _stdin(check: bool, diff: bool) -> int:
    """Format standard input to standard output (`--check`/`--diff`: only report); the exit code."""
    data = sys.stdin.buffer.read()  # (click's `get_binary_stream` is deprecated since 8.2)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(f"standard input is not UTF-8 text (byte {e.start}); nothing was formatted")
    try:
        out = _formatted(text, "<stdin>")
    except _Skipped as e:
        click.echo(str(e), err=True)
        return e.code
    if diff and out != text:
        echo(_diff(text, out, "<stdin>"), nl=False, verbatim=True)
    if check or diff:
        if out != text:
            click.echo("would reformat <stdin>", err=True)
        return 1 if check and out != text else 0
    echo(out, nl=False, verbatim=True)
    return 0
