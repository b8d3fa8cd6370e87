"""afp: a declarative language, checker and interpreter for explainable LLM agents.

Public API (tooling.md §6): `load`, `check`, `load_ir`, `Program`, `CompileError`, `Diagnostic`.
"""
from __future__ import annotations

from .api import Program, check, load, load_ir
from .diagnostics import CompileError, Diagnostic, Label, Severity
from .source import Span

__version__ = "0.1.0"

__all__ = ["CompileError", "Diagnostic", "Label", "Program", "Severity", "Span", "check", "load",
           "load_ir", "__version__"]
