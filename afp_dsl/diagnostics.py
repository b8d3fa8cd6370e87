"""Diagnostics as plain values: severity, code, message, labelled spans, notes, help.

Role:       shared by every stage; rendering lives in `render`.
Invariants: pure data; nothing here formats for humans or prints.
"""
from __future__ import annotations

import enum
from typing import Iterable

from .record import Record, record
from .source import Span


class Severity(str, enum.Enum):
    """How bad a diagnostic is: an `error` stops `load`; a `warning` or `note` does not."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@record
class Label(Record):
    """A source span a diagnostic points at, with what to say there (`primary`: the main one)."""

    span: Span
    message: str = ""
    primary: bool = True


@record
class Diagnostic(Record):
    """One finding. `code` is `AFPnnn`; its kebab name and default severity come from `codes`."""

    code: str
    severity: Severity
    message: str
    labels: tuple[Label, ...] = ()
    notes: tuple[str, ...] = ()
    help: str | None = None

    @property
    def primary(self) -> Label | None:
        """The label the diagnostic is reported at (the first one when none is primary)."""
        for label in self.labels:
            if label.primary:
                return label
        return self.labels[0] if self.labels else None

    @property
    def is_error(self) -> bool:
        """The severity is `error`."""
        return self.severity is Severity.ERROR


def sort_key(d: Diagnostic) -> tuple:
    p = d.primary
    return (p.span.file if p else "", p.span.start if p else -1, d.code, d.message)


def sorted_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Sorted by (file, offset, code) and with exact duplicates removed."""
    seen: set[Diagnostic] = set()
    out = []
    for d in sorted(diags, key=sort_key):
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diags)


class CompileError(Exception):
    """Raised by `afp_dsl.load` when a spec has errors; carries every diagnostic."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.is_error]
        first = errors[0] if errors else (self.diagnostics[0] if self.diagnostics else None)
        where = ""
        if first is not None and first.primary is not None:
            where = f"{first.primary.span.file}: "
        summary = f"{where}{first.code} {first.message}" if first else "compile error"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(summary + more)

    def __reduce__(self) -> tuple[type[CompileError], tuple[list[Diagnostic]]]:
        # (pickled as what it was made from, so it crosses a process pool; `args` is the summary)
        return (self.__class__, (self.diagnostics,))
