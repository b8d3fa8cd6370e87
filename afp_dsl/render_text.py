"""Diagnostics drawn for people (`text`, `short`) and the positions every format reports.

Role:       `render` dispatches here only when there is something to draw (a clean check never
            imports this module); `render_machine` takes its positions and cleaning from here.
Invariants: pure; never raises for any diagnostic: spans past the text are clamped, a line wider
            than `WIDTH` columns is drawn cut around the span, and a file
            without text is drawn without its excerpt. Lines and columns are 1-based; columns
            count code points (`col16`: UTF-16 code units, for SARIF); ends are exclusive.
"""
from __future__ import annotations

import unicodedata
from typing import Mapping

import attrs

from .diagnostics import Diagnostic, Label
from .render import _name, _severity, summary_line
from .source import SourceFile, Span

TAB = 4  # a tab is drawn as this many spaces, in the excerpt and under it
WIDTH = 200  # a source line wider than this many columns is drawn cut around the span
LEAD = 60  # columns drawn before the span's start in a cut line


def text_report(diags: list[Diagnostic], files: Mapping[str, SourceFile], color: bool) -> str:
    """The `text` format of `render` (see there)."""
    return _text(diags, files, _Paint(color))


def short_report(diags: list[Diagnostic], files: Mapping[str, SourceFile]) -> str:
    """The `short` format of `render` (see there)."""
    return "".join(_short(d, files) + "\n" for d in diags)


# ---------------------------------------------------------------------------- positions

@attrs.frozen
class _Loc:
    """Where a span is, resolved against its file's text when that text is known."""

    file: str
    line: int | None = None
    col: int | None = None        # code points
    end_line: int | None = None
    end_col: int | None = None    # exclusive
    last_line: int | None = None  # line of the last character covered
    col16: int | None = None      # UTF-16 code units
    end_col16: int | None = None


def _locate(span: Span, files: Mapping[str, SourceFile]) -> _Loc:
    sf = files.get(span.file)
    if sf is None:  # (the text is unknown, e.g. unreadable; its start is still line 1, column 1)
        return _Loc(span.file, 1, 1, 1, 1, 1, 1, 1) if span.start == span.end == 0 else _Loc(span.file)
    n = len(sf.text)
    start = max(0, min(span.start, n))
    end = max(start, min(span.end, n))
    line, col = sf.line_col(start)
    end_line, end_col = sf.line_col(end)
    last_line = sf.line_col(end - 1)[0] if end > start else line
    return _Loc(span.file, line, col, end_line, end_col, last_line,
                _utf16_col(sf, line, start), _utf16_col(sf, end_line, end))


def _utf16_col(sf: SourceFile, line: int, offset: int) -> int:
    prefix = sf.text[sf.line_starts[line - 1]:offset]
    return 1 + sum(2 if ord(c) > 0xFFFF else 1 for c in prefix)


# ---------------------------------------------------------------------------- cleaning

_BIDI = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def _glyph(c: str) -> tuple[str, int]:
    """How one source character is drawn, and its width in terminal columns."""
    o = ord(c)
    if c == "\t":
        return " " * TAB, TAB
    if o < 0x20:
        return chr(0x2400 + o), 1
    if o == 0x7F:
        return "\u2421", 1
    cat = unicodedata.category(c)
    if 0x80 <= o < 0xA0 or cat in ("Cf", "Zl", "Zp", "Cs"):
        return "\ufffd", 1
    if cat in ("Mn", "Me"):
        return c, 0
    return c, 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def _clean(text: str) -> str:
    """Message text made safe for a terminal: newlines kept, other control characters shown."""
    text = str(text).replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for c in text:
        o = ord(c)
        if c in "\n\t":
            out.append(c)
        elif o < 0x20 or o == 0x7F:
            out.append(chr(0x2400 + o) if o < 0x20 else "\u2421")
        elif 0x80 <= o < 0xA0 or o in _BIDI or 0xD800 <= o < 0xE000 or o in (0x2028, 0x2029):
            out.append("\ufffd")
        else:
            out.append(c)
    return "".join(out)


