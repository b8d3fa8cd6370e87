"""The command line's boundary: file parameters, printing, and failures turned into messages.

Role:       what every `cli*` module shares: `FilePath` and the text-option callbacks (usage
            errors, exit 2, for what cannot be a file or text), `write_file`/`echo`/`emit` for
            output, and `guarded`, which turns whatever a command raises into one line and an
            exit code.
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
from collections.abc import Callable, Iterable
from typing import Any

import click


class CliError(Exception):
    """Bad input met by a command: one line on stderr, exit 1 (or `code`, 2 for usage)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class FilePath(click.Path):
    """`click.Path` for files, which answers a path it cannot even look at (a NUL byte in it,
    a name too long) with a usage error instead of crashing in `os.stat`. An output file
    (`writable`) given as `-` is standard output (None), as leaving the option out is."""

    def __init__(self, writable: bool = False):
        super().__init__(dir_okay=False, writable=writable)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "":  # (an unset shell variable, most likely: never "standard output")
            self.fail("is empty; name a file", param, ctx)
        if value == "-" and self.writable:
            return None
        try:
            return super().convert(value, param, ctx)
        except (ValueError, OSError) as exc:
            self.fail(f"{value!r} is not a usable file path ({exc})", param, ctx)


def refuse_stdin(path: str) -> None:
    """A spec path `-` naming no file is a usage error: afpc reads no spec from standard input
    (a path that names no file is otherwise AFP109 file-not-found, exit 1)."""
    if path == "-" and not os.path.lexists(path):
        raise click.UsageError("no such file: -" + stdin_hint(path))


def stdin_hint(path: str) -> str:
    """For a missing spec named `-`: afpc reads no spec from standard input."""
    return (" (afpc does not read a spec from standard input: save it to a file and name the "
            "file)") if path == "-" else ""


def write_file(path: str, text: str, reads: Iterable[str | None] = ()) -> None:
    """Write a report or an export; a path that cannot be written is a usage error naming it,
    and so is one of the files the command `reads` (a spec, the run store): it would be lost."""
    refuse_input(path, reads)
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


def refuse_input(path: str, reads: Iterable[str | None]) -> None:
    """A usage error when `path` is one of the files `reads` (the same file, by any name)."""
    for read in reads:
        try:
            same = read is not None and os.path.samefile(path, read)
        except (OSError, ValueError):  # (either is missing or unusable: not one file)
            same = False
        if same:
            raise CliError(f"cannot write `{path}`: it is `{read}`, which this command reads, and "
                           f"writing there would destroy it; name another output file", code=2)


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
               f"this is a bug in afpc {_version()}; please file a bug report {where} with the "
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


def run_id_text(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A run id's callback: UTF-8 and not blank (an empty id, most likely an unset shell
    variable, names no run: a usage error, not a lookup that fails)."""
    value = utf8_text(ctx, param, value)
    if value is not None and not value.strip():
        latest = "" if ctx.info_name == "resume" else " or `last` for the latest run"
        raise click.BadParameter(f"is empty; give a run id (`afpc trace list` lists them){latest}",
                                 ctx, param)
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



def use_color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def emit(text: str, output: str | None, reads: Iterable[str | None] = ()) -> None:
    """`text` to the file `output` (see `write_file`) or, when None, to standard output."""
    if output:
        write_file(output, text, reads)
    elif text:
        echo(text, nl=not text.endswith("\n"))


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional controls
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """Human text that holds what a run recorded (a model's reply, a tool's result), made safe
    to print: every control character but tab and newline, and every bidirectional control, is
    written as its `\\uXXXX` escape, so recorded text cannot clear the screen, move the cursor,
    retitle the window or reorder the line (and reads the same on a terminal and in a pipe)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(text: str, nl: bool = True, *, verbatim: bool = False, human: bool = False) -> None:
    """`click.echo` to standard output for text that may hold what a run recorded: a lone
    surrogate (a tool's text from a sloppy decoder) that standard output cannot encode is printed
    as a `\\u` escape with a warning, as `write_file` does, instead of failing the command.
    `verbatim`: the text is a file's content (`afpc fmt -`, a diff), whose ANSI escapes click
    would strip when standard output is not a terminal. `human`: a text report (not JSON, not
    a file's content), printed through `terminal_safe`."""
    color = True if verbatim else None
    text = terminal_safe(text) if human else text
    try:
        click.echo(text, nl=nl, color=color)
    except UnicodeEncodeError:  # (raised before anything is written: the text is encoded whole)
        click.echo(text.encode("utf-8", "backslashreplace").decode("utf-8"), nl=nl, color=color)
        click.echo("afpc: warning: text that is not valid Unicode (a lone surrogate) was printed "
                   "as a `\\u` escape", err=True)


def _version() -> str:
    from . import __version__
    return __version__
