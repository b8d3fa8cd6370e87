"""A tool's schema block lowered by the parser itself (`fastparse_schema`) is exactly what
`lower_schema` builds from the block's tree: the same IR with every span (IR equality ignores
spans, so the comparison walks every attrs field) and the same diagnostics, in the same order.

Compared on every spec in the repository (examples, stdlib, the corpus, the goldens' inputs),
on mutations of them, on generated schema blocks (tests/strategies.py) and on generated block
texts full of what draws a diagnostic; and a block that needs a diagnostic is handed to the tree
path, which reports it with the same wording and span as ever.
"""
from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_dsl import fastlex, fastparse, ir, lower
from afp_dsl.frozen import FrozenMap, freeze
from afp_dsl.printer import print_module
from strategies import objects
from test_fastparse import SPECS, budget, mutated


def _deep(x):
    """A value with every attrs field (spans too), for comparing IR exactly."""
    if attrs.has(type(x)):
        return (type(x).__name__,) + tuple((f.name, _deep(getattr(x, f.name))) for f in attrs.fields(type(x)))
    if isinstance(x, (tuple, list)):
        return tuple(_deep(i) for i in x)
    if isinstance(x, FrozenMap):
        return ("map",) + tuple((k, _deep(v)) for k, v in x.items())
    return (type(x).__name__, x)


def _lowered(text: str, fused: bool, parse_as: str = "spec.afp"):
    """(IR, diagnostics) of `text` through the fast parser, its schema blocks fused or as trees;
    None when the fast path gives up."""
    got = fastparse.parse_tree(text, parse_as if fused else None)
    if got is None:
        return None
    module, diags = lower.lower_module(got[0], "spec.afp", text, lambda rel: None)
    return _deep(module), [_deep(d) if attrs.has(type(d)) else repr(d) for d in diags]


def _fused_blocks(text: str) -> int:
    got = fastparse.parse_tree(text, "spec.afp")
    fused_decls = [d.value for d in got[0].children if type(d) is fastlex.Lowered]  # (its blocks too)
    return sum(type(item.children[-1]) is fastlex.Lowered for decl in got[0].children
               for item in decl.children if not isinstance(item, str) and item.data == "schema_attr"
               ) + sum((d.input is not None) + (d.output is not None) for d in fused_decls)


def assert_same(text: str) -> None:
    fused = _lowered(text, True)
    assert fused == _lowered(text, False), text


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_spec_in_the_repository(path) -> None:
    assert_same(path.read_bytes().decode("utf-8", errors="replace"))


@budget(150)
@given(mutated())
def test_mutated_specs(text: str) -> None:
    assert_same(text)


@budget(150)
@given(objects(depth=3))
def test_generated_schema_blocks(doc) -> None:
    tool = ir.Tool(name="t", description="d", input=ir.Schema(json=freeze(doc), origin="block"))
    assert_same(print_module(ir.Module(key="gen.afp", decls=(tool,))))


# Block texts built from pieces, many of which draw a diagnostic (or are not valid syntax).
_NAMES = st.sampled_from(["a", "b", "city", "steps", "input", "x" * 64, "y" * 65, "null", "true"])
_TYPES = st.sampled_from(["string", "integer", "number", "boolean", "any", "object", "null", "strin",
                          '"a" | "b"', "1 | 2.5", "true | null", "null | 1", '"a\\tb" | "c"', '"bad\\q"',
                          '"""\n  m\n"""', "1e999", "-0", "[string]", "[[integer]]", "{ a: string, ... }",
                          "[string(min_length: 1)]", "[integer(min: 0, max: 3,)]", "[string(min: 1)]",
                          "[[number(max: 2)](max_items: 1)]", "[integer()]", "[strin(min: 1)]"])
_CONSTRAINTS = st.sampled_from(["min: 0", "max: 1.5", "min: -3", "min: 1e999", "min_length: 1",
                                "min_length: -1", "max_length: 2.5", 'pattern: "^a+$"', 'pattern: "("',
                                'format: "email"', 'format: """\n  x\n"""', "min_items: 1", "nope: 1",
                                "min: true", "min: x", 'min: "1"', 'pattern: "\\d"', "exclusive_max: 3"])
_TAILS = st.sampled_from(["", ' "A label"', ' "tab\\t"', ' "bad \\q"', ' """\n  long\n"""', " = 1",
                          ' = "x"', " = null", ",", " ,"])


