"""Properties of the front end: the printer round-trips IR, and no text makes the checker or the
renderers raise.

(a) generated IR → `print_module` → parse + lower gives the same declarations, and printing is
    idempotent; (b) arbitrary text and mutated real specs never raise out of `afp_dsl.check`, and
    every diagnostic span lies within its file; (c) every renderer format accepts those results.
More examples: AFP_FUZZ_EXAMPLES=N runs every property N times (bench/fuzz.py runs the same
properties for longer, without shrinking, and saves failing text to tests/corpus/).
"""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import afp_dsl
from afp_dsl import ir
from afp_dsl.api import _is_text, analyse
from afp_dsl.frozen import freeze
from afp_dsl.loader import load_program
from afp_dsl.printer import print_expr, print_module
from afp_dsl.render import FORMATS, render
from strategies import objects, modules

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("AFP_FUZZ_EXAMPLES", "0"))


def budget(default: int) -> settings:
    return settings(derandomize=True, deadline=None, max_examples=EXAMPLES or default, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------- (a) printer round trip
def reparse(text: str) -> ir.Module:
    program, diags = load_program(text=text, name="gen.afp")
    assert not diags, text + "\n" + render(diags, {"gen.afp": text}, "short")
    return program.root_module


def assert_round_trip(module: ir.Module) -> str:
    text = print_module(module)
    got = reparse(text)
    for want, have in zip(module.decls, got.decls):
        assert have == want, text
    assert got.decls == module.decls
    assert [(i.path, i.alias) for i in got.imports] == [(i.path, i.alias) for i in module.imports]
    assert print_module(got) == text  # idempotent
    return text


@budget(150)
@given(modules())
def test_printed_modules_read_back_as_the_same_ir(module):
    assert_round_trip(module)


@budget(100)
@given(objects(depth=3))
def test_schema_blocks_invert_lower_schema(doc):
    tool = ir.Tool(name="t", description="d", input=ir.Schema(json=freeze(doc), origin="block"))
    text = assert_round_trip(ir.Module(key="gen.afp", decls=(tool,)))
    assert "input =" not in text  # printed as a block, not as a raw map


def without_files(obj):
    """`obj` as it reads back once printed: `file(...)` contents inline, file schemas as maps."""
    if isinstance(obj, tuple):
        return tuple(without_files(x) for x in obj)
    if not attrs.has(type(obj)):
        return obj
    changes = {f.name: without_files(getattr(obj, f.name)) for f in attrs.fields(type(obj)) if f.eq}
    if isinstance(obj, (ir.Text, ir.Data, ir.Schema)):
        changes["file"] = None
    if isinstance(obj, ir.Schema) and obj.origin == "file":
        changes["origin"] = "map"
    return attrs.evolve(obj, **changes)


SPECS = sorted(str(p.relative_to(ROOT)) for pattern in ("examples/**/*.afp", "stdlib/*.afp")
               for p in ROOT.glob(pattern))


@pytest.mark.parametrize("spec", SPECS)
def test_every_example_round_trips(spec):
    path = ROOT / spec
    program, diags = load_program(path)
    assert not diags
    module = program.root_module
    text = print_module(module)
    again, diags = load_program(path, text=text, name=module.key)  # same folder: imports resolve
    assert not diags, text
    assert again.root_module.decls == without_files(module.decls)
    assert print_module(again.root_module) == text


def test_the_language_example_round_trips():
    program, diags = load_program(ROOT / "examples" / "support" / "support.afp")
    assert not diags
    module = program.root_module
    text = assert_round_trip(module)
    assert "graph          = desk" in text and "before issue_refund {" in text


@pytest.mark.parametrize("expr, want", [
    (ir.Or(items=(ir.And(items=(ir.Path(root="a"), ir.Path(root="b"))), ir.Path(root="c"))), "a and b or c"),
    (ir.And(items=(ir.Or(items=(ir.Path(root="a"), ir.Path(root="b"))), ir.Path(root="c"))), "(a or b) and c"),
    (ir.Or(items=(ir.Or(items=(ir.Path(root="a"), ir.Path(root="b"))), ir.Path(root="c"))), "(a or b) or c"),
    (ir.Not(item=ir.And(items=(ir.Path(root="a"), ir.Path(root="b")))), "not (a and b)"),
    (ir.Not(item=ir.Not(item=ir.Compare(op="==", left=ir.Path(root="a"), right=ir.Lit(value=1)))), "not not a == 1"),
    (ir.Compare(op="==", left=ir.Compare(op="<", left=ir.Lit(value=1), right=ir.Lit(value=2)),
                right=ir.Lit(value=True)), "(1 < 2) == true"),
    (ir.Compare(op="not in", left=ir.Path(root="args", segments=("x", 0, "status")),
                right=ir.ListExpr(items=(ir.Lit(value="a\n"), ir.Lit(value=None)))), 'args.x[0].status not in ["a\\n", null]'),
    (ir.Compare(op="matches", left=ir.Path(root="m"), right=ir.Regex(pattern="a/b", flags="i")), "m matches /a\\/b/i"),
])
def test_expressions_get_the_fewest_parentheses(expr, want):
    assert print_expr(expr) == want
    when = reparse(f"fact f {{ data = \"d\", when = {want} }}").decls[0].when
    if "/" in want:  # a bare `/` comes back escaped: same regex, other text
        assert when.right.pattern == "a\\/b"
    else:
        assert when == expr


def test_file_values_are_printed_inline(tmp_path):
    (tmp_path / "body.md").write_text("line one\nline two\n", encoding="utf-8")
    (tmp_path / "data.json").write_text('{"plan": "Pro", "n": [1, 2.5]}', encoding="utf-8")
    (tmp_path / "in.json").write_text('{"type": "object"}', encoding="utf-8")
    spec = tmp_path / "s.afp"
    spec.write_text('skill s { description = "d", body = file("body.md") }\n'
                    'fact f { data = file("data.json") }\n'
                    'tool t { description = "d", input = file("in.json") }\n', encoding="utf-8")
    program, diags = load_program(spec)
    assert not diags
    text = print_module(program.root_module)
    assert "file(" not in text and '"""' in text and "plan" in text
    skill, fact, tool = reparse(text).decls
    assert skill.body == ir.Text(value="line one\nline two\n")  # same text, no longer from a file
    assert fact.data.value == program.root_module.decls[1].data.value
    assert tool.input.json == {"type": "object"} and tool.input.origin == "map"


def test_a_schema_no_block_produces_is_printed_as_a_raw_map():
    tool = ir.Tool(name="t", description="d", input=ir.Schema(json=freeze({"type": "string"}), origin="block"))
    text = print_module(ir.Module(key="gen.afp", decls=(tool,)))
    assert 'input       = { type: "string" }' in text
    assert reparse(text).decls[0].input.json == {"type": "string"}


@pytest.mark.parametrize("when", [
    ir.Call(func="returned", arg=ir.Ref(name="t")),
    ir.Not(item=ir.Call(func="active", arg=ir.Ref(name="s", alias="m"))),
])
def test_calls_round_trip(when):
    assert_round_trip(ir.Module(key="gen.afp", decls=(ir.Fact(name="f", data=ir.Text(value="x"), when=when),)))


@pytest.mark.parametrize("field", ['tags: [string] = ["a"]', "o: object = { a: 1 }",
                                   "o: { a?: integer } = { a: 1 }"])
def test_map_and_list_defaults_are_accepted(field):
    reparse(f'tool t {{ description = "d", input {{ {field} }} }}')


def test_field_named_steps_after_a_default():
    doc = {"type": "object", "properties": {"a": {"default": None}, "steps": {"type": "object"}},
           "required": [], "additionalProperties": False}
    tool = ir.Tool(name="t", description="d", output=ir.Schema(json=freeze(doc), origin="block"))
    assert_round_trip(ir.Module(key="gen.afp", decls=(tool,)))


def test_entry_when_a_bare_string():
    graph = ir.Graph(name="g", entries=(ir.Entry(skill=ir.Ref(name="a"), when=ir.Lit(value="x"), label="l"),))
    assert_round_trip(ir.Module(key="gen.afp", decls=(graph,)))


# ---------------------------------------------------------------- (b, c) bad text never raises
SEEDS = sorted({p for pattern in ("examples/**/*.afp", "stdlib/*.afp", "tests/golden/**/*.afp")
                for p in ROOT.glob(pattern)})


def seed_texts() -> list[str]:
    out = []
    for p in SEEDS:
        try:
            out.append(p.read_bytes().decode("utf-8", "replace"))
        except OSError:  # pragma: no cover - a seed vanished
            continue
    spec = Path("/work/shared/spec/language.md")
    if spec.is_file():
        m = re.search(r"```afp\n(.*?)```", spec.read_text(encoding="utf-8"), re.S)
        if m:
            out.append(m.group(1))
    return out or ['agent a { system = "x" }\n']


TOKENS = ["{", "}", "(", ")", "[", "]", '"', '"""', "/", "#", "\n", "\r", "\r\n", "\t", "->", "=>", "==",
          "=", ":", ",", "...", "?", "|", "*", ".", "\\", "\x00", "\ufeff", "é", "agent", "tool", "when",
          "not", "in", "status", "route", "entry", "expect", "model", "import", "file(", "returns(",
          "-1e9", "0.5", "/a/i", "true", "null", "999999999999999999999"]


@st.composite
def mutated_specs(draw) -> str:
    text = draw(st.sampled_from(seed_texts()))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 40)))
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "swap", "truncate"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8))) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "swap" and j > i:
            text = text[:i] + text[j - 1] + text[i + 1:j - 1] + text[i] + text[j:] if j - i > 1 else text
        elif op == "truncate":
            text = text[:i]
    return text


