"""The parser's fast path builds exactly what Lark builds, or gives up.

`afp_dsl.fastparse` replaces Lark on the hot path; the grammar stays normative. For generated
specs, every spec in the repository and mutations of them: when the fast path returns a tree,
Lark accepts the text too and both trees are identical (rule names, kept tokens and their types,
every span) and lower to the same IR and diagnostics; when Lark rejects the text, the fast path
gives up (so syntax errors are always Lark's). Also: its keyword tables match the grammar, and
the nesting it accepts stays under `lower.MAX_DEPTH`.
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afp_dsl import fastlex, fastparse, lower, parser, resources
from afp_dsl.printer import print_module
from strategies import modules

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(p for p in ROOT.rglob("*.afp") if ".venv" not in p.parts and p.is_file())


def shape(node) -> tuple:
    """Everything `lower` can observe of a tree, lark's or the fast path's."""
    if isinstance(node, str):
        return ("token", node.type, str(node), node.start_pos, node.end_pos)
    meta = node.meta
    span = None if getattr(meta, "empty", True) else (meta.start_pos, meta.end_pos)
    return (node.data, span, tuple(shape(c) for c in node.children))


def lark_tree(text: str):
    try:
        return parser._parser().parse(text)
    except lark.exceptions.UnexpectedInput:
        return None


def lowered(tree, text: str):
    module, diags = lower.lower_module(tree, "spec.afp", text, lambda rel: None)
    return module, diags


def assert_same(text: str) -> str:
    """Compare both paths on `text`; returns what happened."""
    slow = lark_tree(text)
    fast = fastparse.parse_tree(text)
    if fast is None:
        return "gave up"
    assert slow is not None, f"the fast path accepted text Lark rejects:\n{text}"
    assert shape(fast[0]) == shape(slow), text
    assert lowered(fast[0], text) == lowered(slow, text), text
    comments = [(t.start_pos, t.end_pos, str(t)) for t in fast[1]]
    assert comments == [(m.start(), m.end(), m.group()) for m in _comments(text, slow)], text
    return "same"


def _comments(text: str, tree) -> list[re.Match]:
    """Comments as Lark's lexer sees them: `#...` outside the tokens of the tree."""
    taken = sorted((t.start_pos, t.end_pos) for t in tree.scan_values(lambda v: isinstance(v, lark.Token)))
    found = []
    for m in re.finditer(r"#[^\n\r]*", text):
        if not any(s <= m.start() < e for s, e in taken) and not _in_string(text, m.start()):
            found.append(m)
    return found


def _in_string(text: str, pos: int) -> bool:
    line_start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    quotes = len(re.findall(r'(?<!\\)"', text[line_start:pos]))
    return quotes % 2 == 1 or text.count('"""', 0, pos) % 2 == 1


