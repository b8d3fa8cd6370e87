"""Machine-read diagnostic formats: versioned JSON, SARIF 2.1.0 and GitHub workflow commands.

Role:       the documents behind `render(..., fmt="json"|"sarif"|"github")`; positions and
            text cleaning come from `render_text`.
Invariants: plain dicts and strings, deterministic; never raises for any diagnostic. SARIF
            columns are UTF-16 code units (its default `columnKind`), JSON columns code points;
            ends are exclusive. Escaping of workflow commands follows `@actions/core`.
"""
from __future__ import annotations

import urllib.parse
from typing import Mapping

from . import codes
from .diagnostics import Diagnostic, Severity
from .render import _name, _severity
from .render_text import _locate
from .source import SourceFile, Span

PROJECT_URI = "https://github.com/afp-dsl/afp"  # placeholder until the project has a home
DOCS_URI = PROJECT_URI + "/blob/main/docs/diagnostics.md"
SARIF_SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                    "sarif-schema-2.1.0.json")
GITHUB_LIMIT = 10  # annotations of one kind GitHub shows per step; it drops the rest silently
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


# ---------------------------------------------------------------------------- json

def json_doc(diags: list[Diagnostic], files: Mapping[str, SourceFile], version: str) -> list:
    """A list of objects, one per diagnostic (tooling.md §3): code, name, severity, message, file,
    line, column, end_line, end_column, notes, help (the primary label's place; null where
    unknown), then `labels` (every label with its place, message and `primary`)."""
    return [_json_diag(d, files) for d in diags]


def _json_place(span: Span | None, files: Mapping[str, SourceFile]) -> dict:
    if span is None:
        return {"file": None, "line": None, "column": None, "end_line": None, "end_column": None}
    loc = _locate(span, files)
    return {"file": loc.file, "line": loc.line, "column": loc.col,
            "end_line": loc.end_line, "end_column": loc.end_col}


def _json_diag(d: Diagnostic, files: Mapping[str, SourceFile]) -> dict:
    prim = d.primary
    out = {"code": d.code, "name": _name(d.code), "severity": _severity(d).value,
           "message": d.message}
    out.update(_json_place(prim.span if prim else None, files))
    out["notes"] = list(d.notes)
    out["help"] = d.help
    out["labels"] = [{**_json_place(lab.span, files), "message": lab.message,
                      "primary": lab is prim or bool(lab.primary)} for lab in d.labels]
    return out


# ---------------------------------------------------------------------------- sarif

def sarif_doc(diags: list[Diagnostic], files: Mapping[str, SourceFile], version: str) -> dict:
    """A SARIF 2.1.0 log: one run, a rule for every code of the registry (tooling.md §3: "rules
    from the code registry", so a viewer can describe a rule before it first fires) and for any
    other code used, one result per diagnostic."""
    ids = sorted(set(codes.REGISTRY) | {str(d.code) for d in diags})
    index = {code: i for i, code in enumerate(ids)}
    driver = {"name": "afpc", "version": version, "informationUri": PROJECT_URI,
              "rules": [_rule(code) for code in ids]}
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "columnKind": "utf16CodeUnits",
                  "results": [_result(d, index, files) for d in diags]}],
    }


def _rule(code_id: str) -> dict:
    c = codes.REGISTRY.get(code_id)
    if c is None:
        return {"id": code_id}
    return {"id": c.id, "name": c.name,
            "shortDescription": {"text": c.summary},
            "fullDescription": {"text": c.explanation or c.summary},
            "defaultConfiguration": {"level": _LEVEL[c.severity]},
            "helpUri": f"{DOCS_URI}#{c.id.lower()}"}


def _message(d: Diagnostic) -> str:
    lines = [d.message] + [f"note: {n}" for n in d.notes] + ([f"help: {d.help}"] if d.help else [])
    return "\n".join(str(x) for x in lines)


