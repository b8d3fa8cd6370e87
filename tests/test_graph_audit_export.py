"""Audit of the graph export against tooling.md §4: DOT that Graphviz reads, captions that keep
every value of a guard.

* A label is used verbatim, but a NUL in it made `to_dot` write a file Graphviz rejects whole
  ("syntax error … scanning a quoted string"): it is written `␀` (U+2400).
* Strings are written unquoted in captions, so `result.note == ""` read `result.note = ` (the
  value vanished): an empty or blank string is written `""`, in captions and refusal notes.
The Graphviz syntax check runs only where the `dot` program is installed.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from afp_dsl import graph_export as gx
from afp_dsl.api import analyse
from afp_dsl.graph_captions import readable_condition

SPEC = '''agent z { graph = g }
tool t { description = "t" output { note: string, n: number } }
skill a { description = "a" tools = [t] }
skill b { description = "b" }
graph g {
  entry a ENTRY
  route a -> b on t ROUTE
  route b -> a
}
'''

LABELS = ['"x\\u0000y"', '"a\\\\b"', '"say \\"hi\\""', '"line\\nbreak"', '"cr\\rhere"',
          '"<b>x</b> | {y}"', '"\\\\N \\\\G \\\\l"', '"émoji 🚀"', '"end"', '"x\\\\"']


def _program(entry: str = "", route: str = ""):
    program, diags = analyse(SPEC.replace("ENTRY", entry).replace("ROUTE", route))
    assert program is not None and not [d for d in diags if d.severity.name == "ERROR"], diags
    return program


def test_a_nul_in_a_label_is_no_nul_in_the_dot_file() -> None:
    dot = gx.to_dot(_program(route='"x\\u0000y"'))
    assert "\x00" not in dot
    assert '[label="x\u2400y"]' in dot
    # JSON and Mermaid keep the label as written (JSON escapes it; Mermaid's parser reads it)
    edge = json.loads(gx.to_json(_program(route='"x\\u0000y"')))["edges"][1]
    assert edge["caption"] == "x\x00y"


@pytest.mark.parametrize("label", LABELS)
def test_graphviz_reads_every_label(label: str) -> None:
    dot_program = shutil.which("dot")
    if dot_program is None:
        pytest.skip("Graphviz (`dot`) is not installed")
    text = gx.to_dot(_program(entry=f"when message mentions [\"x\"] {label}", route=label))
    proc = subprocess.run([dot_program, "-Tcanon"], input=text.encode("utf-8"),
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr.decode("utf-8", "replace")


def test_an_empty_string_in_a_guard_is_written_quoted() -> None:
    program = _program(route='when result.note == "" or result.note == " "')
    mermaid = gx.to_mermaid(program)
    assert '|on t when result.note = #quot;#quot; OR result.note = #quot; #quot;|' in mermaid
    edge = json.loads(gx.to_json(program))["edges"][1]
    assert edge["caption"] == 'on t when result.note = "" OR result.note = " "'
    assert '[label="on t when result.note = \\"\\" OR' in gx.to_dot(program)
    # other strings stay unquoted
    assert "|on t when result.note = x|" in gx.to_mermaid(_program(route='when result.note == "x"'))


def test_a_refusal_note_keeps_an_empty_string_quoted() -> None:
    assert readable_condition('result.note == "" and message == "a"') == 'result.note = "" AND message = a'


# ---------------------------------------------------------------- route clauses (language.md §5.4)
ROUTE_SPEC = '''tool t { description = "t" }
tool u { description = "u" }
skill a { description = "a" tools = [t, u] }
skill b { description = "b" }
graph g {
  entry a
  ROUTE
  route b -> a
}
'''


@pytest.mark.parametrize("route, message, help", [
    ("route a -> b on t, u", "a route waits for one tool: `on t, u` names two",
     "write one route per tool (`on t` and `on u`)"),
    ("route a -> b on t or u", "a route waits for one tool: `on t or u` names two",
     "write one route per tool (`on t` and `on u`)"),
    ("route a -> b on t status success, failure",
     "several statuses are written as a list, not `status success, failure`",
     "write `status [success, failure]`"),
    ("route a -> b status success or failure",
     "several statuses are written as a list, not `status success or failure`",
     "write `status [success, failure]`"),
])
def test_two_tools_or_statuses_in_one_clause_say_so(route: str, message: str, help: str) -> None:
    """`on t, u` was "expected `=` after the attribute name, found name `route`" on the next
    line: the `,` ends a graph statement, so `u` was read as an attribute key."""
    import afp_dsl
    text = ROUTE_SPEC.replace("ROUTE", route)
    (d,) = afp_dsl.check(text)
    assert (d.code, d.message) == ("AFP001", message), d
    assert help in (d.help or ""), d.help
    start = text.index(route)  # the label is on the route, not on the next statement
    assert start < d.labels[0].span.start < d.labels[0].span.end <= start + len(route)


@pytest.mark.parametrize("route", ["route a -> b on t,", "route a -> b on t, route b -> b",
                                   "route a -> b on t status [success, failure]"])
def test_commas_between_graph_statements_stay_valid(route: str) -> None:
    import afp_dsl
    assert not [d for d in afp_dsl.check(ROUTE_SPEC.replace("ROUTE", route)) if d.code == "AFP001"]


def test_mermaid_parses_the_audited_captions() -> None:
    """The labels above and quoted empty strings, through Mermaid's own parser (skipped, as in
    test_mermaid, where node or tests/js/node_modules is missing)."""
    from test_mermaid import parse_all
    diagrams = [gx.to_mermaid(_program(entry=f"when message mentions [\"x\"] {label}", route=label))
                for label in LABELS]
    diagrams.append(gx.to_mermaid(_program(route='when result.note == "" or result.note == " "')))
    results = parse_all(diagrams)
    bad = [(d, r["error"]) for d, r in zip(diagrams, results) if not r["ok"]]
    assert not bad, bad[0]


def test_graphviz_reads_the_dot_of_every_example() -> None:
    """tooling §4: `dot` output is Graphviz; every example's graph (and the stress spec), with
    and without a run overlay, through `dot -Tcanon` where Graphviz is installed."""
    dot_program = shutil.which("dot")
    if dot_program is None:
        pytest.skip("Graphviz (`dot`) is not installed")
    from test_graph_export import CASES
    for _, spec, graph in CASES:
        program, _ = analyse(spec)
        first = json.loads(gx.to_json(program, graph))["nodes"][0]["skill"]
        for text in (gx.to_dot(program, graph),
                     gx.to_dot(program, graph, visited=[first], taken=[(None, first)],
                               refused={(first, first): 'x "y" \\ <z>'})):
            proc = subprocess.run([dot_program, "-Tcanon"], input=text.encode("utf-8"),
                                  capture_output=True, timeout=60)
            assert proc.returncode == 0 and not proc.stderr, (spec, proc.stderr[-500:])
