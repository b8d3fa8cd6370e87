"""Diagnostic renderers: text layout edge cases, short, json, github, summary, explain."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import codes
from afp_dsl.codes import diag
from afp_dsl.diagnostics import Diagnostic, Label, Severity
from afp_dsl.render import FORMATS, explain, render, summary_line
from afp_dsl.render_machine import escape_data, escape_property
from afp_dsl.source import Span

SUPPORT = "\n" * 13 + '  route triage -> refnd when intent == "refund"\n'


def at(text: str, needle: str, file: str = "f.afp", length: int | None = None) -> Span:
    i = text.index(needle)
    return Span(file, i, i + (len(needle) if length is None else length))


def text_of(d: Diagnostic | list, sources: dict) -> str:
    return render(d if isinstance(d, list) else [d], sources, "text")


def row_after_gutter(out: str, startswith: str) -> str:
    line = next(ln for ln in out.splitlines() if ln.startswith(startswith))
    return line.split("| ", 1)[1] if "| " in line else ""


# ---------------------------------------------------------------------------- text

def test_text_matches_the_style_guide_example():
    d = diag("AFP101", "unknown skill `refnd`", at(SUPPORT, "refnd", "support.afp"),
             "not defined in this module", help="did you mean `refund`?")
    assert text_of(d, {"support.afp": SUPPORT}) == (
        "error[AFP101]: unknown skill `refnd`\n"
        "  --> support.afp:14:19\n"
        "   |\n"
        '14 |   route triage -> refnd when intent == "refund"\n'
        "   |                   ^^^^^ not defined in this module\n"
        "   |\n"
        "   = help: did you mean `refund`?\n"
        "\n"
        "error: 1 error emitted\n")


def test_notes_come_before_help_and_multiline_notes_are_indented():
    d = diag("AFP101", "m", at(SUPPORT, "refnd", "s"), "", notes=["first\nsecond"], help="h")
    out = text_of(d, {"s": SUPPORT})
    assert "   = note: first\n           second\n   = help: h\n" in out


def test_tabs_expand_consistently_so_carets_align():
    src = "\tx\trefnd = 1\n"
    out = text_of(diag("AFP101", "m", at(src, "refnd"), "here"), {"f.afp": src})
    shown = row_after_gutter(out, "1 |")
    assert "\t" not in out
    assert shown == "    x    refnd = 1"
    carets = next(ln for ln in out.splitlines() if "^" in ln).split("| ", 1)[1]
    assert carets.index("^") == shown.index("refnd")
    assert carets.count("^") == 5
    assert "--> f.afp:1:4" in out  # columns stay code points, not display columns


def test_crlf_lines_render_without_carriage_returns():
    src = "a\r\nbb refnd\r\nc\r\n"
    out = text_of(diag("AFP101", "m", at(src, "refnd"), "x"), {"f.afp": src})
    assert "\r" not in out
    assert "--> f.afp:2:4" in out
    assert "2 | bb refnd\n  |    ^^^^^ x\n" in out


def test_span_at_eof_without_final_newline_gets_one_caret():
    out = text_of(diag("AFP001", "unexpected end of input", Span("f.afp", 3, 3), "here"),
                  {"f.afp": "abc"})
    assert "--> f.afp:1:4" in out
    assert "1 | abc\n  |    ^ here\n" in out


def test_span_at_eof_after_final_newline_points_at_the_empty_last_line():
    out = text_of(diag("AFP001", "m", Span("f.afp", 4, 4), "eof"), {"f.afp": "abc\n"})
    assert "--> f.afp:2:1" in out
    assert "2 |\n  | ^ eof\n" in out


@pytest.mark.parametrize("span", [Span("f.afp", 0, 0), Span("f.afp", 10, 30), Span("f.afp", -4, 2)])
def test_empty_file_and_out_of_range_spans_are_clamped(span):
    out = text_of(diag("AFP001", "empty", span, "here"), {"f.afp": ""})
    assert "--> f.afp:1:1" in out
    assert "1 |\n  | ^ here\n" in out


def test_zero_width_span_inside_a_line_gets_one_caret():
    src = "ab cd\n"
    out = text_of(diag("AFP001", "m", Span("f.afp", 2, 2), "missing `=`"), {"f.afp": src})
    assert "  |   ^ missing `=`\n" in out


def test_multiline_span_underlines_to_the_end_of_its_first_line_and_says_where_it_ends():
    src = "skill a {\n  x\n}\nnext\n"
    span = Span("f.afp", 0, src.index("}") + 1)
    out = text_of(diag("AFP101", "m", span, "this block"), {"f.afp": src})
    assert "1 | skill a {\n  | ^^^^^^^^^ this block (ends on line 3)\n" in out
    assert "2 |" not in out and "3 |" not in out


def test_span_ending_with_the_newline_is_not_multiline():
    src = "skill a\nnext\n"
    out = text_of(diag("AFP101", "m", Span("f.afp", 0, 8), "l"), {"f.afp": src})
    assert "ends on line" not in out
    assert "  | ^^^^^^^ l\n" in out


def test_secondary_label_before_the_primary_is_shown_in_file_order():
    src = "tool a {}\n\n\n\nskill b { tools = [a, a] }\n"
    first = Label(at(src, "a {", length=1), "first defined here", False)
    d = diag("AFP103", "duplicate `a`", Span("f.afp", src.rindex("a"), src.rindex("a") + 1),
             "defined again", secondary=(first,))
    out = text_of(d, {"f.afp": src})
    lines = out.splitlines()
    assert lines[1] == " --> f.afp:5:23"  # the primary's place, even though it comes later
    assert lines[2:7] == [
        "  |",
        "1 | tool a {}",
        "  |      - first defined here",
        "...",
        "5 | skill b { tools = [a, a] }",
    ]
    assert lines[7] == "  |                       ^ defined again"


def test_labels_on_one_line_are_drawn_in_column_order_and_a_one_line_gap_is_shown():
    src = "a\nx = y + y\nb\n"
    sec = Label(Span("f.afp", 2, 3), "target", False)
    other = Label(Span("f.afp", 0, 1), "", False)
    d = diag("AFP305", "m", Span("f.afp", 10, 11), "this", secondary=(sec, other))
    lines = text_of(d, {"f.afp": src}).splitlines()
    assert "1 | a" in lines and "2 | x = y + y" in lines
    i = lines.index("2 | x = y + y")
    assert lines[i + 1] == "  | - target"
    assert lines[i + 2] == "  |         ^ this"


def test_gap_of_one_line_shows_the_line_instead_of_dots():
    src = "a\nb\nc\n"
    d = diag("AFP103", "m", Span("f.afp", 4, 5), "p", secondary=(Label(Span("f.afp", 0, 1), "s", False),))
    out = text_of(d, {"f.afp": src})
    assert "1 | a\n  | - s\n2 | b\n3 | c\n  | ^ p\n" in out
    assert "..." not in out


def test_labels_in_another_file_get_their_own_section():
    d = diag("AFP103", "m", Span("a.afp", 0, 1), "here",
             secondary=(Label(Span("b.afp", 2, 3), "there", False),))
    out = text_of(d, {"a.afp": "x\n", "b.afp": "yyz\n"})
    assert " --> a.afp:1:1\n  |\n1 | x\n  | ^ here\n ::: b.afp:1:3\n  |\n1 | yyz\n  |   - there\n" in out


def test_gutter_width_comes_from_the_largest_line_shown():
    src = "".join(f"l{i}\n" for i in range(1, 120))
    d = diag("AFP103", "m", at(src, "l110"), "p", secondary=(Label(at(src, "l9\n", length=2), "s", False),))
    lines = text_of(d, {"f.afp": src}).splitlines()
    assert lines[1] == "   --> f.afp:110:1"
    assert "  9 | l9" in lines and "110 | l110" in lines
    assert "    |" in lines


@pytest.mark.parametrize("prefix,pad", [("名前 = ", 7), ("😀 ", 3), ("e\u0301 = ", 4), ("\u202e", 1)])
def test_unicode_display_width(prefix, pad):
    src = prefix + "refnd\n"
    out = text_of(diag("AFP101", "m", at(src, "refnd"), "x"), {"f.afp": src})
    carets = next(ln for ln in out.splitlines() if "^" in ln)
    assert carets == "  | " + " " * pad + "^^^^^ x"
    assert "\u202e" not in out  # bidi controls are not passed to the terminal


def test_wide_characters_inside_the_span_widen_the_underline():
    src = "x 名前 y\n"
    out = text_of(diag("AFP101", "m", at(src, "名前"), ""), {"f.afp": src})
    assert "  |   ^^^^\n" in out


def test_no_ansi_without_colour_even_for_escape_characters_in_the_source():
    src = "a\x1b[31m = refnd\n"
    d = diag("AFP101", "bad \x1b[2J name", at(src, "refnd"), "x", notes=["n\x1b"])
    plain = text_of(d, {"f.afp": src})
    assert "\x1b" not in plain
    assert "\u241b" in plain  # the escape shown as a control picture
    coloured = render([d], {"f.afp": src}, "text", color=True)
    assert "\x1b[1;31merror[AFP101]\x1b[0m" in coloured
    assert "\x1b[2J" not in coloured


def test_warnings_are_yellow_when_coloured():
    d = diag("AFP202", "w", Span("f.afp", 0, 1), "")
    out = render([d], {"f.afp": "x"}, "text", color=True)
    assert out.startswith("\x1b[1;33mwarning[AFP202]\x1b[0m")


def test_diagnostic_without_labels_renders_header_and_notes():
    d = diag("AFP108", "modules import each other in a cycle", None,
             notes=["a.afp imports b.afp"], help="move shared declarations")
    assert text_of(d, {}) == (
        "error[AFP108]: modules import each other in a cycle\n"
        "  = note: a.afp imports b.afp\n"
        "  = help: move shared declarations\n"
        "\n"
        "error: 1 error emitted\n")


def test_missing_source_text_renders_without_an_excerpt():
    d = diag("AFP107", "import not found", Span("gone.afp", 5, 9), "this import")
    out = text_of(d, {})
    assert out.startswith("error[AFP107]: import not found\n --> gone.afp\n  | ^ this import\n")
    assert render([d], {}, "short") == "gone.afp: error[AFP107] import-not-found: import not found\n"


def test_several_diagnostics_are_separated_and_summarised():
    src = "ab\n"
    ds = [diag("AFP101", "e1", Span("f.afp", 0, 1)), diag("AFP202", "w", Span("f.afp", 1, 2)),
          diag("AFP101", "e2", Span("f.afp", 1, 2))]
    out = text_of(ds, {"f.afp": src})
    assert out.count("\n\nerror[") == 1 and out.count("\n\nwarning[") == 1
    assert out.endswith("\n\nerror: 2 errors, 1 warning emitted\n")


def test_empty_input_renders_nothing_in_line_formats():
    for fmt in ("text", "short", "github"):
        assert render([], {}, fmt) == ""


def test_unknown_format_is_a_value_error():
    with pytest.raises(ValueError, match="unknown format"):
        render([], {}, "xml")


# ---------------------------------------------------------------------------- short, json

def test_short_format():
    src = "a\n  skill b {}\n"
    ds = [diag("AFP202", "skill `b` is unreachable", at(src, "b"), ""),
          Diagnostic("AFP999", Severity.NOTE, "multi\nline")]
    assert render(ds, {"f.afp": src}, "short") == (
        "f.afp:2:9: warning[AFP202] unreachable-skill: skill `b` is unreachable\n"
        "note[AFP999]: multi line\n")


def test_json_document_shape_and_keys():
    src = "x 😀 refnd\n"
    d = diag("AFP101", "unknown", at(src, "refnd"), "p", notes=["n"], help="h",
             secondary=(Label(Span("f.afp", 0, 1), "s", False),))
    w = diag("AFP202", "w", None)
    doc = json.loads(render([d, w], {"f.afp": src}, "json", tool_version="9.9"))
    assert isinstance(doc, list) and len(doc) == 2  # tooling.md §3: a list of objects
    first = doc[0]
    expected_keys = ["code", "name", "severity", "message", "file", "line", "column",
                     "end_line", "end_column", "notes", "help"]
    assert list(first)[:11] == expected_keys
    assert (first["line"], first["column"], first["end_line"], first["end_column"]) == (1, 5, 1, 10)
    assert first["name"] == "unknown-name" and first["notes"] == ["n"] and first["help"] == "h"
    assert [lab["primary"] for lab in first["labels"]] == [True, False]
    assert doc[1]["file"] is None and doc[1]["labels"] == []


# ---------------------------------------------------------------------------- github

def test_github_command_and_escaping():
    src = "x refnd\n"
    d = diag("AFP101", "100% wrong\r\nsecond: a,b", at(src, "refnd", "dir/a:b,c.afp"), "",
             help="fix it")
    out = render([d], {"dir/a:b,c.afp": src}, "github")
    assert out == ("::error file=dir/a%3Ab%2Cc.afp,line=1,col=3,"
                   "title=AFP101::100%25 wrong%0D%0Asecond: a,b%0Ahelp: fix it\n")


def test_github_escape_functions_match_actions_core():
    assert escape_data("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad:e,f"
    assert escape_property("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad%3Ae%2Cf"
    assert escape_property("%3A") == "%253A"  # % first, so nothing is escaped twice


def test_github_severities_map_to_commands():
    ds = [diag("AFP202", "w", None), Diagnostic("AFP999", Severity.NOTE, "n")]
    lines = render(ds, {}, "github").splitlines()
    assert lines == ["::warning title=AFP202::w", "::notice title=AFP999::n"]


def test_github_caps_annotations_and_counts_the_rest():
    ds = ([diag("AFP101", f"e{i}", None) for i in range(13)]
          + [diag("AFP202", f"w{i}", None) for i in range(11)]
          + [Diagnostic("AFP999", Severity.NOTE, f"n{i}") for i in range(3)])
    lines = render(ds, {}, "github").splitlines()
    assert sum(ln.startswith("::error ") for ln in lines) == 10
    assert sum(ln.startswith("::warning ") for ln in lines) == 10
    assert sum(ln.startswith("::notice title=AFP999") for ln in lines) == 3
    assert lines[-5].startswith("::notice title=afpc::4 more diagnostics not shown")
    assert "::error title=AFP101::e9" in lines and not any("::e10" in ln for ln in lines)
    # (the ones GitHub would drop are printed in the log, as `short` writes them)
    assert lines[-4:] == ["afpc: " + ln for ln in render(ds, {}, "short").splitlines()
                          if ln.endswith(("e10", "e11", "e12", "w10"))]


def test_github_keeps_a_notice_slot_for_the_count():
    ds = [Diagnostic("AFP999", Severity.NOTE, f"n{i}") for i in range(11)]
    lines = render(ds, {}, "github").splitlines()
    assert len(lines) == 12 and lines[-3].startswith("::notice title=afpc::2 more diagnostics")
    assert lines[-2:] == ["afpc: " + ln for ln in render(ds[-2:], {}, "short").splitlines()]


def test_github_under_the_cap_adds_no_count():
    ds = [diag("AFP101", f"e{i}", None) for i in range(10)]
    assert "title=afpc" not in render(ds, {}, "github")


# ---------------------------------------------------------------------------- summary, explain

def test_summary_line():
    e, w = diag("AFP101", "e", None), diag("AFP202", "w", None)
    n = Diagnostic("AFP999", Severity.NOTE, "n")
    assert summary_line([]) == ""
    assert summary_line([e, e, w]) == "error: 2 errors, 1 warning emitted"
    assert summary_line([w]) == "warning: 1 warning emitted"
    assert summary_line([n, w, w]) == "warning: 2 warnings, 1 note emitted"


def test_explain_by_code_and_name():
    text = explain("unknown-name")
    assert text == explain("afp101")
    c = codes.REGISTRY["AFP101"]
    assert text == f"AFP101 unknown-name (error)\n{c.summary}\n\n{c.explanation}"
    assert explain("AFP202").startswith("AFP202 unreachable-skill (warning)\n")
    assert explain("AFP000") is None and explain("nope") is None


@pytest.mark.parametrize("typed,guess", [
    ("unknown-nam", "unknown-name"), ("unknwon-name", "unknown-name"),   # a name, by similarity
    ("AFP3040", "AFP304"), ("afp340", "AFP304"), ("AFP2011", "AFP201"),   # one digit slipped
    ("AFP999", None), ("nope", None), ("AFP", None),
])
def test_an_unknown_code_gets_the_closest_one(typed, guess):
    """`afpc explain unknown-nam` said only "codes look like AFP101": no "did you mean"."""
    from afp_dsl.render import unknown_code
    said = unknown_code(typed)
    assert said.startswith(f"unknown diagnostic code `{typed}`; ")
    if guess:
        assert said.endswith(f"did you mean `{guess}`?") and explain(guess) is not None
    else:
        assert said.endswith("codes look like AFP101 or unknown-name")


# ---------------------------------------------------------------------------- never raises

FILES = ["a.afp", "dir/b c.afp", "", "x:y,%.afp"]
ALPHABET = st.sampled_from(list("ab =\t\r\n{}\"%:,") + ["😀", "名", "\x1b", "\u0301", "\u202e",
                                                       "\x00", "\u2028", "\x85", "\ud800"])
texts = st.text(ALPHABET, max_size=40)


@st.composite
def diagnostics(draw):
    def span():
        return Span(draw(st.sampled_from(FILES)), draw(st.integers(-5, 60)), draw(st.integers(-5, 80)))
    labels = tuple(Label(span(), draw(texts), draw(st.booleans()))
                   for _ in range(draw(st.integers(0, 3))))
    code = draw(st.sampled_from(sorted(codes.REGISTRY)) | st.text(max_size=8))
    return Diagnostic(code, draw(st.sampled_from(list(Severity))), draw(texts), labels,
                      tuple(draw(st.lists(texts, max_size=2))), draw(st.none() | texts))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ds=st.lists(diagnostics(), max_size=4),
       sources=st.dictionaries(st.sampled_from(FILES), texts, max_size=3),
       color=st.booleans())
def test_render_never_raises(ds, sources, color):
    for fmt in FORMATS:
        out = render(ds, sources, fmt, color=color)
        assert isinstance(out, str)
        if fmt in ("json", "sarif"):
            json.loads(out)
        if fmt == "github":
            assert all(ln.startswith("::") for ln in out.split("\n")[:-1])
    if ds:
        assert render(ds, sources, "text").endswith(summary_line(ds) + "\n")
        assert render(ds, sources, "short").count("\n") == len(ds)


def test_an_unknown_code_is_shown_without_terminal_escapes_and_shortened():
    """`afpc explain` echoed what was typed raw: an escape sequence reached the terminal, and a
    300-character word was printed whole."""
    from afp_dsl.render import unknown_code
    assert unknown_code("AFP\x1b[31m9").startswith("unknown diagnostic code 'AFP\\x1b[31m9'; ")
    said = unknown_code("X" * 300)
    assert said.startswith("unknown diagnostic code `" + "X" * 39 + "…`; ") and len(said) < 120
