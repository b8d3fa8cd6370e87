"""Conformance: the front end (lexical §2, values §3, declarations §5 of spec/language.md).

Each case compares what `check` reports, the IR it builds and, where the grammar changed, that
the fast path still builds Lark's tree (`test_fastparse.assert_same`).
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import afp_dsl
from afp_dsl.api import analyse
from afp_dsl.cli import main
from afp_dsl.diagnostics import Severity
from afp_dsl.frozen import thaw
from afp_dsl.printer import print_module
from test_fastparse import assert_same

BIG = "9" * 5000  # more digits than Python converts to an int by default (4 300)


def codes(text_or_path) -> list[str]:
    return [d.code for d in afp_dsl.check(text_or_path)]


def decl(text: str, name: str):
    program, diags = analyse(text)
    assert program is not None, diags
    return next(d for m in program.modules for d in m.decls if d.name == name)


# ---------------------------------------------------------------- numbers out of range
@pytest.mark.parametrize("text", [
    "agent a { max_iterations = %s }" % BIG,
    "fact f { data = { x: %s } }" % BIG,
    "fact f { data = [-%s] }" % BIG,
    "instruction i { prompt = \"p\" when = iteration > %s }" % BIG,
    "instruction i { prompt = \"p\" when = last.result[%s] == 1 }" % BIG,
    "tool t { description = \"d\" input { a: integer(max: %s) } }" % BIG,
    "tool t { description = \"d\" input { a: 1 | %s } }" % BIG,
    "tool t { description = \"d\" input { a?: integer = %s } }" % BIG,
    "agent a { }\ntest x { user \"hi\" model says \"ok\" expect called t %s }" % BIG,
    "agent a { max_iterations = 1%s }" % ("0" * 400),  # an integer beyond a 64-bit float
], ids=lambda t: t[:24].replace(" ", "_"))
def test_a_huge_integer_literal_is_out_of_range_not_a_crash(text: str) -> None:
    assert "AFP008" in codes(text)


def test_a_huge_integer_gives_exit_1_not_an_internal_error(tmp_path: Path) -> None:
    spec = tmp_path / "big.afp"
    spec.write_text("agent a { max_iterations = %s }\n" % BIG)
    result = CliRunner().invoke(main, ["check", str(spec), "--format", "short"])
    assert result.exit_code == 1, result.output
    assert "AFP008" in result.output and "internal error" not in result.output


@pytest.mark.parametrize("content", ['{"x": %s}' % BIG, '{"x": 1e999}', '[-1e400]'],
                         ids=["huge-int", "1e999", "-1e400"])
def test_a_json_file_with_an_unrepresentable_number_is_out_of_range(tmp_path: Path, content: str) -> None:
    (tmp_path / "d.json").write_text(content)
    spec = tmp_path / "s.afp"
    spec.write_text('tool t { description = "d" input = file("d.json") }\n')  # (a schema file)
    assert codes(spec) == ["AFP008"]


# ---------------------------------------------------------------- JSON files: NaN and Infinity
@pytest.mark.parametrize("content", ['{"x": NaN}', '{"y": Infinity}', '[-Infinity]'])
@pytest.mark.parametrize("use", ['fact f { data = file("d.json") }',
                                 'tool t { description = "d" input = file("d.json") }'])
def test_nan_and_infinity_in_json_files_are_not_json(tmp_path: Path, content: str, use: str) -> None:
    (tmp_path / "d.json").write_text(content)
    spec = tmp_path / "s.afp"
    spec.write_text(use + "\n")
    assert codes(spec) == (["AFP301"] if "input" in use else [])  # a schema file: invalid schema;
    # a data file is text, whatever its name (language.md §3)


# ---------------------------------------------------------------- `status []`
@pytest.mark.parametrize("route", ["route s1 -> s2 on t status []", "route s1 -> s2 status []",
                                   "route s1 -> s2 on t status [,]"])
def test_an_empty_status_list_is_reported(route: str) -> None:
    text = ('agent a { graph = g }\ntool t { description = "x" }\n'
            'skill s1 { description = "x" tools = [t] }\nskill s2 { description = "x" }\n'
            "graph g { entry s1 %s }\n" % route)
    diags = afp_dsl.check(text)
    assert [d.code for d in diags] == ["AFP001"]
    assert "status" in diags[0].message
    assert_same(text)


def test_a_status_list_still_takes_a_trailing_comma() -> None:
    text = ('agent a { graph = g }\ntool t { description = "x" }\n'
            'skill s1 { description = "x" tools = [t] }\nskill s2 { description = "x" }\n'
            "graph g { entry s1 route s1 -> s2 on t status [failure, denied,] }\n")
    assert codes(text) == []
    assert assert_same(text) == "same"


# ---------------------------------------------------------------- a schema block and `input = ...`
@pytest.mark.parametrize("first,second,kept", [
    ("input { a: string }", 'input = { type: "object" }', "block"),
    ('input = { type: "object" }', "input { a: string }", "map"),
    ("input { a: string }", 'input = "bad"', "block"),
])
def test_an_attribute_given_as_block_and_raw_keeps_the_first(first: str, second: str, kept: str) -> None:
    text = 'tool t {\n  description = "x"\n  %s\n  %s\n}\n' % (first, second)
    diags = afp_dsl.check(text)
    assert [d.code for d in diags] == ["AFP106"]
    assert "given twice" in diags[0].message
    assert diags[0].labels[0].span.start == text.index(second)
    assert decl(text, "t").input.origin == kept


def test_a_second_output_is_not_read(tmp_path: Path) -> None:
    spec = tmp_path / "s.afp"
    spec.write_text('tool t {\n  description = "x"\n  output { a: string }\n  output = file("nope.json")\n}\n')
    assert codes(spec) == ["AFP106"]


# ---------------------------------------------------------------- nullable enums
@pytest.mark.parametrize("union,values", [
    ('"timeout" | null', ["timeout", None]),
    ('null | "timeout"', [None, "timeout"]),
    ('1 | null | true', [1, None, True]),
])
def test_null_in_a_literal_union(union: str, values: list) -> None:
    text = 'tool t { description = "x" output { reason: %s } }' % union
    assert codes(text) == []
    assert assert_same(text) == "same"
    schema = thaw(decl(text, "t").output.json)
    field = schema["properties"]["reason"]
    assert field["enum"] == values
    jsonschema.validate({"reason": None}, schema)
    jsonschema.validate({"reason": values[-1] if values[-1] is not None else values[0]}, schema)


def test_a_nullable_enum_prints_back_as_written() -> None:
    text = 'tool t {\n  description = "x"\n  output { reason: "timeout" | null }\n}\n'
    program, _ = analyse(text)
    assert print_module(program.modules[0]) == text


# ---------------------------------------------------------------- triple-quoted strings everywhere
TRIPLE = '"""I was charged twice\nfor order AB-12"""'
TEXT = "I was charged twice\nfor order AB-12"
STMT_SPEC = '''import """std/steering""" as st
agent a { graph = g tools = [t] policies = [p] }
tool t {
  description = "x"
  output { reason: """a""" | "b" """why""" }
}
skill s1 {
  description = "x"
  tools = [t]
  steps { t """first""" }
}
skill s2 { description = "x" }
graph g {
  entry s1 """start"""
  route s1 -> s2 on t """go"""
}
policy p { input { deny when message mentions """refund""" because """no
refunds""" } }
test x {
  user %s
  model calls t { """k""": 1 }
  tool t fails """down"""
  model says """ok"""
  approve by """ann""" note """fine"""
  expect answer == """ok"""
}
'''


def test_triple_quoted_strings_stand_wherever_a_string_does() -> None:
    text = STMT_SPEC % TRIPLE
    program, diags = analyse(text)
    assert [d.code for d in diags] == []
    assert assert_same(text) == "same"


def test_triple_quoted_statement_strings_lower_like_plain_ones() -> None:
    plain = STMT_SPEC.replace('"""', '"').replace('"no\nrefunds"', '"no refunds"') % json.dumps(TEXT)
    triple = STMT_SPEC.replace('"""no\nrefunds"""', '"""no refunds"""') % TRIPLE
    p1, _ = analyse(plain)
    p2, _ = analyse(triple)
    assert p1 is not None and p2 is not None
    assert p1.modules[0].decls == p2.modules[0].decls
    assert p1.modules[0].imports == p2.modules[0].imports


