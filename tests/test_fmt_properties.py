"""Properties of `afp_dsl.format_source` (style guide §2.6: fmt is idempotent): on any text it
formats or refuses with a `CompileError` (never another exception); what it formats keeps its
tokens (read by `fastlex`'s regex, not the formatter's own reading) and its IR, and formatting
again changes nothing. Inputs: arbitrary text, mutated real specs, printed generated modules,
and real specs with their blanks reshuffled."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from strategies import modules
from test_properties import budget, mutated_specs, seed_texts, weird_text

from afp_dsl.diagnostics import CompileError
from afp_dsl.fastlex import token_pairs
from afp_dsl.fmt import format_source
from afp_dsl.loader import load_program
from afp_dsl.printer import print_module

_PAIRS = token_pairs()


def formatted_or_none(text: str) -> str | None:
    try:
        return format_source(text, "gen.afp")
    except CompileError as e:
        assert e.diagnostics and all(d.primary.span.file == "gen.afp" for d in e.diagnostics)
        return None


def token_texts(text: str) -> list[str]:
    """Every token's text (comments without trailing blanks, `\"\"\"` line endings as `\\n`)."""
    out = []
    for _, tok in _PAIRS.findall(text, 0, len(text.rstrip(" \t\f\r\n\ufeff"))):
        if tok.startswith("#"):
            tok = tok.rstrip()
        if tok.startswith('"""'):
            tok = tok.replace("\r\n", "\n").replace("\r", "\n")
        out.append(tok)
    return out


def declarations(text: str):
    program, diags = load_program(text=text, name="gen.afp")
    module = program.root_module if program is not None else None
    return (module.decls if module else None,
            [(i.path, i.alias) for i in module.imports] if module else None,
            sorted(d.code for d in diags))


def assert_formatted_well(text: str) -> None:
    out = formatted_or_none(text)
    if out is None:
        return
    assert format_source(out) == out, "not idempotent"
    assert token_texts(out) == token_texts(text)
    assert declarations(out) == declarations(text)
    assert out == "" or (out.endswith("\n") and not out.endswith("\n\n") and not out.startswith("\n"))
    assert "\r" not in out
    if '"""' not in out:  # (a text's lines are kept as they are)
        assert all(line == line.rstrip(" \t") for line in out.split("\n"))


@st.composite
def reblanked_specs(draw) -> tuple[str, str]:
    """(a real spec, the same spec with the blanks between its tokens redrawn: at least one blank
    everywhere, a line break kept after a comment): the same tokens in a messy layout."""
    text = draw(st.sampled_from(seed_texts()))
    pairs = _PAIRS.findall(text, 0, len(text.rstrip(" \t\f\r\n\ufeff")))
    blanks = st.sampled_from([" ", "  ", "\t", "\n", "\n\n\n", "\r\n", " \n\t ", "\n    "])
    out = []
    for i, (_, tok) in enumerate(pairs):
        gap = draw(blanks) if i else draw(st.sampled_from(["", "\n\n", "  "]))
        if i and pairs[i - 1][1].startswith("#") and "\n" not in gap:
            gap = "\n" + gap
        out.append(gap + tok)
    return text, "".join(out) + draw(st.sampled_from(["", "\n", "  \n\n"]))


@budget(150)
@given(st.one_of(weird_text, st.text(max_size=200)))
def test_any_text_is_formatted_or_refused(text):
    assert_formatted_well(text)


@budget(150)
@given(mutated_specs())
def test_mutated_specs_are_formatted_or_refused(text):
    assert_formatted_well(text)


@budget(100)
@given(reblanked_specs())
def test_reblanked_specs_keep_their_tokens_and_ir(pair):
    seed, messy = pair
    if formatted_or_none(seed) is not None:  # (blanks never decide whether a text parses)
        assert formatted_or_none(messy) is not None
    assert_formatted_well(messy)


@budget(100)
@given(modules())
def test_printed_modules_keep_their_ir(module):
    assert_formatted_well(print_module(module))