def _result(d: Diagnostic, index: Mapping[str, int], files: Mapping[str, SourceFile]) -> dict:
    code = str(d.code)
    out = {"ruleId": code, "ruleIndex": index[code], "level": _LEVEL[_severity(d)],
           "message": {"text": _message(d)}}
    prim = d.primary
    if prim is not None:
        out["locations"] = [_location(prim.span, prim.message, files)]
        related = [lab for lab in d.labels if lab is not prim]
        if related:
            out["relatedLocations"] = [{"id": i, **_location(lab.span, lab.message, files)}
                                       for i, lab in enumerate(related)]
    return out


def _location(span: Span, message: str, files: Mapping[str, SourceFile]) -> dict:
    loc = _locate(span, files)
    physical: dict = {"artifactLocation": {"uri": artifact_uri(loc.file)}}
    if loc.line is not None:
        physical["region"] = {"startLine": loc.line, "startColumn": loc.col16,
                              "endLine": loc.end_line, "endColumn": loc.end_col16}
    out: dict = {"physicalLocation": physical}
    if message:
        out["message"] = {"text": str(message)}
    return out


def artifact_uri(path: str) -> str:
    """A file key as a relative URI reference: posix separators, unsafe characters %-encoded (a
    name that is not UTF-8, held with `surrogateescape`, as its own bytes). A first segment
    with a `:` gets `./` in front, or it would read as a scheme (RFC 3986 §4.2: `c:x/d.afp` is
    scheme `c`)."""
    uri = urllib.parse.quote(str(path).replace("\\", "/"), safe="/!$&'()*+,;=:@-._~",
                             errors="surrogateescape")
    return "./" + uri if ":" in uri.partition("/")[0] else uri


# ---------------------------------------------------------------------------- github

def escape_data(s: str) -> str:
    """Escape a workflow command's message, as `@actions/core` `escapeData` does."""
    return str(s).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    """Escape a workflow command property value, as `@actions/core` `escapeProperty` does."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def github_lines(diags: list[Diagnostic], files: Mapping[str, SourceFile]) -> list[str]:
    """One `::error|warning|notice` command per diagnostic, capped per kind at GITHUB_LIMIT.

    When some are dropped, notices keep one place free for a final `::notice` counting them.
    """
    kinds = [_severity(d) for d in diags]
    over = sum(max(0, kinds.count(s) - GITHUB_LIMIT) for s in (Severity.ERROR, Severity.WARNING))
    notes = kinds.count(Severity.NOTE)
    caps = {s: GITHUB_LIMIT for s in Severity}
    if over or notes > GITHUB_LIMIT:
        caps[Severity.NOTE] = GITHUB_LIMIT - 1
    seen = {s: 0 for s in Severity}
    out, rest = [], []
    for d, s in zip(diags, kinds):
        seen[s] += 1
        (out if seen[s] <= caps[s] else rest).append(d)
    lines = [_command(d, files) for d in out]
    if rest:
        lines.append("::notice title=afpc::" + escape_data(
            f"{len(rest)} more diagnostic{'' if len(rest) == 1 else 's'} not shown as annotations "
            "(GitHub shows 10 of each kind per step); they follow in the log"))
        lines += map(_log_line, _short_lines(rest, files))
    return lines


def _short_lines(diags: list[Diagnostic], files: Mapping[str, SourceFile]) -> list[str]:
    from .render_text import short_report
    return short_report(diags, files).splitlines()


def _log_line(line: str) -> str:
    """A plain log line, never read as a workflow command: the runner trims leading blanks
    before looking for `::`, so a file named `::error title=x::y.afp` would be one; a visible
    prefix keeps every line text."""
    return "afpc: " + line


def _command(d: Diagnostic, files: Mapping[str, SourceFile]) -> str:
    props: list[tuple[str, object]] = []
    prim = d.primary
    if prim is not None:
        loc = _locate(prim.span, files)
        props.append(("file", loc.file))
        if loc.line is not None:  # (no endLine/endColumn: tooling.md §3 names these four)
            props += [("line", loc.line), ("col", loc.col)]
    props.append(("title", str(d.code)))  # tooling.md §3: `file=…,line=…,col=…,title=AFP201`
    head = "::" + _COMMAND[_severity(d)] + " " + ",".join(
        f"{k}={escape_property(str(v))}" for k, v in props)
    return f"{head}::{escape_data(_message(d))}"