def test_a_triple_quoted_user_message_is_not_unterminated() -> None:
    text = 'agent a { }\ntest x {\n  user """I was charged twice\nfor order AB-12"""\n  model says "ok"\n}\n'
    assert codes(text) == []
    test = decl(text, "x")
    assert test.statements[0].text == TEXT


# ---------------------------------------------------------------- fact data
@pytest.mark.parametrize("value", ["3", "true", "null", "-0.5"])
def test_fact_data_that_is_a_bare_scalar_is_reported(value: str) -> None:
    assert codes("fact f { data = %s }" % value) == ["AFP106"]


@pytest.mark.parametrize("value", ['"text"', "[1, 2]", "{ a: 1 }", '"""t"""'])
def test_fact_data_strings_lists_and_maps_are_fine(value: str) -> None:
    assert codes("fact f { data = %s }" % value) == []


# ---------------------------------------------------------------- attributes without effect
def test_on_skip_without_steps_is_a_warning() -> None:
    got = afp_dsl.check('skill s { description = "x" on_skip = "hold" }')
    assert [(d.code, d.severity) for d in got] == [("AFP106", Severity.WARNING)]
    assert "steps" in got[0].message


def test_on_skip_with_steps_is_fine() -> None:
    text = 'tool t { description = "x" }\nskill s { description = "x" tools = [t] on_skip = "hold" steps { t } }'
    assert codes(text) == []


