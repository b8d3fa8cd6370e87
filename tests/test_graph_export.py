"""Graph export: exact golden Mermaid per example, caption forms, DOT/JSON shape, the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from afp_dsl import graph_export as gx
from afp_dsl import ir
from afp_dsl.api import analyse
from afp_dsl.cli import main

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden" / "graph"


def example_diagrams() -> list[tuple[str, Path, str]]:
    """(golden name, spec, graph) for every graph of every example (and the stress spec)."""
    out = []
    specs = sorted(ROOT.glob("examples/*/*.afp")) + [GOLDEN / "stress.afp"]
    for spec in specs:
        program, _ = analyse(spec)
        if program is None:
            continue
        names = [n for n in gx.graph_names(program) if "." not in n]
        for name in names:
            out.append((spec.stem if len(names) == 1 else f"{spec.stem}__{name}", spec, name))
    return out


CASES = example_diagrams()


@pytest.mark.parametrize("golden,spec,graph", CASES, ids=[c[0] for c in CASES])
def test_golden_mermaid(golden: str, spec: Path, graph: str, update_goldens: bool) -> None:
    program, _ = analyse(spec)
    text = gx.to_mermaid(program, graph)
    path = GOLDEN / f"{golden}.mmd"
    if update_goldens or not path.exists():
        existed = path.exists()
        path.write_text(text, encoding="utf-8")
        assert existed, f"new golden written: {path}; review it and run again"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (run with --update-goldens)"


def test_examples_have_graphs_to_draw() -> None:
    assert len([c for c in CASES if c[1].parent != GOLDEN]) >= 3


SPEC = """
agent a { graph = g }
tool t { description = "t" output { level: string, score: number } }
skill x { description = "x" tools = [t] }
skill y { description = "y" }
skill z { description = "z" }
graph g {
  entry x when message mentions ["help", "refund"]
  route x -> y on t when result.level in ["high", "critical"] and result.score >= 0.7
  route x -> z on t status [failure, denied]
  route y -> z
  route z -> x status failure "back to | start"
}
"""


def _program():
    program, diags = analyse(SPEC)
    assert program is not None
    return program


def test_mermaid_format() -> None:
    assert gx.to_mermaid(_program()) == (
        "flowchart TD\n"
        "  __start__([▶ start])\n"
        '  n_x["x"]\n  n_y["y"]\n  n_z["z"]\n'
        '  __start__ -->|"when message mentions [help, refund]"| n_x\n'
        '  n_x -->|"on t when result.level in [high, critical] AND result.score ≥ 0.7"| n_y\n'
        "  n_x -->|on t status=failure,denied| n_z\n"
        "  n_y -.-> n_z\n"
        "  n_z -->|back to #124; start| n_x\n")


def test_mermaid_is_deterministic_and_overlay_styles_the_run() -> None:
    p = _program()
    assert gx.to_mermaid(p) == gx.to_mermaid(p, "g")
    text = gx.to_mermaid(p, visited=["x", "y"], taken=[(None, "x"), ("x", "y")])
    assert text.endswith("  class n_x,n_y visited\n  linkStyle 0,1 stroke:#1e8e3e,stroke-width:3px\n")


def test_guard_captions() -> None:
    c = ir.Compare
    p = ir.Path(root="result", segments=("n",))
    e = ir.Or(items=(ir.And(items=(c(op="!=", left=p, right=ir.Lit(value=1)),
                                   ir.Or(items=(c(op="<=", left=p, right=ir.Lit(value=2)),
                                                c(op="not in", left=p, right=ir.ListExpr(items=(ir.Lit(value=None),))))))),
                     ir.Not(item=ir.Call(func="returned", arg=ir.Ref(name="t")))))
    assert gx.guard_caption(e) == "result.n ≠ 1 AND (result.n ≤ 2 OR result.n not in [null]) OR NOT returned(t)"


def test_node_ids_are_unique_and_safe() -> None:
    skills = (ir.Skill(name="a_b", description="d"), ir.Skill(name="b", description="d"))
    g = ir.Graph(name="g", entries=(ir.Entry(skill=ir.Ref(name="a_b")),),
                 routes=(ir.Route(src=ir.Ref(name="a_b"), dst=ir.Ref(name="b", alias="a")),))
    other = ir.Module(key="o", decls=(skills[1],))
    root = ir.Module(key="m", imports=(ir.Import(path="./o.afp", alias="a", module="o"),),
                     decls=(skills[0], g))
    text = gx.to_mermaid(ir.Program(root="m", modules=(root, other)))
    assert '  n_a_b["a_b"]\n  n_a_b_2["a.b"]\n' in text


def test_choosing_a_graph() -> None:
    two = SPEC + "graph h { entry y }\n"
    program, _ = analyse(two)
    with pytest.raises(ValueError, match="several graphs"):
        gx.to_mermaid(program)
    assert "n_y" in gx.to_mermaid(program, "h")
    with pytest.raises(ValueError, match="no graph named `nope`"):
        gx.to_mermaid(program, "nope")


def test_dot_and_json() -> None:
    p = _program()
    dot = gx.to_dot(p)
    assert dot.startswith('digraph "g" {\n') and '"n_y" -> "n_z" [style=dashed];' in dot
    assert '[label="back to | start"]' in dot
    doc = json.loads(gx.to_json(p))
    assert [n["id"] for n in doc["nodes"]] == ["n_x", "n_y", "n_z"]
    first = doc["edges"][1]
    assert first["on"] == "t" and first["when"].startswith('result.level in ["high", "critical"]')
    assert first["span"]["line"] == 9 and doc["edges"][3]["deterministic"] is False


def test_cli_graph(tmp_path: Path) -> None:
    spec = tmp_path / "s.afp"
    spec.write_text(SPEC, encoding="utf-8")
    runner = CliRunner()
    ok = runner.invoke(main, ["graph", str(spec)])
    assert ok.exit_code == 0 and ok.output == gx.to_mermaid(_program())
    out = tmp_path / "g.dot"
    assert runner.invoke(main, ["graph", str(spec), "--format", "dot", "-o", str(out)]).exit_code == 0
    assert out.read_text().startswith("digraph")
    assert runner.invoke(main, ["graph", str(spec), "--graph", "nope"]).exit_code == 2
    assert runner.invoke(main, ["graph", str(tmp_path / "missing.afp")]).exit_code == 1
    bad = tmp_path / "bad.afp"
    bad.write_text("graph g { entry nope }\n", encoding="utf-8")
    result = runner.invoke(main, ["graph", str(bad)])
    assert result.exit_code == 1 and "AFP101" in result.output


def test_doctests() -> None:
    import doctest

    from afp_dsl import graph_captions
    assert doctest.testmod(gx).failed == 0
    result = doctest.testmod(graph_captions)
    assert result.failed == 0 and result.attempted >= 4  # (the captions' examples ran)


def test_guard_lists_stay_readable_in_mermaid() -> None:
    """tooling.md §4: guards are written readably, `in [a, b]`; the caption is escaped for
    `|`, `"`, `<`, `>` only. Brackets would break an unquoted label, so it is quoted instead
    of entity-mangled (`#91;high, critical#93;`); `test_mermaid.py` parses the result."""
    text = gx.to_mermaid(_program())
    assert "when message mentions [help, refund]" in text
    assert "result.level in [high, critical] AND result.score ≥ 0.7" in text
    assert "#91;" not in text and "#93;" not in text
    assert '  n_z -->|back to #124; start| n_x\n' in text  # no bracket: unquoted, as before
    assert gx.mermaid_caption('[x] "q" a|b <c>') == '"[x] #quot;q#quot; a#124;b #lt;c#gt;"'
    assert gx.mermaid_caption("`t` (x)") == '"#96;t` (x)"'  # `"` + backtick opens Markdown


def test_captions_with_at_or_tilde_are_quoted() -> None:
    """Unquoted, Mermaid 11 reads `ops@example.com` as an edge id and a leading `~~~` as an
    invisible link, and rejects the line; quoted they are text (`test_mermaid.py` parses them).
    Before, `route a -> b on t "ops@example.com"` drew a diagram Mermaid could not parse."""
    assert gx.mermaid_caption("ops@example.com") == '"ops@example.com"'
    assert gx.mermaid_caption("~~~ x") == '"~~~ x"'
    assert gx.mermaid_caption("on t when a = b") == "on t when a = b"  # plain text stays bare


def test_route_label_is_the_caption_verbatim() -> None:
    """language.md §5.4: a route's label is "used verbatim as its caption in diagrams"; only
    the Mermaid escapes apply (line breaks become spaces so an edge stays one line)."""
    spec = SPEC.replace('"back to | start"', '"CRC  >  0 \\t ok"')
    program, diags = analyse(spec)
    assert program is not None, diags
    assert "  n_z -->|CRC  #gt;  0 \t ok| n_x\n" in gx.to_mermaid(program)
    assert '[label="CRC  >  0 \t ok"]' in gx.to_dot(program)
    assert json.loads(gx.to_json(program))["edges"][-1]["caption"] == "CRC  >  0 \t ok"
    assert gx.mermaid_escape("a\nb\r\nc\u2028d") == "a b c d"


def test_overlay_styles_edges_of_imported_skills(tmp_path: Path) -> None:
    """tooling.md §4: `--run` styles the taken edges. A run records an imported skill by its
    declaration name (`helper`) while the graph draws `lib.helper`: the edge into it was left
    unstyled although the node was marked visited."""
    (tmp_path / "lib.afp").write_text('tool ping { description = "p" }\n'
                                      'skill helper { description = "h" tools = [ping] }\n')
    (tmp_path / "m.afp").write_text(
        'import "./lib.afp" as lib\nagent a { graph = g }\ntool go { description = "g" }\n'
        'skill start { description = "s" tools = [go] }\n'
        'graph g {\n  entry start\n  route start -> lib.helper on go\n'
        '  route lib.helper -> start on ping when result.ok == true\n}\n')
    program, diags = analyse(tmp_path / "m.afp")
    assert program is not None, diags
    run = {"visited": {"start", "helper"}, "taken": {(None, "start"), ("start", "helper")},
           "refused": {("helper", "start"): "result.ok = true (actual false)"}}
    text = gx.to_mermaid(program, **run)
    assert "  class n_lib_helper,n_start visited\n" in text
    assert "  linkStyle 0,1 stroke:#1e8e3e,stroke-width:3px\n" in text
    assert "✗ refused: result.ok = true (actual false)\"| n_start\n" in text
    assert "  linkStyle 2 stroke:#d93025" in text
    assert '"n_start" -> "n_lib_helper" [label="on go", color="#1e8e3e", penwidth=3];' \
        in gx.to_dot(program, **run)
    edges = json.loads(gx.to_json(program, **run))["edges"]
    assert [e["taken"] for e in edges] == [True, True, False]
    assert edges[2]["refused"] == "result.ok = true (actual false)"
    from afp_dsl import graph_svg  # the HTML report's drawing: same overlay
    svg = graph_svg.to_svg(program, **run)
    assert svg.count('class="edge taken"') == 2 and svg.count('class="edge refused"') == 1
    # the graph's own spelling is accepted as well
    assert "  linkStyle 0,1 stroke" in gx.to_mermaid(
        program, visited=["start"], taken=[(None, "start"), ("start", "lib.helper")])


_NUMBERS = [0, -1, 7, 10**30, 0.5, -0.0, 1e100, 1e-7, 2.5e-300, float("inf"), float("-inf"),
            float("nan"), True, False, None]


@pytest.mark.parametrize("value", _NUMBERS, ids=repr)
def test_a_literal_operand_is_written_as_json_writes_it(value):
    # the caption writes plain ints and finite floats by their repr, without the encoder
    assert gx.guard_caption(ir.Lit(value=value)) == json.dumps(value)
    c = ir.Compare(op=">", left=ir.Path(root="result", segments=("x", 0)), right=ir.Lit(value=value))
    assert gx.guard_caption(c) == f"result.x[0] > {json.dumps(value)}"


def test_an_int_subclass_literal_is_still_written_by_the_encoder():
    class Count(int):
        def __repr__(self) -> str:
            return "Count(3)"
    assert gx.guard_caption(ir.Lit(value=Count(3))) == json.dumps(Count(3)) == "3"


@pytest.mark.parametrize("text, readable", [
    ("result.amount <= 500", "result.amount ≤ 500"),
    ('result.status == "lost"', "result.status = lost"),
    ("not a.b != 3 and c >= 2 or d", "NOT a.b ≠ 3 AND c ≥ 2 OR d"),
    ('a == "x <= y"', "a = x <= y"),  # (inside a string: text)
    ('r.items[0].name in ["a", "b"]', "r.items[0].name in [a, b]"),
    ("odd € text", "odd € text"),  # (not tokens the language has: kept as written)
])
def test_a_refusal_note_reads_its_condition_as_captions_do(text: str, readable: str) -> None:
    """Before: the overlay's note was the condition's source text, so one caption read
    `result.amount ≤ 500 ✗ refused: result.amount <= 500` (and Mermaid showed `#lt;=`)."""
    assert gx.readable_condition(text) == readable
    event = type("E", (), {"kind": "route.evaluated", "payload": {
        "from": "a", "to": "b", "fired": False,
        "conditions": [{"text": text, "passed": False, "actual": 900}]}})()
    assert gx.run_overlay([event])[2] == {("a", "b"): f"{readable} (actual 900)"}


ENTRIES = """
agent a { graph = g }
skill s1 { description = "d" }
skill s2 { description = "d" }
graph g {
  entry s1 when message mentions "alpha"
  entry s2 when message mentions "beta"
}
"""


def entry_overlay_run(tmp_path: Path, message: str) -> tuple[Path, Path]:
    """(spec, store) holding one run of ENTRIES on `message` that answers at once."""
    import afp_dsl as afp
    from afp_dsl.store import sqlite
    spec = tmp_path / "spec.afp"
    spec.write_text(ENTRIES, encoding="utf-8")
    r = afp.load(spec).agent(provider=afp.providers.mock(["ok"])).run(message)
    db = tmp_path / "runs.db"
    store = sqlite(db)
    store.save_run(r.run_id, "a", None, "finished", r.outcome, None, {}, r.trace.events)
    store.close()
    return spec, db


def _graph(spec: Path, db: Path, fmt: str) -> str:
    out = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--store", str(db),
                                    "--format", fmt])
    assert out.exit_code == 0, out.output
    return out.stdout


def test_an_entry_that_refused_is_drawn_refused(tmp_path: Path) -> None:
    """tooling.md §4: guards that refused are annotated. Before, only routes were: the cold
    start's `refused_entries` were ignored, so `entry s1` (its guard refused "beta please") was
    drawn as plain as an entry never tried, and its JSON `refused` was null."""
    spec, db = entry_overlay_run(tmp_path, "beta please")
    text = _graph(spec, db, "mermaid")
    assert ('  __start__ -->|"when message mentions alpha ✗ refused: message mentions alpha '
            '(actual beta please)"| n_s1\n') in text
    assert "  linkStyle 1 stroke:#1e8e3e,stroke-width:3px\n" in text
    assert "  linkStyle 0 stroke:#d93025,stroke-width:2px,stroke-dasharray:4 3\n" in text
    edges = json.loads(_graph(spec, db, "json"))["edges"]
    assert [(e["taken"], e["refused"]) for e in edges] == [
        (False, "message mentions alpha (actual beta please)"), (True, None)]
    assert ('"__start__" -> "n_s1" [label="when message mentions alpha ✗ refused: message '
            'mentions alpha (actual beta please)", style=dashed, color="#d93025"'
            in _graph(spec, db, "dot"))


def test_when_no_entry_fires_every_refused_entry_is_drawn_refused(tmp_path: Path) -> None:
    """No skill reached (`cursor.moved` with cause `none`): the overlay still shows why."""
    spec, db = entry_overlay_run(tmp_path, "gamma")
    text = _graph(spec, db, "mermaid")
    assert "✗ refused: message mentions alpha (actual gamma)" in text
    assert "✗ refused: message mentions beta (actual gamma)" in text
    assert "  linkStyle 0,1 stroke:#d93025" in text and "class n_" not in text
    edges = json.loads(_graph(spec, db, "json"))["edges"]
    assert [e["refused"] for e in edges] == ["message mentions alpha (actual gamma)",
                                             "message mentions beta (actual gamma)"]
    assert _graph(spec, db, "dot").count('style=dashed, color="#d93025"') == 2


def test_a_spec_without_a_graph_does_not_draw_the_standard_library_s(tmp_path: Path) -> None:
    """`afpc graph` of a spec with no graph of its own that imports `std/tools` drew
    `tools_desk`, the module's self-test graph, as if it were the spec's; it is "no graph" now.
    A graph the root's agents use from an imported module is still the one drawn."""
    spec = tmp_path / "s.afp"
    spec.write_text('import "std/tools" as std_tools\n'
                    'agent a { system = "s" tools = [std_tools.calculate] }\n')
    program, diags = analyse(spec)
    assert program is not None, diags
    with pytest.raises(gx.GraphChoiceError, match="declares no graph"):
        gx.to_mermaid(program)
    assert "n_tools_workbench" in gx.to_mermaid(program, graph="std_tools.tools_desk")
    (tmp_path / "lib.afp").write_text('skill s { description = "s" }\ngraph g { entry s }\n'
                                      'skill t { description = "t" }\ngraph h { entry t }\n')
    (tmp_path / "m.afp").write_text('import "./lib.afp" as lib\nimport "std/tools" as std_tools\n'
                                    'agent a { graph = lib.h }\n')
    program, diags = analyse(tmp_path / "m.afp")
    assert program is not None, diags
    assert 'n_t["t"]' in gx.to_mermaid(program) and 'n_s["s"]' not in gx.to_mermaid(program)