def _one_line(text: str) -> str:
    return " ".join(_clean(text).split("\n"))


# ---------------------------------------------------------------------------- text

_STYLES = {"error": "1;31", "warning": "1;33", "note": "1;32", "help": "1;36",
           "bold": "1", "gutter": "1;34"}


@attrs.frozen
class _Paint:
    on: bool

    def __call__(self, style: str, text: str) -> str:
        if not self.on or not text:
            return text
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def _text(diags: list[Diagnostic], files: Mapping[str, SourceFile], paint: _Paint) -> str:
    if not diags:
        return ""
    blocks = ["\n".join(_text_one(d, files, paint)) for d in diags]
    summary = summary_line(diags)
    sev = summary.split(":", 1)[0]
    blocks.append(paint(sev, sev) + paint("bold", summary[len(sev):]))
    return "\n\n".join(blocks) + "\n"


def _text_one(d: Diagnostic, files: Mapping[str, SourceFile], paint: _Paint) -> list[str]:
    sev = _severity(d).value
    out = [paint(sev, f"{sev}[{_clean(d.code)}]") + paint("bold", ": " + _clean(d.message))]
    groups = _groups(d, files)
    shown = [n for _, rows in groups for n in rows]
    w = len(str(max(shown))) if shown else 1
    bar = " " * w + " " + paint("gutter", "|")
    for i, (locs, rows) in enumerate(groups):
        out.extend(_excerpt(d, locs, rows, files, w, first=(i == 0), paint=paint))
    if groups and any(rows for _, rows in groups) and (d.notes or d.help):
        out.append(bar)
    for kind, text in [("note", n) for n in d.notes] + ([("help", d.help)] if d.help else []):
        out.extend(_note(kind, text, w, paint))
    return out


def _groups(d: Diagnostic, files: Mapping[str, SourceFile]) -> list[tuple[list, list[int]]]:
    """Labels grouped by file (the primary's first), each with the lines its excerpt shows."""
    prim = d.primary
    ordered = ([prim] if prim else []) + [lab for lab in d.labels if lab is not prim]
    by_file: dict[str, list[tuple[Label, _Loc]]] = {}
    for lab in ordered:
        by_file.setdefault(lab.span.file, []).append((lab, _locate(lab.span, files)))
    groups = []
    for locs in by_file.values():
        known = locs[0][1].file in files  # (no excerpt of a file whose text is unknown)
        rows = sorted({loc.line for _, loc in locs if loc.line is not None}) if known else []
        groups.append((locs, rows))
    return groups


def _excerpt(d: Diagnostic, locs: list, rows: list[int], files: Mapping[str, SourceFile],
             w: int, *, first: bool, paint: _Paint) -> list[str]:
    lab0, loc0 = locs[0]
    arrow = "-->" if first else ":::"
    where = _clean(loc0.file) + (f":{loc0.line}:{loc0.col}" if loc0.line is not None else "")
    out = [" " * w + paint("gutter", arrow) + " " + where]
    bar = " " * w + " " + paint("gutter", "|")
    prim = d.primary
    if not rows:  # no text for this file: the label messages alone
        for lab, _ in locs:
            if lab.message:
                mark = "^" if (lab.primary or lab is prim) else "-"
                out.append(f"{bar} {mark} {_one_line(lab.message)}")
        return out
    sf = files[loc0.file]
    out.append(bar)
    prev = None
    for n in rows:
        if prev is not None and n - prev == 2:
            out.append(_source_row(sf, prev + 1, w, paint))
        elif prev is not None and n - prev > 2:
            out.append(paint("gutter", "..."))
        here = sorted(((lab, loc) for lab, loc in locs if loc.line == n),
                      key=lambda p: (p[1].col, not (p[0].primary or p[0] is prim)))
        focus = next((loc for lab, loc in here if lab.primary or lab is prim), here[0][1] if here else None)
        window = _window(sf.line_text(n), focus.col - 1 if focus is not None else 0)
        out.append(_source_row(sf, n, w, paint, window))
        for lab, loc in here:
            out.extend(_underline(sf, lab, loc, lab.primary or lab is prim, w, paint,
                                  _severity(d).value, window))
        prev = n
    return out


