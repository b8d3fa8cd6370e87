"""A declaration lowered by the parser itself (`fastparse_decl`) is exactly what `Lowerer.decl`
builds from its tree: the same IR with every span (compared field by field, spans included) and
the same diagnostics, in the same order.

Compared on every spec in the repository, on mutations of them and on generated declaration
texts full of what draws a diagnostic or is not a plain value; a declaration that needs a
diagnostic is handed to the tree path, which reports it with the same wording and span as ever.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_dsl import fastlex, fastparse, ir, lower
from afp_dsl.printer import print_module
from strategies import modules
from test_fastparse import SPECS, budget, mutated
from test_fastparse_schema import _lowered, assert_same


def _fused_decls(text: str, parse_as: str = "spec.afp") -> list[str]:
    """The kinds of the declarations the parser lowered itself."""
    got = fastparse.parse_tree(text, parse_as)
    return [d.data[: -len("_decl")] for d in got[0].children if type(d) is fastlex.Lowered]


def test_the_declarations_defaults_can_be_shared() -> None:
    """The fused path fills a declaration's absent fields with the class's defaults, the same
    objects for every declaration: none may be a factory (a fresh value per instance)."""
    import attrs
    from afp_dsl.fastparse_decl import _KINDS
    for cls in _KINDS.values():
        assert not any(isinstance(f.default, attrs.Factory) for f in attrs.fields(cls)), cls


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_spec_in_the_repository(path) -> None:
    assert_same(path.read_bytes().decode("utf-8", errors="replace"))


def test_the_examples_plain_declarations_are_fused() -> None:
    """The fast path is taken where it should be (a test that would pass with fusion switched off
    must not be the only one): 29 of the examples' 68 tools, skills, agents, steering and
    instructions are plain; the others hold an `impl = returns(...)` or `agent(...)`, a
    `file(...)`, a qualified name, a condition or a `steps` block, which the tree path lowers."""
    kinds = ("tool", "skill", "agent", "steering", "instruction")
    fused = total = 0
    for path in SPECS:
        if "examples" not in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        got = fastparse.parse_tree(text, "spec.afp")
        if got is None:
            continue
        total += sum(d.data[: -len("_decl")] in kinds for d in got[0].children)
        fused += len(_fused_decls(text))
    assert total > 20 and fused >= 25, (fused, total)


@budget(200)
@given(mutated())
def test_mutated_specs(text: str) -> None:
    assert_same(text)


@budget(200)
@given(modules())
def test_generated_modules(module) -> None:
    """Every kind of declaration with generated values (names, texts with escapes and newlines,
    qualified references, schemas), as the printer writes it."""
    assert_same(print_module(module))


# Declaration texts built from pieces, many of which draw a diagnostic, are not plain values or
# are not valid syntax.
_KINDS = st.sampled_from(["tool", "skill", "agent", "steering", "instruction"])
_DECL_NAMES = st.sampled_from(["t", "a_b", "input", "route", "x" * 64, "y" * 65, "1", '"s"'])
_KEYS = st.sampled_from(["description", "body", "tools", "system", "model", "skills", "graph",
                         "prompt", "when", "policies", "keep_runs", "descripton", "steps", "input",
                         "output", "on_skip", "max_iterations", "not", "impl", "wrap_up",
                         "continuity", "tool_scope", "max_result_chars", "check_in"])
_VALUES = st.sampled_from([
    '"text"', '""', '"tab\\t"', '"bad \\q"', '"\\u00e9"', '"""\n  long\n  text\n"""', "[a, b]",
    "[a,]", "[]", "[a b]", "[a.b]", "[true]", "[input]", "[a[0]]", "[a(1)]", "[,]", "flow",
    "flow.x", "tool", "x == 1", '"a" == "b"', '"a" and b', '"a" not in [b]', "5", "1e999",
    'file("x.md")', "returned(t)", '"a" matches /b/', "null", "{ a: 1 }", "(a)", "0", "1", "-1",
    "2.5", "1e3", "7 + 1", "true", "false", "true and x", '"run"', '"conversation"', '"active"',
    '"nope"', '"always"', 'python("m.n:f")', 'python("m:f.g")', 'python("bad")', 'python("")',
    "python(1)", 'python("m:f", "x")', 'python("m\\u003af")', 'python("""m:f""")',
    'returns("x")', "agent(a)", 'python ("m:f")', 'python("m:f").x'])
_BLOCKS = st.sampled_from(["{ a: string }", "{ a: strin }", '{ status: "ok" | "fail", n?: number }',
                           "{ a: integer = 1 }", "{ }"])


@st.composite
def _items(draw) -> str:
    key = draw(_KEYS)
    if key in ("input", "output") and draw(st.booleans()):
        value = " " + draw(_BLOCKS)
    elif key == "steps" and draw(st.booleans()):
        value = " { t }"
    else:
        value = " = " + draw(_VALUES)
    return key + value + draw(st.sampled_from(["", ",", "\n", " ,", " # note\n"]))


@budget(400)
@given(_KINDS, _DECL_NAMES, st.lists(_items(), max_size=5))
def test_generated_declaration_texts(kind, name, items) -> None:
    assert_same(f"{kind} {name} {{ " + " ".join(items) + " }\nskill other { description = \"o\" }\n")


@pytest.mark.parametrize(("text", "code"), [
    ('tool input { description = "d" }', "AFP003"),                   # reserved word as a name
    ("tool " + "n" * 65 + ' { description = "d" }', "AFP110"),        # name too long
    ('skill s { description = "d", description = "e" }', "AFP106"),   # attribute given twice
    ('skill s { descripton = "d" }', "AFP104"),                       # unknown attribute
    ('skill s { body = "b" }', "AFP105"),                             # required one missing
    ('tool t { description = "bad \\q" }', "AFP005"),                 # invalid escape
    ('skill s { description = "d", tools = [true] }', "AFP106"),      # not a name
    ('tool t { description = "d", input { a: strin } }', "AFP301"),   # a block needing one
    ('tool t { description = "d", keep_runs = 3 }', "AFP106"),        # an attribute with no effect
    ('agent a { max_iterations = 0 }', "AFP106"),                      # a value out of range
    ('agent a { continuity = "always" }', "AFP106"),                   # not one of the choices
    ('tool t { description = "d", impl = python("bad") }', "AFP106"),  # not a module:attr target
    ('skill s { description = "d", on_skip = "hold" }', "AFP106"),    # no effect without steps
    ('agent a { max_iterations = 1e999 }', "AFP008"),                  # a number out of range
])
def test_declarations_needing_a_diagnostic_get_it_from_the_tree_path(text, code) -> None:
    fused = _lowered(text, True)
    assert fused == _lowered(text, False)
    assert code in repr(fused[1])
    assert _fused_decls(text) == []


def test_plain_declarations_are_fused() -> None:
    text = ('tool t { description = "d", input { id: string }, output { ok: boolean } }\n'
            'skill s {\n  description = """\n    Many\n    lines\n  """\n  body = "Do it."\n'
            '  tools = [t, u,]\n}\n'
            'agent a { system = "Be kind." model = "m", tools = [t], skills = [], graph = g,\n'
            '  max_iterations = 4, wrap_up = false, continuity = "conversation" }\n'
            'tool p { description = "p", impl = python("pkg.mod:fn"), max_result_chars = 100 }\n'
            'steering st { prompt = "Stay on topic." }\ninstruction i { prompt = "Be brief." }\n')
    assert _fused_decls(text) == ["tool", "skill", "agent", "tool", "steering", "instruction"]
    assert_same(text)
    module = lower.lower_module(fastparse.parse_tree(text, "spec.afp")[0], "spec.afp", text,
                                lambda r: None)[0]
    tool, skill, agent = module.decls[:3]
    assert (tool.name, tool.description, tool.span, tool.full_span) == (
        "t", "d", ir.Span("spec.afp", 5, 6), ir.Span("spec.afp", 0, text.index("}\n") + 1))
    assert skill.description == "Many\nlines" and skill.body.value == "Do it."
    assert [r.name for r in skill.tools] == ["t", "u"] and skill.tools[1].span.start == text.index("u,]")
    assert agent.graph == ir.Ref(name="g") and agent.skills == () and agent.model == "m"
    assert (agent.max_iterations, agent.wrap_up, agent.continuity) == (4, False, "conversation")
    impl = module.decls[3].impl
    assert impl.target == "pkg.mod:fn" and text[impl.span.start:impl.span.end] == 'python("pkg.mod:fn")'
    assert module.decls[3].max_result_chars == 100


def test_values_that_continue_as_expressions_are_left_to_the_tree_path() -> None:
    for value in ('"a" == "b"', '"a" and b', '"a" in [b]', '"a" not in [b]', '"a" matches /b/',
                  '"a" mentions "b"', "flow.x", "flow(1)", "[a.b]"):
        text = f"agent a {{ system = {value} }}\n" if '"' in value else f"agent a {{ graph = {value} }}\n"
        assert _fused_decls(text) == [], value
        assert_same(text)


def test_a_declaration_lowered_under_another_name_gets_spans_in_that_file() -> None:
    text = 'skill s { description = "d", body = "b", tools = [t] }\ngraph g { entry s }\n'
    assert _fused_decls(text, "other.afp") == ["skill"]
    assert _lowered(text, True, parse_as="other.afp") == _lowered(text, False)
