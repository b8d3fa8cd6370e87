"""`afp_dsl.format_source`: each layout rule of docs/cli.md (`afpc fmt`), its refusals, and its
safety net. The whole-file cases are goldens (tests/golden/fmt/); the properties are in
tests/test_fmt_properties.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import afp_dsl
from afp_dsl import fmt, fmt_layout, parser
from afp_dsl.diagnostics import CompileError
from afp_dsl.fmt import FormatterBug, format_source


def block(*lines: str) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("messy, tidy", [
    # spacing around operators and keywords, one space
    ('agent a{model="m"}', 'agent a { model = "m" }'),
    ("graph g{route a->b   on t  when x==1 and y!=2}", "graph g { route a -> b on t when x == 1 and y != 2 }"),
    ("graph g{entry a when x<1 or x>=2 or x<=3 or x>4}", "graph g { entry a when x < 1 or x >= 2 or x <= 3 or x > 4 }"),
    ('tool t{output{s:"a"|"b"}}', 'tool t { output { s: "a" | "b" } }'),
    # none before , : ? ) ] . and none after ( [ .
    ('fact f{data={ a : [ 1 , 2 ] , b : ( 1 ) }}', "fact f { data = { a: [1, 2], b: (1) } }"),
    ("tool t{input{n ? : number}}", "tool t { input { n?: number } }"),
    ("graph g{entry a when args . x [ 0 ] . y == 1}", "graph g { entry a when args.x[0].y == 1 }"),
    # a call's `(` hugs its name; an operand's `(` or `[` after an operator word does not
    ("tool t{impl = returns ( { a: 1 } )}", "tool t { impl = returns({ a: 1 }) }"),
    ("graph g{entry a when not(x or y) and(z)}", "graph g { entry a when not (x or y) and (z) }"),
    ('graph g{entry a when x in["a"] and m mentions["b"]}', 'graph g { entry a when x in ["a"] and m mentions ["b"] }'),
    ("graph g{route a -> b on t status[failure]}", "graph g { route a -> b on t status [failure] }"),
    ("test t{tool x returns(1)}", "test t { tool x returns (1) }"),
    ("graph g{entry a when x.in[0] == 1}", "graph g { entry a when x.in[0] == 1 }"),
    # braces: one space inside on one line, none when empty; brackets: none inside
    ("test t{model calls a{ }}", "test t { model calls a {} }"),
    ("fact f{data=[ ]}", "fact f { data = [] }"),
    ("fact f { data = [{a: 1}, {b: 2}] }", "fact f { data = [{ a: 1 }, { b: 2 }] }"),
    # numbers keep their sign; `...` is a word
    ("fact f{data={n:-1.5e3}}", "fact f { data = { n: -1.5e3 } }"),
    ("tool t{input{a:string,...}}", "tool t { input { a: string, ... } }"),
    ("policy p{before *{deny when true}}", "policy p { before * { deny when true } }"),
])
def test_spacing_within_a_line(messy: str, tidy: str) -> None:
    assert format_source(messy) == tidy + "\n"


def test_indentation_counts_brackets_by_the_line_that_opened_them() -> None:
    messy = block("fact f {", "data = foo({", "a: [1,", "2],", "})", "}")
    assert format_source(messy.replace("data = foo(", "data = file(")) == block(
        "fact f {", "  data = file({", "    a: [1,", "      2],", "  })", "}")


def test_a_closing_line_stands_at_its_opening_line_and_reopens() -> None:
    messy = block("fact f {", "data = [{", "a: 1", "}, {", "b: 2", "}]", "}")
    assert format_source(messy) == block(
        "fact f {", "  data = [{", "    a: 1", "  }, {", "    b: 2", "  }]", "}")


def test_continuation_lines_are_indented_once() -> None:
    messy = block("policy p {", "before t {", "deny when x > 1", "and y", "because \"z\"",
                  "ask when", "x > 2", "}", "}")
    assert format_source(messy) == block(
        "policy p {", "  before t {", "    deny when x > 1", "      and y", '      because "z"',
        "    ask when", "      x > 2", "  }", "}")



def test_a_literal_that_starts_a_line_continues_the_statement_above() -> None:
    """A route's label, a step's note or a field's description written on the line below stood
    at the statement's level, as if it began a statement of its own; no statement starts with a
    literal, so it is a continuation line. The next item of a list or map (after a `,`) is not."""
    messy = block("graph g {", "route s -> s2 on t", '"label"', "}",
                  "skill s {", "steps {", "t", '"note"', "}", "}",
                  "test x {", "model says", '"hi"', "expect called t", "1", "}",
                  "redact r { keys = [", '"a",', '"b"', "] }")
    assert format_source(messy) == block(
        "graph g {", "  route s -> s2 on t", '    "label"', "}",
        "skill s {", "  steps {", "    t", '      "note"', "  }", "}",
        "test x {", "  model says", '    "hi"', "  expect called t", "    1", "}",
        "redact r { keys = [", '  "a",', '  "b"', "] }")


def test_the_next_scripted_call_on_its_own_line_continues_model_calls() -> None:
    """`model calls A { … },` then `B { … }` on the next line: B stood at the statement level,
    read as a statement of its own. In a `test` body a name after a line ending in `,` is the
    next call; a step list (`t1,` then `t2`) and the attributes are laid out as before."""
    messy = block("test x {", "agent = a,", "model calls a { id: 1 },", "b { id: 2 },", "c",
                  'model says "ok"', "}", "skill s {", "steps {", "t1,", "t2", "}", "}")
    assert format_source(messy) == block(
        "test x {", "  agent = a,", "  model calls a { id: 1 },", "    b { id: 2 },", "    c",
        '  model says "ok"', "}", "skill s {", "  steps {", "    t1,", "    t2", "  }", "}")

def test_keywords_as_attribute_or_field_names_start_no_continuation() -> None:
    messy = block("instruction i {", "prompt = \"p\"", "when = message matches /x/", "}",
                  "tool t {", "output {", "a: number", "note?: string", "status: string", "}", "}")
    assert format_source(messy) == block(
        "instruction i {", '  prompt = "p"', "  when   = message matches /x/", "}",
        "tool t {", "  output {", "    a: number", "    note?: string", "    status: string", "  }", "}")


def test_a_name_spelt_as_a_keyword_starts_no_continuation() -> None:
    # `note` is a keyword of a test's decisions (`approve note "..."`) but a tool or skill may be
    # named so: a name at the start of a line is a list item or a step, not a clause
    messy = block("agent a {", "skills = [", "search,", "note", "]", "}",
                  "skill s {", "steps {", 'search "x"', 'note "y"', "}", "}")
    assert format_source(messy) == block(
        "agent a {", "  skills = [", "    search,", "    note", "  ]", "}",
        "skill s {", "  steps {", '    search "x"', '    note "y"', "  }", "}")


def test_a_keyword_starts_a_continuation_as_before() -> None:
    messy = block("graph g {", "route a -> b", "on t", "status [failure]", "}",
                  "test t {", "decline", 'by "me"', 'note "n"', "}")
    assert format_source(messy) == block(
        "graph g {", "  route a -> b", "    on t", "    status [failure]", "}",
        "test t {", "  decline", '    by "me"', '    note "n"', "}")


@pytest.mark.parametrize("text", [
    "tool t { input { tags: [string](max_items: 5) } }",
    "test t { tool x returns status[0] }",
    "test t { tool x returns returns(1) }",
    "test t { tool x returns status[0].in[1] }",
    "graph g { entry a when status[0] == 1 and tool.status[1] == skill[2] }",
])
def test_a_name_hugs_its_bracket_whatever_its_spelling(text: str) -> None:
    assert format_source(text) == text + "\n"


def test_line_breaks_are_kept_and_blank_lines_collapse() -> None:
    messy = "\n\n\nagent a {\n\n\n  model = \"m\"\n\n\n\n  system = \"s\"\n\n}\n\n\n\nagent b { model = \"m\" }\n\n\n"
    assert format_source(messy) == block(
        "agent a {", '  model = "m"', "", '  system = "s"', "}", "", 'agent b { model = "m" }')


def test_tabs_trailing_blanks_and_crlf() -> None:
    assert format_source('agent a {\r\n\tmodel = "m"  \t\r\n}') == 'agent a {\n  model = "m"\n}\n'
    assert format_source('agent a {\r\tmodel = "m"\r}\r') == 'agent a {\n  model = "m"\n}\n'


def test_an_empty_or_blank_file_stays_empty() -> None:
    assert format_source("") == ""
    assert format_source("  \n\n\t\n") == ""
    assert format_source("# only a comment   \n\n") == "# only a comment\n"


def test_a_leading_byte_order_mark_is_dropped() -> None:
    assert format_source('\ufeffagent a { model = "m" }') == 'agent a { model = "m" }\n'


def test_comments_are_kept_verbatim_and_indented() -> None:
    messy = block("agent a {   # the agent   ", "      # about the model", 'model = "m" # why',
                  "# last", "}", "   # end")
    assert format_source(messy) == block(
        "agent a {  # the agent", "  # about the model", '  model = "m"  # why', "  # last", "}", "# end")



def test_a_comment_inside_a_continued_statement_stands_with_its_continuation_lines() -> None:
    """A comment between a statement's lines was pulled out to the statement's level, left of
    the line it annotates (`    # big ones` above `      because`); it now takes the level of
    the continuation line below it. A comment before the next statement, or before a closing
    bracket, keeps the level it had."""
    messy = block("policy p {", "before t {", "deny when args.amount > 500", "  # big ones",
                  "because \"x\"", "ask when args.amount > 100 and", "# not for Maya",
                  "# nor for Bo", "args.amount < 200", "because \"y\"", "# the next rule",
                  "allow when iteration < 2", "# before the closer", "}", "}",
                  "graph g {", "route s -> s2", "# only on success", "on t status success", "}")
    assert format_source(messy) == block(
        "policy p {", "  before t {", "    deny when args.amount > 500", "      # big ones",
        '      because "x"', "    ask when args.amount > 100 and", "      # not for Maya",
        "      # nor for Bo", "      args.amount < 200", '      because "y"', "    # the next rule",
        "    allow when iteration < 2", "    # before the closer", "  }", "}",
        "graph g {", "  route s -> s2", "    # only on success", "    on t status success", "}")

def test_equals_align_in_runs_of_attribute_lines() -> None:
    messy = block("agent a {", "model = \"m\"", "max_iterations = 8", "# a comment ends a run",
                  "graph = g", "context=[x]", "", "policies = []", "}")
    assert format_source(messy) == block(
        "agent a {", '  model          = "m"', "  max_iterations = 8", "  # a comment ends a run",
        "  graph   = g", "  context = [x]", "", "  policies = []", "}")


def test_a_value_going_on_below_ends_the_run_after_its_line() -> None:
    messy = block("skill s {", 'description = "d"', 'body = """', "    text  ", '  """',
                  "tools = [a]", "x = [", "b,", "]", "y = 1", "}")
    assert format_source(messy) == block(
        "skill s {", '  description = "d"', '  body        = """', "    text  ", '  """',
        "  tools = [a]", "  x     = [", "    b,", "  ]", "  y = 1", "}")


def test_extra_spaces_inside_a_line_collapse() -> None:
    messy = block("policy p {", "before t {", "deny when x > 1 because \"a\"",
                  "ask  when x > 0   because \"b\"", "}", "}")
    assert "    ask when x > 0 because \"b\"\n" in format_source(messy)


def test_multi_line_text_is_kept_verbatim_except_line_endings() -> None:
    text = 'skill s {\n    body = """\r\n   keep   \r\n\t  this\n      """\n}\n'
    assert format_source(text) == 'skill s {\n  body = """\n   keep   \n\t  this\n      """\n}\n'


def test_a_syntax_error_is_a_compile_error_with_its_diagnostic() -> None:
    with pytest.raises(CompileError) as e:
        format_source("agent a {\n  model = \n", "bad.afp")
    assert [d.code for d in e.value.diagnostics] == ["AFP001"]
    assert e.value.diagnostics[0].primary.span.file == "bad.afp"
    for text in ("agent a { model = 8model }", "agent é {}", "agent a { x = \"\"\" }", "a\x00"):
        with pytest.raises(CompileError):
            format_source(text)


def test_not_text_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="format_source"):
        format_source(b"agent a {}")  # type: ignore[arg-type]


def test_a_layout_that_changed_the_tokens_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(fmt, "layout", lambda toks: "".join(t.text for t in toks))
    with pytest.raises(FormatterBug, match="x.afp"):
        format_source("agent a { model = \"m\" }", "x.afp")


def test_tokens_keep_comments_and_count_line_breaks() -> None:
    toks = fmt.tokens('a # c\r\n\r\nb "s"')
    assert [(t.kind, t.text, t.breaks) for t in toks] == [
        ("W", "a", 0), ("#", "# c", 0), ("W", "b", 2), ("S", '"s"', 0)]


def test_format_source_is_public() -> None:
    assert afp_dsl.format_source is format_source
    assert "format_source" in afp_dsl.__all__


def test_the_layout_module_takes_tokens_only() -> None:
    assert fmt_layout.layout([]) == ""


def test_the_examples_and_the_standard_library_are_in_the_canonical_layout() -> None:
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    specs = sorted(root.glob("examples/**/*.afp")) + sorted(root.glob("stdlib/*.afp"))
    assert len(specs) > 10
    unformatted = [str(p.relative_to(root)) for p in specs
                   if format_source(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")]
    assert unformatted == []


def test_the_bad_input_corpus_is_formatted_or_refused() -> None:
    # (the fuzzer's saved inputs, bench/fuzz.py's `fmt` target's among them)
    from test_fmt_properties import assert_formatted_well
    corpus = Path(__file__).resolve().parent / "corpus"
    for p in sorted(corpus.glob("*.afp")):
        text = p.read_bytes().decode("utf-8", "replace")
        try:
            out = format_source(text, p.name)
        except CompileError as e:
            assert e.diagnostics, p.name
        else:
            assert format_source(out) == out, p.name
        assert_formatted_well(text)


def test_the_docstring_example_holds() -> None:
    import doctest
    assert doctest.testmod(fmt).attempted == 1 and doctest.testmod(fmt).failed == 0


# ---------------------------------------------------------------- keywords and names
_ROOT = Path(__file__).resolve().parent.parent


def _utf8(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # (the bad-input corpus holds files that are not UTF-8)
        return None


_SPECS = {str(p.relative_to(_ROOT)): t for p in sorted(_ROOT.rglob("*.afp"))
          if ".venv" not in p.parts and p.is_file() and (t := _utf8(p)) is not None}
_NAMED_LIKE_KEYWORDS = [
    block("agent a {", "skills = [", "search,", "note", "]", "}", "skill s {", "steps {", 'search "x"', 'note "y"', "}", "}"),
    "test t { tool x returns status[0].in[1] }",
    "graph g { entry a when status[0] == 1 and tool.status[1] == skill[2] }",
    "fact f { data = { on: 1, when: 2, route: [3] } }",
    "tool status { input { note: string, on?: number } }",
]


def _lark_names(text: str) -> frozenset[int] | None:
    import lark
    try:
        return parser._names_in(parser._parser().parse(text), lark.Tree)
    except lark.exceptions.UnexpectedInput:
        return None


@pytest.mark.parametrize("text", [*_SPECS.values(), *_NAMED_LIKE_KEYWORDS],
                         ids=[*_SPECS, *(f"named-like-keywords-{i}" for i in range(len(_NAMED_LIKE_KEYWORDS)))])
def test_names_are_read_off_the_fast_path_as_lark_reads_them(text: str) -> None:
    # the fast path's plain tree is Lark's tree (tests/test_fastparse.py), so its names are Lark's
    assert parser.name_offsets(text) == _lark_names(text)


def test_formatting_a_valid_spec_does_not_import_lark() -> None:
    """A format costs no Lark parser (≈ 70 ms of regexes compiled per process) unless the fast
    path is in doubt; a text it gives up on still gets Lark's names."""
    code = ("import sys, afp_dsl; afp_dsl.format_source('agent a {\\n  graph=g\\n}\\n'); "
            "print('lark' in sys.modules); from afp_dsl import parser; "
            "print(parser.name_offsets('agent b {')); print('lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_ROOT, check=True)
    assert out.stdout.split() == ["False", "None", "True"], out.stdout + out.stderr
