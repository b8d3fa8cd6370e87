"""Lowering's shortcuts give exactly what the general path gives: the same IR (spans included)
and the same diagnostics, in the same order.

* `Converter.quick` reads common attribute values (strings, texts, names, lists of names)
  straight off the parse tree instead of converting the lowered `Lit`/`Path`/`ListExpr`.
* `ValueLowerer.expr` skips `clean_expr`'s walk when no map or value call was made while
  lowering the condition.
"""
from __future__ import annotations

import attrs
import pytest

from afp_dsl import attributes, lower, lower_values, parser
from afp_dsl.frozen import FrozenMap
from afp_dsl.source import SourceFile

SPECS = [
    'tool t { description = "A tool.", keep_runs = 3 }\n'
    'skill s { description = "d", body = "b", tools = [t, m.t, t] }\n'
    'agent a { system = """\n  hi\n  there\n""", skills = [s], graph = g, model = "m" }\n'
    'graph g { entry s }\n',
    # strings with escapes, bad escapes and control characters
    'tool t { description = "tab\\tnew\\u0041" }\nskill s { description = "bad \\q", body = "x\\"y" }\n',
    # forms the shortcut leaves to the general path
    'skill s { description = 3, body = file("x.txt"), tools = [t[0], "t", t.a.b, t] }\n'
    'agent a { graph = g[1], skills = s, tools = [], system = ["x"] }\n'
    'agent b { graph = "g", skills = [a.b.c], context = [true], policies = [x.y] }\n'
    'test tt { agent = a.b }\n',
    # keywords as roots and segments
    'agent a { tools = [tool, status.skill, skill], graph = tool.input }\n',
    # repeated and unknown attributes, reserved names
    'skill s { description = "a", description = "b", tool = [x], body = "c" }\n',
    # conditions with and without maps and value calls (reported and replaced), parenthesised
    'skill a { description = "a", body = "b" }\n'
    'tool t { description = "t", check_in = args.x in [{k: 1}, 2] }\n'
    'graph g {\n  entry a when result.x in [{k: 1}]\n'
    '  route a -> a when (result.y == 2) and not ((result.z > 1))\n'
    '  route a -> a when file("x") == 1 and result.y == 2\n'
    '  route a -> a when returned(t) and not (result.z == {q: f(1)})\n'
    '  route a -> a on t when result.ok == true\n}\n',
]


def _deep(x):
    """A value with every attrs field (spans too), for comparing IR exactly."""
    if attrs.has(type(x)):
        return (type(x).__name__,) + tuple((f.name, _deep(getattr(x, f.name))) for f in attrs.fields(type(x)))
    if isinstance(x, (tuple, list)):
        return tuple(_deep(i) for i in x)
    if isinstance(x, FrozenMap):
        return ("map",) + tuple((k, _deep(v)) for k, v in x.items())
    return (type(x).__name__, x)


def _lowered(text: str, fast: bool, monkeypatch, use_lark: bool):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(attributes.Converter, "quick", lambda self, spec, node: attributes.NOT_QUICK)
            m.setattr(lower_values.ValueLowerer, "expr", lambda self, node: self.clean_expr(self.value(node)))
        src = SourceFile.of("t.afp", text)
        tree = parser._parser().parse(text) if use_lark else parser.parse(src).tree
        module, diags = lower.lower_module(tree, "t.afp", text, lambda rel: None)
    return _deep(module), [_deep(d) if attrs.has(type(d)) else repr(d) for d in diags]


@pytest.mark.parametrize("use_lark", [False, True])
@pytest.mark.parametrize("text", SPECS)
def test_quick_attribute_values_lower_as_the_general_path(text, use_lark, monkeypatch) -> None:
    assert _lowered(text, True, monkeypatch, use_lark) == _lowered(text, False, monkeypatch, use_lark)