@pytest.mark.parametrize("impl", ["impl = returns(1)", 'impl = python("m:f")', ""])
def test_keep_runs_without_an_agent_impl_is_a_warning(impl: str) -> None:
    got = afp_dsl.check('tool t { description = "x" keep_runs = 3 %s }' % impl)
    assert [(d.code, d.severity) for d in got] == [("AFP106", Severity.WARNING)]
    assert "keep_runs" in got[0].message


def test_keep_runs_with_an_agent_impl_is_fine() -> None:
    text = 'agent inner { }\ntool t { description = "x" keep_runs = 3 impl = agent(inner) }'
    assert codes(text) == []


# ---------------------------------------------------------------- triple-quoted text is verbatim
@pytest.mark.parametrize("body,value", [
    ('"""a\x0cb\u2028c\x85d\x1ce\x0bf"""', "a\x0cb\u2028c\x85d\x1ce\x0bf"),
    ('"""\n  a\n\n"""', "a\n"),
    ('"""\r\n  a\r\n  b\r\n"""', "a\nb"),
    ('"""\r  a\r  b\r"""', "a\nb"),
    ('"""\n    x\n  y\n  """', "  x\ny"),
])
def test_triple_quoted_text_splits_only_on_line_breaks(body: str, value: str) -> None:
    text = 'skill s { description = "d" body = %s }' % body
    assert codes(text) == []
    assert decl(text, "s").body.value == value


# ---------------------------------------------------------------- nesting limit
@pytest.mark.parametrize("make", [
    lambda d: "fact f { data = " + "[" * d + "]" * d + " }",
    lambda d: "fact f { data = " + "{a: " * d + "1" + "}" * d + " }",
    lambda d: "instruction i { prompt = \"p\" when = " + "not " * (d - 1) + "x == 1 }",
    lambda d: "instruction i { prompt = \"p\" when = " + "x and (" * (d - 1) + "x and x" + ")" * (d - 1) + " }",
    lambda d: "tool t { description = \"d\" input { " + "a: {" * d + "b: string" + "}" * d + " } }",
    lambda d: "tool t { description = \"d\" input { a: " + "[" * d + "string" + "]" * d + " } }",
])
def test_nesting_is_limited_at_the_documented_200_levels(make) -> None:
    assert "AFP007" not in codes(make(200))
    assert "AFP007" in codes(make(201))


def test_200_levels_of_nesting_survive_compile_and_format() -> None:
    text = "fact f { data = " + "{a: [" * 100 + "1" + "]}" * 100 + " }\n"
    program = afp_dsl.load(text)
    from afp_dsl.serde import ir_from_json, ir_to_json
    assert ir_from_json(ir_to_json(program.ir)) == program.ir
    assert print_module(analyse(text)[0].modules[0])


# ---------------------------------------------------------------- regex flags
@pytest.mark.parametrize("text", [
    'instruction i {\n  when   = message matches /urgent/g\n  prompt = "x"\n}\n',
    "redact r { patterns = [/x/g] }",
    'instruction i { when = message matches /x/I prompt = "x" }',
])
def test_an_unknown_regex_flag_is_reported_at_the_literal(text: str) -> None:
    diags = afp_dsl.check(text)
    assert [d.code for d in diags] == ["AFP004"]
    assert "flag" in diags[0].message
    span = diags[0].labels[0].span
    assert text[span.start] == "/" and text[span.end - 1].isalpha()
    assert assert_same(text) == "same"


