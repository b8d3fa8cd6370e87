"""The embedding API's program object and the front-end entry points `check` and `load`.

Role:       glue between loader, checks and the runtime; what `afp_dsl/__init__` re-exports.
Invariants: `check` never raises for bad input; `load` raises `CompileError` only for errors.
"""
from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path
from typing import Any, Iterator

from . import ir
from .analysis import Analysis
from .checks import run_checks
from .diagnostics import CompileError, Diagnostic, has_errors, sorted_diagnostics
from .loader import load as load_files


class Program:
    """A checked program: the IR, its analysis and any warnings. Run agents with `.agent()`."""

    def __init__(self, program: ir.Program, warnings: list[Diagnostic] | None = None):
        self.ir = program
        self.analysis = Analysis(program)
        self.warnings = list(warnings or [])

    def agent(self, name: str | None = None, **kw: Any) -> Any:
        from .runner import Agent
        return Agent(self, name, **kw)

    def __repr__(self) -> str:
        return f"<afp Program {self.ir.root}>"


def _is_text(x: Any) -> bool:
    """A `str` is spec text unless it looks like a path: one line naming an existing file or
    ending in `.afp` (so `check("agent a")` checks that text, `check("x.afp")` reads the file)."""
    if isinstance(x, os.PathLike) or not isinstance(x, str):
        return False
    if "\n" in x or "\r" in x or "\x00" in x or "{" in x or not x.strip():
        return True
    if x.strip().endswith(".afp"):
        return False
    try:
        return not os.path.isfile(x)
    except (OSError, ValueError):
        return True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing allocates millions of short-lived acyclic objects; the cyclic collector's repeated
    full scans over them made checking grow faster than linearly, so it is paused meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def analyse(path_or_text: str | os.PathLike, name: str = "<text>") -> tuple[ir.Program | None, list[Diagnostic]]:
    """Load and check; returns the program (None if unreadable) and every diagnostic, sorted."""
    with gc_paused():
        return _analyse(path_or_text, name)


def _analyse(path_or_text: str | os.PathLike, name: str) -> tuple[ir.Program | None, list[Diagnostic]]:
    if _is_text(path_or_text):
        result = load_files(text=str(path_or_text), name=name)
    else:
        result = load_files(Path(path_or_text))
    program, diags = result.program, result.diagnostics
    syntax_error = any(d.code == "AFP001" for d in diags)  # later checks would only cascade
    if program is not None and not result.unparsed and not syntax_error:
        diags = diags + run_checks(Analysis(program))
    return program, sorted_diagnostics(diags)


def check(path_or_text: str | os.PathLike) -> list[Diagnostic]:
    """All diagnostics of a spec file or spec text. Never raises for bad input."""
    return analyse(path_or_text)[1]


def load(path_or_text: str | os.PathLike) -> Program:
    """Load and check a spec; raise `CompileError` (carrying the diagnostics) on any error."""
    program, diags = analyse(path_or_text)
    if program is None or has_errors(diags):
        raise CompileError(diags)
    return Program(program, diags)


def load_ir(path_or_json: str | os.PathLike) -> Program:
    """Read an IR document written by `afpc compile` (no parsing, no file reads beyond it)."""
    from .serde import ir_from_json
    text = str(path_or_json)
    if not text.lstrip().startswith("{"):
        text = Path(path_or_json).read_text(encoding="utf-8")
    return Program(ir_from_json(text))