def budget(n: int) -> settings:
    return settings(derandomize=True, deadline=None, max_examples=n, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------- the repository's specs
@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_spec_in_the_repository(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
    outcome = assert_same(text)
    adversarial = "corpus" in path.parts or "nesting" in path.name  # may be left to Lark
    if lark_tree(text) is not None and not adversarial:
        assert outcome == "same", f"the fast path gave up on a valid spec: {path}"


# ---------------------------------------------------------------- generated specs
@budget(200)
@given(modules())
def test_generated_modules_take_the_fast_path_and_agree(module) -> None:
    text = print_module(module)
    assert assert_same(text) == "same", text


_TOKENS = fastlex.token_pairs()
_INSERTS = sorted(fastparse.KEYWORDS) + ["x", '"s"', "1", "-2", "(", ")", "{", "}", "[", "]", ",", ":",
                                          "=", ".", "->", "=>", "==", "?", "*", "|", "/r/", '"""m"""',
                                          "...", "#c\n", "\n"]


@st.composite
def mutated(draw) -> str:
    source = draw(st.sampled_from(SPECS)).read_bytes().decode("utf-8", errors="replace")
    toks = _TOKENS.findall(source)
    for _ in range(draw(st.integers(1, 3))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["drop", "insert", "replace", "copy"]))
        if op == "drop":
            del toks[i]
        elif op == "insert":
            toks.insert(i, (" ", draw(st.sampled_from(_INSERTS))))
        elif op == "replace":
            toks[i] = (toks[i][0], draw(st.sampled_from(_INSERTS)))
        else:
            toks.insert(i, toks[draw(st.integers(0, len(toks) - 1))])
    return "".join(ws + tok for ws, tok in toks)


@budget(300)
@given(mutated())
def test_mutated_specs_agree_or_go_to_lark(text: str) -> None:
    assert_same(text)


@pytest.mark.parametrize("text", [
    "agent a { x = 1 }\n agent b { entry = 1 }",  # a keyword where the grammar takes no name
    "skill s { description = \"d\"\n steps { a when } }",
    "tool t { description = \"d\"\n input { a: string = x\n steps: string } }",
    "graph g { route a -> b\n status = 3 }",
    "agent a { x = a == b == c }",
    "agent a { x = f(a,) }",
    "agent a { x = [1, 2,] y = {a: 1,} }",
    "agent a { x = (\"s\") == (a) }",
    "fact f { data = not not x }",
    "policy p { before = 1 }",
    "test t { approve = 1 }",
    "agent a { x = \"\"\"unterminated }",
    "agent a { x = 1 } \u00a0",
    "agent a { x = 1 } \u20ac",
    'tool t { description = "d"\n input { a@: string } }',  # a stray is no `?`
    'tool t { description = "d"\n input { a?: string("x, b: "y" } }',
    "agent a { x = 1 - 2 y = a / b z = 0.5e+3 w = -0 v = 01 u = a..b t = a...b }",
    "agent a { x = a <= b y = a =< b z = a ! b w = a != b }",
])
def test_edge_cases_agree_or_go_to_lark(text: str) -> None:
    assert_same(text)


# ---------------------------------------------------------------- tables and limits
def test_keyword_tables_match_the_grammar() -> None:
    grammar = resources.grammar_text()
    words = set(re.findall(r'"([a-z_]+)"', grammar))
    assert fastparse.KEYWORDS == words
    kw_rule = re.search(r"!_kw:(.*?)\n\n", grammar, re.S).group(1)
    assert fastlex.KW_ANY == set(re.findall(r'"([a-z_]+)"', kw_rule))
    attr_rule = re.search(r"!attr_key:(.*?)\n_COMMA", grammar, re.S).group(1)
    assert fastparse.ATTR_KEYS == set(re.findall(r'"([a-z_]+)"', attr_rule))


def test_no_keyword_is_taken_right_after_a_step_name() -> None:
    """A step's name has its own rule: after it the LALR state takes no keyword, so a tool named
    like one (`fails`, `returns`, `expect`...) can be the next step; the fast parser agrees."""
    table = parser._parser()

    def keywords(prefix: str) -> set[str]:
        ip = table.parse_interactive(prefix)
        ip.exhaust_lexer()
        return {c.lower() for c in ip.choices() if c.lower() in fastparse.KEYWORDS}
    assert keywords("skill s { steps { a ") == set()
    assert keywords("skill s { steps { a.b ") == set()
    assert keywords("skill s { steps { a, ") == set()
    assert "fails" in keywords("test t { tool a ")  # (a shared `qname` would have taken it)


@pytest.mark.parametrize("fields", ["steps: string", "a?: any, steps: string",
                                    "a: string = \"x\"\n steps?: number"])
def test_a_field_named_steps_is_its_own_token_on_both_paths(fields: str) -> None:
    """`field_name: NAME | _kw | "steps"`: Lark's token is `STEPS`, and the fast path's too."""
    assert assert_same(f'tool t {{ description = "d"\n output {{ {fields} }} }}') == "same"


@pytest.mark.parametrize("word", sorted(fastparse.KEYWORDS - {"steps"}))
def test_a_step_may_be_named_like_any_keyword(word: str) -> None:
    text = f"skill s {{\n  steps {{\n    a\n    {word}\n    b.{word} \"note\"\n  }}\n}}\n"
    slow = parser._parser().parse(text)
    names = [list(s.find_data("qname"))[0].children[-1] for s in slow.find_data("step")]
    assert names == ["a", word, word]
    assert assert_same(text) == "same"


def _depth(tree) -> int:
    best, stack = 0, [(tree, 0)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in node.children if not isinstance(c, str))
    return best


@pytest.mark.parametrize("make", [
    lambda d: "fact f { data = " + "[" * d + "1" + "]" * d + " }",
    lambda d: "fact f { data = " + "{a: " * d + "1" + "}" * d + " }",
    lambda d: "fact f { data = " + "{a: [x == 1 and y or z, " * (d // 2) + "1" + "]}" * (d // 2) + " }",
    lambda d: "fact f { data = " + "not " * d + "x == 1 }",
    lambda d: "fact f { data = " + "f(a and " * d + "b" + ")" * d + " }",
    lambda d: "tool t { description = \"d\"\n input { " + "a: {" * d + "b: string" + "}" * d + " } }",
    lambda d: "tool t { description = \"d\"\n input { " + "a: [{" * (d // 2) + "b: string" + "}]" * (d // 2) + " } }",
    lambda d: "test t { tool a returns " + "{a: " * d + "1" + "}" * d + " }",
])
def test_accepted_nesting_stays_under_the_depth_limit(make) -> None:
    deepest = 0
    for d in range(1, fastlex.MAX_NESTING + 3):
        got = fastparse.parse_tree(make(d))
        if got is not None:
            deepest = max(deepest, _depth(got[0]))
    assert 0 < deepest < lower.MAX_DEPTH
    assert fastparse.parse_tree(make(fastlex.MAX_NESTING + 2)) is None  # deeper: Lark decides


def test_checking_a_valid_spec_does_not_import_lark() -> None:
    """Start-up time: lark is imported only when the fast path gives up (errors included)."""
    import subprocess
    import sys
    code = ("import sys, afp_dsl; d = afp_dsl.check('agent a {\\n  system = \"hi\"\\n}\\n'); "
            "print('lark' in sys.modules, len(d)); afp_dsl.check('agent {'); print('lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "0", "True"], out.stdout + out.stderr


# ---------------------------------------------------------------- the lexer
# The master regex before its alternatives were reordered for speed (each now starts with a
# literal or a class): both must cut every text into the same tokens.
_PLAIN_TOKEN = (r'([A-Za-z_][A-Za-z0-9_]*|[{}()\[\],:?*|]|"""[\s\S]*?"""|"[^"\\\n\r]*(?:\\.[^"\\\n\r]*)*"'
                r'|#[^\n\r]*|->|=>|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_])'
                r'|/(?![/*])(?:[^/\\\n\r\[]|\\[^\n\r]|\[\^?\]?(?:[^\]\\\n\r\[]|\\[^\n\r])*\]|\[)++/[A-Za-z]*'
                r'|/[^\n\r]*'  # (a `/` that starts no regex: a stray, to the end of its line)
                r'|==|!=|<=|>=|\.\.\.'
                r'|-?[0-9][0-9A-Za-z_.]*|[^ \t\f\r\n\ufeff])')  # (a number glued to a word: one stray)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PIECES = ["a", "_b1", "0", "01", "8model", "0x1", "-", "-0", "-12", "1.5", "2e5", "3E-2", ".", "..", "...", "=", "==",
           "=>", "<", "<=", ">", ">=", "!", "!=", "->", '"', '""', '"""', '"x"', '"\\"', "\\", "/",
           "/r/i", "//", "/[/]/", "[^", "/a[", "#c", "\n", " ", "\t", "{", "}", "(", ")", "[", "]", ",", ":", "?", "*", "|",
           "@", "\u00a0", "\u20ac", "\ufeff", "$", "~", "'"]


@budget(400)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_the_lexer_cuts_text_as_the_plain_regex_and_kinds_each_token(pieces) -> None:
    text = "".join(pieces)
    parts = re.split(_PLAIN_TOKEN, text)
    offsets = list(itertools.accumulate(map(len, parts)))
    want = list(zip(parts[1::2], offsets[0:-1:2], offsets[1::2]))
    try:
        kinds, vals, starts, ends, comments = fastlex.lex(text)
    except fastlex.Bail:  # only for a stray character beyond ASCII, or a number glued to a word
        assert not all(tok[0].isascii() and not _glued(tok) for tok, _, _ in want)
        return
    got = sorted([*zip(vals[:-1], starts, ends), *((str(c), c.start_pos, c.end_pos) for c in comments)],
                 key=lambda t: t[1])
    assert got == want
    for kind, val, s, e in zip(kinds[:-1], vals, starts, ends):
        assert text[s:e] == val
        assert kind == _plain_kind(val), (val, kind)
    assert kinds[-1] == "$" and all(str(c).startswith("#") for c in comments)
    kept = [e for tok, _, e in want if not tok.startswith("#")]
    assert starts[-1] == ends[-1] == (kept[-1] if kept else 0)  # the sentinel: after the last token


@pytest.mark.parametrize("text", ["a" + " " * 200_000, " \n" * 100_000, "\ufeff" * 50_000 + "#x\n\t"])
def test_the_lexer_ends_at_once_on_a_long_run_of_trailing_blanks(text) -> None:
    """The scan stops at the last token: a search would otherwise retry at every trailing blank
    and scan the rest of them each time (quadratic, minutes for these texts)."""
    kinds, vals, starts, ends, comments = fastlex.lex(text)
    assert kinds[-1] == "$" and len(vals) == 2 - len(comments) - (text.strip() == "")


def test_equal_token_texts_are_one_string() -> None:
    """The IR's names share their strings: a declaration's name, each reference to it and each
    schema key of that name are the very same object (so a table lookup of one meets the other
    at once)."""
    text = ('tool lookup { description = "d", output { state: string } }\n'
            'skill first { description = "d", tools = [lookup] }\n'
            'skill second { description = "d", tools = [lookup] }\n'
            'graph g { entry first\n route first -> second on lookup when result.state == "x" }\n')
    kinds, vals, *_ = fastlex.lex(text)  # (one-character strings are shared anyway: longer ones)
    assert len({id(v) for v in vals if v == "lookup"}) == 1 and vals.count("lookup") == 4
    module = lower.lower_module(fastparse.parse_tree(text, "f.afp")[0], "f.afp", text, lambda r: None)[0]
    tool, a, b, g = module.decls
    assert a.tools[0].name is tool.name and b.tools[0].name is tool.name
    assert g.routes[0].on.name is tool.name and g.routes[0].src.name is a.name
    assert g.routes[0].when.left.segments[0] is next(iter(tool.output.json["properties"]))


def _glued(tok: str) -> bool:
    """A number glued to a word (`8model`, `2e52e5`): the fast path gives up on it."""
    return tok[:1] in set("-0123456789") and len(tok) > 1 and tok not in ("->", "=>") and (
        not _NUMBER.fullmatch(tok))


def _plain_kind(tok: str) -> str:
    """A token's kind, decided the plain way (one Python test after another)."""
    punct = set("{ } ( ) [ ] , : = . ? * | < > == != <= >= ... -> =>".split())
    if tok[0].isascii() and (tok[0].isalpha() or tok[0] == "_"):
        return "W"
    if tok.startswith('"""') and len(tok) >= 6:
        return "M"
    if tok[0] == '"' and len(tok) > 1:
        return "S"
    if tok in punct:
        return tok
    if tok[0] in "0123456789" or (tok[0] == "-" and len(tok) > 1):
        return "N"
    if tok[0] == "/" and len(tok) > 1:
        return "R" if re.fullmatch(fastlex.REGEX, tok) else "~"
    return "~"


# Every way a default value can end (its last token decides Lark's lexer state), then a field
# named by a keyword outside `_kw`: Lark reads a NAME, and so does the fast path.
_DEFAULT_ENDS = ["null", "true", "false", "1", "-2", "1.5", '"s"', '"""m"""', "x", "x.y", "[1]", "[]",
                 "{a: 1}", "{}", "/r/", "/r/i", "returned(x)"]


@pytest.mark.parametrize("default", _DEFAULT_ENDS)
@pytest.mark.parametrize("word", ["note", "fails", "outcome", "trace", "steps"])
def test_keyword_field_names_after_a_default(default: str, word: str) -> None:
    text = f'tool t {{\n  description = ""\n  output {{ file: string = {default}\n {word}: string }}\n}}\n'
    assert assert_same(text) == "same", text