weird_text = st.one_of(
    st.text(),
    st.text(st.characters(codec="utf-8"), max_size=200),
    st.lists(st.sampled_from(TOKENS), max_size=30).map("".join),
    st.text().map(lambda t: t.replace("\n", "\r\n")),
)


def as_text(text: str) -> str:
    """`check` reads a short string without `{` or a newline as a path; make sure it is text."""
    return text if _is_text(text) else text + "\n"


@contextlib.contextmanager
def memory_cap(extra: int = 3 << 30):
    """Cap this process's address space (Linux) so a runaway allocation raises MemoryError
    instead of taking the shared machine down; restored afterwards."""
    try:
        import resource
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        old = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (used + extra, old[1]))
    except (ImportError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def assert_checks_cleanly(text: str) -> None:
    with memory_cap():
        program, diags = analyse(text)
        assert afp_dsl.check(text) == diags
    sources = {m.key: m.source for m in program.modules} if program is not None else {}
    for d in diags:
        for label in d.labels:
            span = label.span
            if span.file in sources:
                assert 0 <= span.start <= span.end <= len(sources[span.file]), (d, len(sources[span.file]))
            else:
                assert (span.start, span.end) == (0, 0), d
    for fmt in FORMATS:
        out = render(diags, sources, fmt)
        assert isinstance(out, str) and (out.endswith("\n") or not out)
    render(diags, sources, "text", color=True)


@budget(200)
@given(mutated_specs())
@example('agent a { system = "x" }\r\ntool t {\r description = "d"\t}')
def test_mutated_specs_never_raise_and_spans_stay_in_the_file(text):
    assert_checks_cleanly(as_text(text))


@budget(200)
@given(weird_text)
@example("\ufeff")
@example("\x00\n")
@example("[" * 3000 + "\n")
def test_arbitrary_text_never_raises_and_spans_stay_in_the_file(text):
    assert_checks_cleanly(as_text(text))


@budget(60)
@given(st.text(st.characters(blacklist_characters="\x00"), max_size=40))
def test_check_of_a_path_like_string_never_raises(tmp_path_factory, text):
    """Short strings are read as paths; run inside an empty folder so nothing real is read."""
    here = os.getcwd()
    os.chdir(tmp_path_factory.getbasetemp())
    try:
        afp_dsl.check(text)
    finally:
        os.chdir(here)


def test_check_of_a_string_with_nul_never_raises():
    assert afp_dsl.check("a\x00b")
