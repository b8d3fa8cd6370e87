"""Diagnostics turned into text for people and machines: text, short, json, sarif, github.

Role:       the entry point of every format; the drawing is in `render_text` (text, short) and
            `render_machine` (json, sarif, github), imported only when there is something to
            draw: a clean `afpc check` pays for neither.
Invariants: pure (no printing, no clock); `render` never raises for any diagnostic: spans past
            the text are clamped and a file without text is rendered without its excerpt.
            Lines and columns are 1-based; columns count code points, except in SARIF
            (UTF-16 code units, SARIF's default `columnKind`); ends are exclusive.
            Every non-empty output ends with a newline; diagnostics keep the given order
            (sort them first with `diagnostics.sorted_diagnostics`).
"""
from __future__ import annotations

import json
import re
from typing import Iterable, Mapping, Sequence

from . import codes
from .diagnostics import Diagnostic, Severity
from .source import SourceFile

FORMATS = ("text", "short", "json", "sarif", "github")


def render(diagnostics: Sequence[Diagnostic], sources: Mapping[str, str], fmt: str, *,
           color: bool = False, tool_version: str = "0.1.0") -> str:
    """Render diagnostics in one of `FORMATS`; `sources` maps a span's file key to its text.

    * `text`: rustc style (header, `-->` location, excerpt with `^` under the primary label and
      `-` under secondary ones, `= note:` / `= help:`), then `summary_line`; "" when empty.
      ANSI colour only when `color` is true.
    * `short`: `file:line:col: error[AFP201] unreachable-skill: message`, one per line.
    * `json`: a list of objects, one per diagnostic (`render_machine.json_doc`).
    * `sarif`: a SARIF 2.1.0 log with one run (valid against the OASIS schema).
    * `github`: workflow commands (`::error file=…,line=…,col=…,title=AFP201::message`, the
      message followed by the notes and help), at most 10 errors, warnings and notices, then
      one `::notice` counting the dropped ones: GitHub drops the excess silently, so the
      caller should also print the full `text` report to the log.
    Raises ValueError only for an unknown `fmt`.
    """
    diags = list(diagnostics)
    files = {k: SourceFile.of(k, v) for k, v in sources.items() if isinstance(v, str)}
    if fmt in ("text", "short"):
        if not diags:  # Speed: nothing to draw; `render_text` is not even imported
            return ""
        from . import render_text as t
        return t.text_report(diags, files, color) if fmt == "text" else t.short_report(diags, files)
    if fmt in ("json", "sarif"):  # imported here: render_machine builds on this module
        from . import render_machine as m
        doc = (m.json_doc if fmt == "json" else m.sarif_doc)(diags, files, tool_version)
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        from .render_machine import github_lines
        return "".join(line + "\n" for line in github_lines(diags, files))
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def summary_line(diagnostics: Iterable[Diagnostic]) -> str:
    """`error: 2 errors, 1 warning emitted`, led by the worst severity; "" when there are none."""
    counts = {s: 0 for s in Severity}
    for d in diagnostics:
        counts[_severity(d)] += 1
    parts = [f"{n} {s.value}{'' if n == 1 else 's'}" for s, n in counts.items() if n]
    if not parts:
        return ""
    worst = next(s for s in Severity if counts[s])
    return f"{worst.value}: {', '.join(parts)} emitted"


def explain(code_or_name: str) -> str | None:
    """The long text of a code for `afpc explain` (title line, summary, explanation), or None."""
    c = codes.lookup(code_or_name) if isinstance(code_or_name, str) else None
    if c is None:
        return None
    return f"{c.id} {c.name} ({c.severity.value})\n{c.summary}\n\n{c.explanation}"


def unknown_code(code: str) -> str:
    """What `afpc explain` says of a code it does not know: the closest code or name, if any."""
    from .suggest import closest
    word = code.strip()
    number = re.fullmatch(r"(?i)afp(\d+)", word)
    if number:  # (a slip of one digit: every id shares `AFP`, so similarity would match them all)
        guess = next((c for c in codes.REGISTRY if _one_slip(number.group(1), c[3:])), None)
    else:
        guess = closest(word.lower(), list(codes.BY_NAME))
    hint = f"did you mean `{guess}`?" if guess else "codes look like AFP101 or unknown-name"
    shown = code if len(code) <= 40 else code[:39] + "…"  # (as typed, but never a terminal escape)
    shown = f"`{shown}`" if shown.isprintable() else repr(shown)
    return f"unknown diagnostic code {shown}; {hint}"


def _one_slip(typed: str, digits: str) -> bool:
    """`typed` is `digits` with one digit changed, added or dropped, or two neighbours swapped."""
    if len(typed) != len(digits):
        short, long_ = sorted((typed, digits), key=len)
        return (len(long_) == len(short) + 1
                and any(long_[:i] + long_[i + 1:] == short for i in range(len(long_))))
    diff = [i for i in range(len(typed)) if typed[i] != digits[i]]
    if len(diff) == 2 and diff[1] == diff[0] + 1:
        a, b = diff
        return typed[a] == digits[b] and typed[b] == digits[a]
    return len(diff) == 1


def _severity(d: Diagnostic) -> Severity:
    try:
        return Severity(getattr(d.severity, "value", d.severity))
    except ValueError:
        return Severity.ERROR


def _name(code: str) -> str | None:
    c = codes.REGISTRY.get(code) if isinstance(code, str) else None
    return c.name if c else None
