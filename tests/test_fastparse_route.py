"""A graph's route lowered by the parser itself (`fastparse_route`) is exactly what
`Lowerer.route` builds from the route's tree: the same IR with every span (IR equality ignores
spans, so the comparison walks every attrs field) and the same diagnostics, in the same order.

Compared on every spec in the repository, on mutations of route-heavy texts, on generated graphs
(tests/strategies.py) and on generated route texts full of what draws a diagnostic; and a route
that needs a diagnostic is handed to the tree path, which reports it as ever.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_dsl import fastlex, fastparse, ir
from afp_dsl.printer import print_module
from bench.compile import generate
from strategies import graphs, names
from test_fastparse import SPECS, budget
from test_fastparse_schema import _lowered


def _routes(text: str, fused: bool) -> list:
    got = fastparse.parse_tree(text, "spec.afp" if fused else None)
    return [item for decl in got[0].children for item in decl.children
            if not isinstance(item, str) and item.data == "route_stmt"]


def _fused_routes(text: str) -> int:
    return sum(type(r) is fastlex.Lowered for r in _routes(text, True))


def assert_same(text: str) -> None:
    assert _lowered(text, True) == _lowered(text, False), text


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_spec_in_the_repository(path) -> None:
    assert_same(path.read_bytes().decode("utf-8", errors="replace"))


def test_the_benchmark_graph_is_fused_and_the_same() -> None:
    text = generate(30)
    assert _fused_routes(text) == len(_routes(text, False)) == 33
    assert_same(text)


@budget(200)
@given(graphs(names, calls=True))
def test_generated_graphs(graph) -> None:
    assert_same(print_module(ir.Module(key="gen.afp", decls=(graph,))))


# Route texts built from pieces, many of which draw a diagnostic (or are not valid syntax).
_REFS = st.sampled_from(["a", "b", "m.a", "on", "when", "status", "x" * 70])
_OPERANDS = st.sampled_from([
    "result.status", "result.items[0]", "result.items[1.5]", "result.x[-1]", "result[1e999]",
    "tool", "status.x", "skill.y.z", "not", "x.on", '"ok"', '"tab\\t"', '"bad\\q"', '"""\n  m\n"""',
    "1", "-2.5", "1e999", "true", "false", "null", "/a+/i", "/a/g", "/a/ii", "/(/", "[]",
    '["a", 1,]', "[a == 1]", "{a: 1}", "f(x)", "returned(t)", "active(m.s)", "returned(a.b.c)",
    "returned(x[0])", "returned()", "returned(a, b)", "returned(a == 1)", "agent(x)", "returns(1)",
    "(a)", '("s")', "(a or b)", "tool(x)"])
_BINARY = st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in", "matches", "mentions",
                           "and", "or", "not"])


@st.composite
def _conditions(draw, depth: int) -> str:
    left = draw(_OPERANDS) if depth == 0 or draw(st.booleans()) else draw(_conditions(depth - 1))
    if draw(st.integers(0, 3)) == 0:
        return left
    op = draw(_BINARY)
    right = draw(_OPERANDS) if depth == 0 or draw(st.booleans()) else draw(_conditions(depth - 1))
    return f"{'not ' * draw(st.integers(0, 2))}{left} {op} {right}"


@st.composite
def _route_texts(draw) -> str:
    parts = [f"route {draw(_REFS)} {draw(st.sampled_from(['->', '->', '=>']))} {draw(_REFS)}"]
    if draw(st.booleans()):
        parts.append(f"on {draw(_REFS)}")
    if draw(st.booleans()):
        parts.append("status " + draw(st.sampled_from(["ok", "[ok, failed]", "[ok,]", "[]", "[a.b]", "1"])))
    if draw(st.booleans()):
        parts.append("when " + draw(_conditions(2)))
    parts.append(draw(st.sampled_from(["", '"A label"', '"tab\\t"', '"bad \\q"', '"""\n  long\n"""'])))
    return " ".join(parts) + draw(st.sampled_from(["", ",", " ,", "\n"]))


@budget(400)
@given(st.lists(_route_texts(), max_size=4))
def test_generated_route_texts(routes) -> None:
    assert_same("graph g {\n  entry a\n  " + "\n  ".join(routes) + "\n}\n")


@budget(150)
@given(st.data())
def test_mutated_route_heavy_texts(data) -> None:
    text = generate(4) + "graph h {\n  entry a\n  route a -> b on t when not (x == 1) or y in [1, 2] \"l\",\n}\n"
    toks = fastlex.token_pairs().findall(text)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(toks) - 1))
        new = data.draw(st.sampled_from(["", "x", '"s"', "1", "(", ")", "[", "]", ",", ".", "->", "=>",
                                         "==", "and", "or", "not", "in", "on", "when", "status", "/r/"]))
        toks[i] = (toks[i][0], new)
    assert_same("".join(ws + tok for ws, tok in toks))


@pytest.mark.parametrize(("route", "code"), [
    ("route a => b", "AFP001"),                                    # `=>` for `->`
    ('route a -> b "bad \\q"', "AFP005"),                          # invalid escape in a label
    ('route a -> b when x == "bad \\q"', "AFP005"),                # ... in a literal
    ("route a -> b when x > 1e999", "AFP008"),                     # number out of range
    ("route a -> b when x[1.5] == 1", "AFP001"),                   # index not a whole number
    ("route a -> b when x matches /(/", "AFP004"),                 # regex that does not compile
    ("route a -> b when x matches /a/g", "AFP004"),                # unknown flag
    ("route a -> b when x matches /a/ii", "AFP004"),               # repeated flag
    ("route a -> b when x == {a: 1}", "AFP106"),                   # a map in a condition
    ("route a -> b when f(x)", "AFP106"),                          # a value call
    ("route a -> b when returned(a.b.c)", "AFP106"),               # `returned` of a path
    ("route a -> b when x in [1, agent(y)]", "AFP106"),            # any of these, nested
])
def test_routes_needing_a_diagnostic_get_it_from_the_tree_path(route, code) -> None:
    text = f"graph g {{\n  entry a\n  {route}\n}}\n"
    fused = _lowered(text, True)
    assert fused == _lowered(text, False)
    assert code in repr(fused[1])
    assert _fused_routes(text) == 0


def test_clean_routes_are_fused() -> None:
    text = ('graph g {\n  entry a\n'
            '  route a -> b on t status [ok, failed,] when result.items[0].id == "x" and not '
            'returned(t) or active(m.s) "label",\n'
            '  route b -> c when x in [1, -2.5, true, null] and y mentions ["a"] and z matches /a+/im\n'
            '  route c -> a when w mentions """\n    m\n    """ """\n  long\n  """\n'
            '  route c -> b status ok\n}\n')
    assert _fused_routes(text) == 4
    assert_same(text)


def test_unusual_routes_go_to_the_tree_and_agree() -> None:
    text = "graph g {\n  entry a\n  route m.a -> b\n  route a -> b when (x == 1)\n  route a -> b when (\"s\") == (a)\n}\n"
    assert _fused_routes(text) == 0
    assert_same(text)


def test_conditions_nested_past_the_bound_still_go_to_lark() -> None:
    for deep in ("not " * (fastlex.MAX_NESTING + 1) + "x", "[" * (fastlex.MAX_NESTING + 1) + "]" * (fastlex.MAX_NESTING + 1)):
        text = f"graph g {{\n  entry a\n  route a -> b when {deep}\n}}\n"
        assert fastparse.parse_tree(text, "spec.afp") is None
        assert fastparse.parse_tree(text) is None
