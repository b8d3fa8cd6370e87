"""afp: a declarative language, checker and interpreter for explainable LLM agents.

Public API (tooling.md §6): `load`, `check`, `load_ir`, `Program`, `CompileError`, `Diagnostic`.
"""
from __future__ import annotations

from .api import Program, check, load, load_ir
from .diagnostics import CompileError, Diagnostic, Label, Severity
from .envelopes import absent, coverage, described
from .source import Span

__version__ = "0.1.0"

__all__ = ["CompileError", "Diagnostic", "Label", "Program", "Severity", "Span", "absent", "check",
           "coverage", "described", "load", "load_ir", "__version__"]