@st.composite
def _fields(draw, depth: int) -> str:
    if draw(st.integers(0, 9)) == 0:
        return "..."
    stype = draw(_TYPES)
    if depth > 0 and draw(st.booleans()):
        stype = "{ " + " ".join(draw(st.lists(_fields(depth - 1), max_size=3))) + " }"
    cons = draw(st.lists(_CONSTRAINTS, max_size=3))
    cons_text = "(" + ", ".join(cons) + draw(st.sampled_from(["", ","])) + ")" if cons or draw(st.booleans()) else ""
    return (draw(_NAMES) + draw(st.sampled_from(["", "?"])) + ": " + stype + cons_text + draw(_TAILS)
            + draw(st.sampled_from(["", ",", "\n"])))


@budget(300)
@given(st.lists(_fields(2), max_size=5), st.sampled_from(["input", "output"]))
def test_generated_block_texts(fields, key) -> None:
    assert_same(f'tool t {{ description = "d"\n  {key} {{ ' + " ".join(fields) + " }\n}\n")


@pytest.mark.parametrize(("block", "code"), [
    ("{ a: strin }", "AFP301"),                          # unknown type
    ("{ a: string, a: integer }", "AFP301"),             # field given twice
    ("{ a: string, ..., ... }", "AFP301"),               # `...` twice
    ("{ a: integer(min: 1, min: 2) }", "AFP301"),        # constraint twice
    ("{ a: string(min: 1) }", "AFP301"),                 # constraint not for that type
    ("{ a: string(nope: 1) }", "AFP301"),                # unknown constraint
    ("{ a: string(min_length: -1) }", "AFP301"),         # wrong value
    ('{ a: string(pattern: "(") }', "AFP004"),           # regex that does not compile
    ("{ a: number(max: 1e999) }", "AFP008"),             # number out of range
    ('{ a: string "bad \\q" }', "AFP005"),               # invalid escape in a label
    ('{ a: "x" | "\\q" }', "AFP005"),                    # ... in a literal
    ("{ " + "n" * 65 + ": string }", "AFP110"),          # name too long
    ('{ a: integer = "x" }', "AFP302"),                  # default not satisfying the field
    ("{ b: { a: strin } }", "AFP301"),                   # any of these, nested
    ("{ a: [string(min: 1)] }", "AFP301"),               # an item's constraint not for its type
])
def test_blocks_needing_a_diagnostic_get_it_from_the_tree_path(block, code) -> None:
    text = f'tool t {{ description = "d"\n  input {block}\n}}\n'
    fused = _lowered(text, True)
    assert fused == _lowered(text, False)
    assert code in repr(fused[1])
    assert _fused_blocks(text) == 0


def test_clean_blocks_are_fused() -> None:
    text = ('tool t { description = "d"\n'
            '  input { id: string(min_length: 1) "An id", count?: integer(min: 0), ... }\n'
            '  output { status: "ok" | "fail", items: [{ a: null, b?: any }], n: number """\n  x\n"""\n'
            '    m: string(format: """\n  f\n""", max_length: 9,) }\n}\n')
    assert _fused_blocks(text) == 2
    assert_same(text)
    module = lower.lower_module(fastparse.parse_tree(text, "spec.afp")[0], "spec.afp", text, lambda r: None)[0]
    pointers = dict(module.decls[0].output.pointers)
    assert list(pointers) == ["/properties/status", "/properties/items", "/properties/items/items/properties/a",
                              "/properties/items/items/properties/b", "/properties/n", "/properties/m"]
    assert text[pointers["/properties/items/items/properties/b"].start:][:1] == "b"


def test_a_tree_lowered_under_another_name_gets_spans_in_that_file() -> None:
    text = 'tool t { description = "d", input { a: string } }\n'
    assert _lowered(text, True, parse_as="other.afp") == _lowered(text, False)


def test_blocks_nested_past_the_bound_still_go_to_lark() -> None:
    deep = "{ a: " * (fastlex.MAX_NESTING + 1) + "string" + " }" * (fastlex.MAX_NESTING + 1)
    text = f'tool t {{ description = "d", input {deep} }}\n'
    assert fastparse.parse_tree(text, "spec.afp") is None
    assert fastparse.parse_tree(text) is None