@pytest.mark.parametrize("label", ['"0"', '"""0"""'])
def test_a_word_after_a_step_label_is_still_a_step_name(label: str) -> None:
    text = 'tool steps { description = "d" }\nskill s {\n  description = ""\n  tools = [steps]\n' \
           '  steps {\n    steps %s\n    steps\n  }\n}\n' % label
    assert codes(text) == []
    assert assert_same(text) == "same"


def test_a_schema_field_name_over_64_characters_is_afp110():
    """language §2: the checker reports an identifier over 64 characters; field names too."""
    import afp_dsl
    spec = 'tool t {{ description = "t" input {{ {name}: string }} }}'
    long = afp_dsl.check(spec.format(name="f" * 65))
    assert [d.code for d in long] == ["AFP110"]
    assert afp_dsl.check(spec.format(name="f" * 64)) == []


def test_a_map_key_given_twice_is_reported_and_the_first_value_kept():
    import afp_dsl
    diags = afp_dsl.check("fact f { data = {a: 1, a: 2} }")
    assert [(d.code, d.message) for d in diags] == [("AFP106", "key `a` is given twice in this map")]


def test_a_constraint_given_twice_is_reported():
    import afp_dsl
    for field in ['string(pattern: "a", pattern: "b")', "[string](min_items: 1, min_items: 2)"]:
        diags = afp_dsl.check(f'tool t {{ description = "t" input {{ s: {field} }} }}')
        assert [d.code for d in diags] == ["AFP301"] and "given twice" in diags[0].message


def test_the_unknown_attribute_help_names_each_attribute_once():
    import afp_dsl
    (d,) = afp_dsl.check('tool t { description = "t" zzzzzzz = 1 }')
    names = [w.strip("`") for w in d.help.split(": ", 1)[1].split(", ")]
    assert d.code == "AFP104" and len(names) == len(set(names)) and "input" in names


def test_imports_are_std_or_relative_and_name_afp_modules(tmp_path):
    import afp_dsl
    (tmp_path / "common.afp").write_text('agent a { system = "x" }\n', encoding="utf-8")
    (tmp_path / "notes.md").write_text("# notes\n", encoding="utf-8")
    cases = {"abs.afp": f'import "{tmp_path / "common.afp"}" as c\n',
             "md.afp": 'import "./notes.md" as m\n',
             "ok.afp": 'import "./common" as c\n'}
    found = {}
    for name, text in cases.items():
        (tmp_path / name).write_text(text + 'agent b { system = "y" }\n', encoding="utf-8")
        found[name] = [d.code for d in afp_dsl.check(tmp_path / name)]
    assert found == {"abs.afp": ["AFP107"], "md.afp": ["AFP107"], "ok.afp": []}


@pytest.mark.parametrize("text, kind, key", [
    ('agent a { system = "x" answer = 1 }', "agent", "answer"),
    ('agent a { answer = 1 }', "agent", "answer"),
    ('tool t { description = "x" on = 1 }', "tool", "on"),
    ('skill s { description = "x" expect = 1 }', "skill", "expect"),
    ('fact f { data = [1] answer = 2 }', "fact", "answer"),
])
def test_a_reserved_word_as_an_attribute_key_is_an_unknown_attribute(text, kind, key):
    """language §2: reserved words remain usable as attribute keys; an unknown one is AFP104
    wherever it stands (after a value the parser used to report AFP001)."""
    import afp_dsl
    diags = afp_dsl.check(text)
    assert [(d.code, d.message) for d in diags] == [("AFP104", f"unknown attribute `{key}` for {kind}")]


# ---------------------------------------------------------------- constraints on `any` and mixed unions
def test_a_constraint_that_fits_no_type_of_the_field_is_afp301():
    """Before: `any(min: 1)` and `"a" | 1 (max_items: 1)` were accepted and written into the
    schema, although language §5.2 says a constraint that does not fit the type is a diagnostic."""
    import afp_dsl
    spec = ('tool t { description = "x" input { a: any(min: 1, pattern: "x"), '
            'b: "a" | 1 (min_length: 2, max_items: 1), c: "a" | "b" (min_length: 1) } }\n'
            'agent ag { tools = [t] }\n')
    found = [(d.code, d.message) for d in afp_dsl.check(spec)]
    assert found == [
        ("AFP301", "constraint `min` does not apply to type `any`"),
        ("AFP301", "constraint `pattern` does not apply to type `any`"),
        ("AFP301", "constraint `max_items` does not apply to any of the types `integer`, `string`"),
    ]  # `min_length` fits the string member of `"a" | 1`, and every member of `"a" | "b"`
