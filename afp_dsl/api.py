"""The embedding API's program object and the front-end entry points `check` and `load`.

Role:       glue between loader, checks and the runtime; what `afp_dsl/__init__` re-exports.
Invariants: `check` never raises for bad input (a missing file, a folder, empty text, an
            argument that is no path or text: each is a diagnostic); `load` raises
            `CompileError` only for errors; `load_ir` raises `serde.IRFormatError` for any
            document or file it cannot read, and `TypeError` for an argument of another type.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

from . import ir
from .analysis import Analysis
from .checks import run_checks
from .codes import diag
from .collector import gc_paused  # noqa: F401 - re-exported (graph_export, hosts)
from .diagnostics import CompileError, Diagnostic, has_errors, sorted_diagnostics
from .launch_checks import _a, check_agent_name, check_model
from .source import Span

if TYPE_CHECKING:  # (imported lazily at run time: `afpc check` never loads the interpreter)
    from pathlib import Path

    from .effects import Effects
    from .providers.base import Provider, SupportsComplete
    from .runner import Agent
    from .runtime import Stubs
    from .store import Store


class Program:
    """A checked program: the IR, its analysis and any warnings. Run agents with `.agent()`."""

    def __init__(self, program: ir.Program, warnings: list[Diagnostic] | None = None):
        self.ir = program
        self.analysis = Analysis(program)
        self.warnings = list(warnings or [])

    def agent(self, name: str | None = None, *,
              provider: Provider | SupportsComplete | None = None,
              tools: Mapping[str, Callable[..., Any]] | None = None, store: Store | None = None,
              effects: Effects | None = None, model: str | None = None,
              stubs: Stubs | None = None, spec: str | None = None) -> Agent:
        """An agent of this program (`name`: the only one when omitted), ready to `run`."""
        from .runner import Agent
        check_agent_name(name)
        check_model(model)
        return Agent(self, name, provider=provider, tools=tools, store=store, effects=effects,
                     model=model, stubs=stubs, spec=spec)

    def __repr__(self) -> str:
        return f"<afp Program {self.ir.root}>"


def _is_text(x: Any) -> bool:
    """A `str` is spec text unless it looks like a path: one line naming an existing file,
    ending in `.afp`, or holding no `{` (every declaration has a body; so `check("agent a {}")`
    checks that text, `check("x.afp")` and `check("specs/support")` read the file)."""
    if isinstance(x, os.PathLike) or not isinstance(x, str):
        return False
    if "\n" in x or "\r" in x or "\x00" in x or "{" in x or not x.strip():
        return True
    if x.strip().endswith(".afp"):
        return False
    try:
        if os.path.exists(x):  # an existing folder is a path too (and a diagnostic)
            return False
    except (OSError, ValueError):
        return True
    # one line with no `{`: no declaration (each has a body); spec text so is only a comment or
    # an import, so anything else is a path that does not exist (AFP109, not "unknown kind")
    # (or a declaration cut short, `agent a`: its syntax error is the better answer)
    words = x.split(None, 1)
    return x.lstrip().startswith("#") or (len(words) == 2 and words[0] in _TEXT_STARTS)


_TEXT_STARTS = frozenset(("import", "agent", "tool", "skill", "graph", "steering", "fact",
                          "instruction", "redact", "policy", "test"))
_SPEC_ARG = "a path (a `str` or `os.PathLike`, e.g. `pathlib.Path`) or spec text (a `str`)"


def _check_argument(x: Any, fn: str, what: str) -> None:
    """A `TypeError` naming what to pass, for an argument that is neither a path nor text."""
    if isinstance(x, (str, os.PathLike)):
        return
    raise TypeError(f"`{fn}` takes {what}, not {_a(x)}{_type_hint(x, fn)}")


def _type_hint(x: Any, fn: str) -> str:
    return {bytes: f"; decode it first: `{fn}(data.decode(\"utf-8\"))`",
            list: f"; pass one at a time: `for p in paths: {fn}(p)`",
            tuple: f"; pass one at a time: `for p in paths: {fn}(p)`"}.get(type(x), "")


def _wrong_argument(x: Any, fn: str) -> Diagnostic | None:
    """AFP006 for an argument of `check`/`load` that is neither a path nor spec text (`None`,
    `bytes`, a number, a path object naming bytes): bad input, so a diagnostic, not a raise."""
    if isinstance(x, str):
        return None
    if isinstance(x, os.PathLike):
        try:
            named = os.fspath(x)
        except Exception as exc:  # (the host's `__fspath__` failed: still no raise, §6)
            got = f"{_a(x)} whose path cannot be read (`{type(exc).__name__}: {exc}`)"[:300]
        else:
            if isinstance(named, str):
                return None
            got = f"{_a(x)} naming {_a(named)}; its `__fspath__` must return a `str`"
    else:
        got = f"{_a(x)}{_type_hint(x, fn)}"
    return diag("AFP006", f"`{fn}` takes {_SPEC_ARG}, not {got}", Span("<input>", 0, 0),
                help=f"pass the path of a `.afp` file or the spec's text: `afp.{fn}(\"support.afp\")`")


def _unreadable(path_or_text: str | os.PathLike) -> Diagnostic | None:
    """The diagnostic of an argument that names nothing to check: blank text, or a folder."""
    if isinstance(path_or_text, str) and not path_or_text.strip():
        return diag("AFP006", "the spec text is empty: there is nothing to check",
                    Span("<text>", 0, 0), help="pass the path of a `.afp` file or spec text")
    if _is_text(path_or_text):
        return None
    try:
        os.fsencode(path_or_text)
    except UnicodeEncodeError:  # (a lone surrogate no file name can hold: `"\ud800.afp"`)
        key = os.fspath(path_or_text).encode("utf-8", "backslashreplace").decode("ascii")
        return diag("AFP109", f"cannot read `{key}`: no file can have this name (it holds a "
                    f"character that is not valid text)", Span(key, 0, 0),
                    help="check the path: it was probably decoded wrongly")
    if os.path.isdir(path_or_text):
        return _folder(path_or_text)
    return None


def _folder(path: str | os.PathLike) -> Diagnostic:
    key = os.fspath(path)
    return diag("AFP006", f"cannot read `{key}`: it is a folder", Span(key, 0, 0),
                help=f"pass one spec file (a `.afp` file in `{key}`); "
                     f"`afpc check {key}` checks every `*.afp` below a folder")


def analyse(path_or_text: str | os.PathLike, name: str = "<text>") -> tuple[ir.Program | None, list[Diagnostic]]:
    """Load and check; returns the program (None if unreadable) and every diagnostic, sorted."""
    with gc_paused():
        return _analyse(path_or_text, name)


def analyse_path(path: str) -> tuple[ir.Program | None, list[Diagnostic]]:
    """`analyse` of a file or folder path given as a `str`, never taken for spec text (`afpc
    check` hands over its files so: a `pathlib.Path` would cost its start the import)."""
    with gc_paused():
        if os.path.isdir(path):
            return None, [_folder(path)]
        return _analysed(path, None)


def _analyse(path_or_text: str | os.PathLike, name: str) -> tuple[ir.Program | None, list[Diagnostic]]:
    problem = _unreadable(path_or_text)
    if problem is not None:
        return None, [problem]
    if _is_text(path_or_text):
        return _analysed(None, str(path_or_text), name)
    return _analysed(path_or_text, None)


def _analysed(path: str | os.PathLike | None, text: str | None,
              name: str = "<text>") -> tuple[ir.Program | None, list[Diagnostic]]:
    """Load (a file, or `text`) and check, unless the front end found a syntax error."""
    from .loader import load as load_files  # (here: `load_ir` never imports the parser)
    result = load_files(text=text, name=name) if text is not None else load_files(path)
    program, diags = result.program, result.diagnostics
    syntax_error = any(d.code == "AFP001" for d in diags)  # later checks would only cascade
    if program is not None and not result.unparsed and not syntax_error:
        diags = diags + run_checks(analysis_for(program, diags))
    return program, sorted_diagnostics(diags)


def analysis_for(program: ir.Program, diags: list[Diagnostic]) -> Analysis:
    """The checks' `Analysis` of a program, told what the front end reported: misspelt
    referring attributes and schema errors, about which the checks stay silent."""
    misspelt = [d.primary.span for d in diags if _hides_references(d)]
    schema_errors = [d.primary.span for d in diags if d.code == "AFP301" and d.primary]
    attribute_errors = [d.primary.span for d in diags if _rejects_attribute(d)]
    return Analysis(program, misspelt, schema_errors, attribute_errors)


def _rejects_attribute(d: Diagnostic) -> bool:
    """An attribute the front end rejected (AFP104 unknown, or an AFP106 error for its value):
    the declaration lowered without it is not the one meant (`Analysis.attribute_error`)."""
    return d.code in ("AFP104", "AFP106") and d.is_error and d.primary is not None


def _hides_references(d: Diagnostic) -> bool:
    """An unknown attribute (AFP104) spelt like `tools`, `skills` or `graph` (`tols`): what the
    declaration refers to is unknown, so the checks about it stay silent (`Analysis.misspelt`);
    any other unknown attribute leaves the rest of the declaration to be judged."""
    if d.code != "AFP104" or d.primary is None:
        return False
    m = re.match(r"unknown attribute `([^`]+)`", d.message)
    if m is None:
        return False
    from .suggest import closest
    return closest(m.group(1), list(_REFERRING)) is not None


_REFERRING = ("tools", "skills", "graph")


def check(path_or_text: str | os.PathLike) -> list[Diagnostic]:
    """All diagnostics of a spec file or spec text. Never raises for bad input: an argument
    that is not a `str` or a path naming text is an AFP006 diagnostic too."""
    wrong = _wrong_argument(path_or_text, "check")
    return [wrong] if wrong is not None else analyse(path_or_text)[1]


def load(path_or_text: str | os.PathLike) -> Program:
    """Load and check a spec; raise `CompileError` (carrying the diagnostics) on any error, an
    argument that is not a path or spec text included (AFP006)."""
    wrong = _wrong_argument(path_or_text, "load")
    if wrong is not None:
        raise CompileError([wrong])
    program, diags = analyse(path_or_text)
    if program is None or has_errors(diags):
        raise CompileError(diags)
    return Program(program, diags)


def load_ir(path_or_json: str | os.PathLike | Mapping) -> Program:
    """Read an IR document written by `afpc compile` (no parsing, no file reads beyond it): a
    path, the JSON text, or the parsed JSON object. Raises `serde.IRFormatError` for anything
    it cannot read, naming the problem, and `TypeError` for an argument of another type."""
    from .serde import ir_from_data, ir_from_json
    if isinstance(path_or_json, Mapping):
        return Program(ir_from_data(dict(path_or_json)))
    _check_argument(path_or_json, "load_ir",
                    "a path, the JSON text `afpc compile` writes, or that JSON parsed (a `dict`)")
    return Program(ir_from_json(_ir_text(path_or_json)))


def _ir_text(path_or_json: str | os.PathLike) -> str:
    """The JSON text: the argument itself, or the file it names."""
    from .serde import FIX, IRFormatError
    if isinstance(path_or_json, str):
        if not path_or_json.strip():
            raise IRFormatError(f"`load_ir` was given an empty string; {FIX}, or its path")
        if path_or_json.lstrip().startswith(("{", "[")) or not os.path.exists(path_or_json):
            if _json_like(path_or_json):
                return path_or_json
            shown = path_or_json if len(path_or_json) <= 80 else path_or_json[:77] + "..."
            raise IRFormatError(f"no such IR file: `{shown}` (and the text is not JSON); "
                                f"{FIX}, or its path")
    from pathlib import Path
    return _read_ir_file(Path(path_or_json))


def _json_like(text: str) -> bool:
    if text.lstrip().startswith(("{", "[")):
        return True
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _read_ir_file(path: Path) -> str:
    from .serde import FIX, IRFormatError
    try:
        if path.is_dir():
            raise IRFormatError(f"cannot read `{path}`: it is a folder; {FIX}, or its path")
        if not path.is_file():
            raise IRFormatError(f"cannot read `{path}`: it is not a regular file; {FIX}, or its path")
        data = path.read_bytes()
    except OSError as e:
        raise IRFormatError(f"cannot read `{path}`: {e.strerror or e}; {FIX}, or its path") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IRFormatError(f"cannot read `{path}`: it is not UTF-8 text (byte {e.start}), so not "
                            f"an IR document; {FIX}") from None
