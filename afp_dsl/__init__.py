"""afp: a declarative language, checker and interpreter for explainable LLM agents.

Public API (tooling.md §6): `load`, `check`, `load_ir`, `Program.agent(...)`, `approve`/`decline`,
`providers`, `stores`, `Effects`, the result envelopes, `CompileError` and `Diagnostic`, and
`format_source` (what `afpc fmt` does to a file's text).
Every name is imported on first use, so `afpc check` does not pay for the interpreter, nor
`afpc trace`/`afpc why` for the front end and checker.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .source import Span

if TYPE_CHECKING:  # what type checkers read; at run time each name is imported on first use
    from . import providers, stores
    from .api import Program, check, load, load_ir
    from .diagnostics import CompileError, Diagnostic, Label, Severity
    from .effects import Effects
    from .envelopes import absent, coverage, described
    from .fmt import format_source
    from .graph_export import to_dot, to_json, to_mermaid
    from .policy_host import Rewrite, rewrite
    from .results import (AgentNotFound, CheckIn, Checkpoint, Conversation, Decision,
                          ResumeDecisionError, RunResult, approve, decline)
    from .runner import Agent
    from .serde import IRFormatError
    from .state import CheckpointError

__version__ = "0.1.0"

_LAZY = {
    "Program": ("api", "Program"), "check": ("api", "check"), "load": ("api", "load"),
    "load_ir": ("api", "load_ir"), "CompileError": ("diagnostics", "CompileError"),
    "Diagnostic": ("diagnostics", "Diagnostic"), "Label": ("diagnostics", "Label"),
    "Severity": ("diagnostics", "Severity"),
    "providers": ("providers", None), "stores": ("stores", None), "Effects": ("effects", "Effects"),
    "absent": ("envelopes", "absent"), "coverage": ("envelopes", "coverage"),
    "described": ("envelopes", "described"), "Agent": ("runner", "Agent"),
    "CheckIn": ("results", "CheckIn"), "Checkpoint": ("results", "Checkpoint"),
    "ResumeDecisionError": ("results", "ResumeDecisionError"), "RunResult": ("results", "RunResult"),
    "IRFormatError": ("serde", "IRFormatError"), "CheckpointError": ("state", "CheckpointError"),
    "approve": ("results", "approve"), "decline": ("results", "decline"),
    "Decision": ("results", "Decision"), "Conversation": ("results", "Conversation"),
    "AgentNotFound": ("results", "AgentNotFound"),
    "to_mermaid": ("graph_export", "to_mermaid"), "to_dot": ("graph_export", "to_dot"),
    "to_json": ("graph_export", "to_json"),
    "rewrite": ("policy_host", "rewrite"), "Rewrite": ("policy_host", "Rewrite"),
    "format_source": ("fmt", "format_source"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'afp_dsl' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(f"{__name__}.{module}")
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (`__all__`), not the helpers this module imports."""
    return sorted(__all__)


__all__ = ["Agent", "AgentNotFound", "CheckIn", "CheckpointError", "Checkpoint", "CompileError",
           "Conversation", "Decision", "Diagnostic", "Effects", "IRFormatError", "Label", "Program",
           "ResumeDecisionError", "Rewrite", "RunResult", "Severity", "Span", "absent", "approve",
           "check", "coverage", "decline", "described", "format_source", "load", "load_ir",
           "providers", "rewrite", "stores", "to_dot", "to_json", "to_mermaid", "__version__"]