def _window(line: str, at: int) -> tuple[int, int]:
    """The part of `line` drawn (code points `lo` to `hi`): all of it when it fits in `WIDTH`
    terminal columns, else `WIDTH` columns around `at` (a minified spec's one line is not
    printed whole for each diagnostic on it); `…` stands for what is left out."""
    widths = _draw(line)[1]
    if sum(widths) <= WIDTH:
        return 0, len(line)
    at = max(0, min(at, len(line)))
    lo, room = at, LEAD
    while lo > 0 and widths[lo - 1] <= room:
        lo -= 1
        room -= widths[lo]
    hi, room = lo, WIDTH - 2  # (two columns for the `…` on either side)
    while hi < len(line) and widths[hi] <= room:
        room -= widths[hi]
        hi += 1
    return lo, max(hi, min(at + 1, len(line)))


def _draw(line: str) -> tuple[str, list[int]]:
    glyphs = [_glyph(c) for c in line]
    return "".join(g for g, _ in glyphs), [wd for _, wd in glyphs]


def _source_row(sf: SourceFile, n: int, w: int, paint: _Paint, window: tuple[int, int] | None = None) -> str:
    line = sf.line_text(n)
    lo, hi = window or _window(line, 0)
    drawn, _ = _draw(line[lo:hi])
    drawn = ("…" if lo > 0 else "") + drawn + ("…" if hi < len(line) else "")
    return (paint("gutter", f"{n:>{w}} |") + " " + drawn).rstrip()


def _underline(sf: SourceFile, lab: Label, loc: _Loc, primary: bool, w: int, paint: _Paint,
               sev: str, window: tuple[int, int] | None = None) -> list[str]:
    line = sf.line_text(loc.line)
    lo, hi = window or (0, len(line))
    _, widths = _draw(line)
    s = max(lo, min(loc.col - 1, len(line), hi))
    e = loc.end_col - 1 if loc.end_line == loc.line else len(line)
    e = max(s, min(e, hi))
    pad = sum(widths[lo:s]) + (1 if lo > 0 else 0)  # (after the `…` that stands for the cut)
    under = max(1, sum(widths[s:e]))
    mark = "^" if primary else "-"
    msg = _clean(lab.message)
    if loc.last_line is not None and loc.last_line > loc.line:
        tail = f"(ends on line {loc.last_line})"
        msg = f"{msg} {tail}" if msg else tail
    lines = msg.split("\n")
    bar = " " * w + " " + paint("gutter", "|")
    marks = paint(sev if primary else "gutter", mark * under)
    text = paint(sev, lines[0]) if primary else paint("gutter", lines[0])
    out = [f"{bar} {' ' * pad}{marks} {text}".rstrip()]
    indent = " " * (pad + under + 1)
    out.extend(f"{bar} {indent}{more}".rstrip() for more in lines[1:])
    return out


def _note(kind: str, text: str, w: int, paint: _Paint) -> list[str]:
    lines = _clean(text).split("\n")
    head = " " * w + " " + paint("bold", f"= {kind}:")
    out = [f"{head} {lines[0]}".rstrip()]
    indent = " " * (w + len(kind) + 5)
    out.extend(f"{indent}{more}".rstrip() for more in lines[1:])
    return out


# ---------------------------------------------------------------------------- short

def _short(d: Diagnostic, files: Mapping[str, SourceFile]) -> str:
    prim = d.primary
    where = ""
    if prim is not None:
        loc = _locate(prim.span, files)
        where = _one_line(loc.file) + (f":{loc.line}:{loc.col}" if loc.line is not None else "")
        where += ": "
    name = _name(d.code)
    head = f"{_severity(d).value}[{_one_line(d.code)}]" + (f" {name}" if name else "")
    return f"{where}{head}: {_one_line(d.message)}"
