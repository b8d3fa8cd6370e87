"""The graph drawn as inline SVG for the HTML report (tooling.md §5: "the graph with the run
overlay"): well-formed, escaped, deterministic, and the overlay marks what the run did."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import afp_dsl as afp
from afp_dsl.cli_trace import overlay_drawings
from afp_dsl.graph_svg import to_svg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = '''
agent g { graph = m tools = [t, u] }
tool t { description = "t" impl = returns({ok: true}) }
tool u { description = "u" }
skill a { description = "a" tools = [t] }
skill b { description = "b" tools = [t, u] }
skill c { description = "c" }
graph m {
  entry a when message mentions "<script>alert(1)</script>"
  route a -> b on t
  route b -> b on u
  route b -> a on t status failure
  route b -> c
  route a -> c when message mentions "skip & <go>"
}
'''


def _tree(svg: str):
    """The drawing as XML (inline in HTML it needs no namespace: the HTML parser gives it)."""
    return ET.fromstring(svg)


def test_every_skill_and_edge_is_drawn_and_the_text_is_escaped():
    svg = to_svg(afp.load(SPEC))
    root = _tree(svg)  # well-formed XML: every caption escaped
    nodes = root.findall(".//g[@class='node']")
    assert sorted(n.get("data-skill") for n in nodes) == ["a", "b", "c"]
    assert len(root.findall(".//g[@id]")) == 3 + 6  # skills, and one group per edge
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg == to_svg(afp.load(SPEC))  # deterministic


def test_the_overlay_marks_visited_skills_taken_and_refused_edges():
    svg = to_svg(afp.load(SPEC), visited={"a", "b"}, taken={(None, "a"), ("a", "b")},
                 refused={("b", "a"): "status == failure (actual success)", ("a", "b"): "x"})
    root = _tree(svg)
    visited = [g.get("data-skill") for g in root.findall(".//g[@class='node visited']")]
    assert visited == ["a", "b"]
    taken = root.findall(".//g[@class='edge taken']")
    refused = root.findall(".//g[@class='edge refused']")
    assert len(taken) == 2 and len(refused) == 1  # a taken edge is never shown refused
    assert "refused: status == failure (actual success)" in refused[0].find("title").text


def test_a_run_of_an_example_is_drawn_with_what_it_did():
    program = afp.load(EXAMPLES / "support" / "support.afp")
    agent = program.agent(provider=afp.providers.mock([[("lookup_order", {"order_id": "AB-12"})],
                                                       "done"]))
    r = agent.run("I was charged twice for order AB-12")
    mermaid, svg = overlay_drawings(program, list(r.trace))
    assert mermaid and svg and "flowchart TD" in mermaid
    root = _tree(svg)
    assert root.findall(".//g[@class='node visited']")
    assert root.findall(".//g[@class='edge taken']")


def test_no_graph_no_drawing():
    program = afp.load('agent g { }')
    r = program.agent(provider=afp.providers.mock(["hi"])).run("x")
    assert overlay_drawings(program, list(r.trace)) == (None, None)


def test_every_example_graph_and_every_stress_label_is_well_formed():
    """Each graph of the examples, and captions holding markup, quotes, pipes and line breaks."""
    from test_graph_export import CASES, SPEC as STRESS

    from afp_dsl.api import analyse
    drawn = 0
    for _, spec, graph in CASES:
        program, _ = analyse(spec)
        root = _tree(to_svg(program, graph))
        drawn += 1
        assert root.findall(".//g[@class='node']")
    for label in ['a|b', 'say "hi"', '<b>x</b>', "a (b) [c] {d}", "it's `t`", "a;b&c", "multi\nline",
                  "]]> <!-- x -->", "≥ ≤ ≠ ▶"]:
        program, diags = analyse(STRESS.replace('"back to | start"', json.dumps(label)))
        assert program is not None, diags
        _tree(to_svg(program, visited=["x"], taken=[(None, "x")]))
    assert drawn >= 3
