"""Every diagram `to_mermaid` draws parses with Mermaid's own parser (npm `mermaid`, via node).

Install once with `npm ci --prefix tests/js` (CI does). Outside CI the test is skipped, with
the reason shown, when node or tests/js/node_modules is missing; with CI=true it fails instead.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from afp_dsl import graph_export as gx
from afp_dsl.api import analyse
from test_graph_export import CASES, GOLDEN, SPEC

JS = Path(__file__).parent / "js"
INSTALL = "npm ci --prefix tests/js"


def _parser_or_skip() -> list[str]:
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node is not installed"
    elif not (JS / "node_modules" / "mermaid").is_dir() or not (JS / "node_modules" / "jsdom").is_dir():
        problem = f"tests/js/node_modules is missing (run `{INSTALL}`)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Mermaid parser is required in CI: {problem}")
        pytest.skip(f"Mermaid parser unavailable: {problem}")
    return [node, str(JS / "parse_mermaid.mjs")]


def parse_all(diagrams: list[str]) -> list[dict]:
    cmd = _parser_or_skip()
    proc = subprocess.run(cmd, input=json.dumps(diagrams), capture_output=True, text=True,
                          timeout=240, cwd=JS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    assert len(results) == len(diagrams)
    return results


def _stress_diagrams() -> list[str]:
    labels = ['a|b', 'say "hi"', '<b>x</b>', '#quot; #124;', 'a (b) [c] {d}', 'A-->B', '%% x',
              'end', 'x ~~~ y', "it's `t`", '/refund|money back/i', 'status=failure,denied|x',
              '≥ ≤ ≠ ▶', 'a;b&c', 'multi\nline', '`t` [x]', 'a  b\tc', ' [in] (x) {y} ',
              '"[q]"', 'in [a|b]', 'ops@example.com', '@home', '~~~ x', '~~~', '%%{init} x',
              'a %%{init: {"theme": "dark"}}%% b', '50% %']
    out = []
    for label in labels:
        spec = SPEC.replace('"back to | start"', json.dumps(label))
        program, diags = analyse(spec)
        assert program is not None, diags
        out.append(gx.to_mermaid(program, visited=["x"], taken=[(None, "x")]))
    return out


def test_mermaid_parses_every_diagram() -> None:
    diagrams = []
    for _, spec, graph in CASES:
        program, _ = analyse(spec)
        diagrams.append(gx.to_mermaid(program, graph))
    diagrams += [p.read_text(encoding="utf-8") for p in sorted(GOLDEN.glob("*.mmd"))]
    diagrams += [p.read_text(encoding="utf-8")  # (the run overlays: `afpc graph --run`)
                 for p in sorted((GOLDEN.parent / "overlay").glob("*.mmd"))]
    diagrams += _stress_diagrams()
    for doc in sorted((Path(__file__).parent.parent / "docs").glob("*.md")):
        diagrams += re.findall(r"```mermaid\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    results = parse_all(diagrams)
    bad = [(d, r["error"]) for d, r in zip(diagrams, results) if not r["ok"]]
    assert not bad, bad[0]


def test_the_parser_rejects_a_raw_pipe() -> None:
    """Guards the harness itself: the original framework's raw `|` really breaks Mermaid."""
    (result,) = parse_all(["flowchart TD\n  n_a -->|on status=denied|invalid| n_b\n"])
    assert not result["ok"]


def test_overlays_with_refused_entries_parse(tmp_path: Path) -> None:
    """The captions `✗ refused: …` adds to entry edges (one fired, or none did) still parse."""
    from click.testing import CliRunner

    from afp_dsl.cli import main
    from test_graph_export import entry_overlay_run
    diagrams = []
    for i, message in enumerate(["beta please", "gamma"]):
        (tmp_path / str(i)).mkdir()
        spec, db = entry_overlay_run(tmp_path / str(i), message)
        out = CliRunner().invoke(main, ["graph", str(spec), "--run", "last", "--store", str(db)])
        assert out.exit_code == 0 and "✗ refused" in out.stdout, out.output
        diagrams.append(out.stdout)
    bad = [(d, r["error"]) for d, r in zip(diagrams, parse_all(diagrams)) if not r["ok"]]
    assert not bad, bad[0]


def test_an_overlay_whose_refused_value_holds_a_mermaid_directive_parses() -> None:
    """A refused guard's caption quotes the value the run saw: `%%{init}` in a tool's result
    made Mermaid read a directive and reject the diagram; `%` is written `#37;`."""
    import afp_dsl as afp
    from afp_dsl.graph_overlay import overlay_drawings
    program = afp.load('agent g { system = "s" graph = gr tools = [t] }\n'
                       'tool t { description = "t" }\n'
                       'skill a { description = "a" tools = [t] }\nskill b { description = "b" }\n'
                       'graph gr {\n  entry a\n  route a -> b on t when result.msg == "%%{x}"\n}\n')
    agent = program.agent(provider=afp.providers.mock([[("t", {})], "done"]),
                          tools={"t": lambda: {"msg": "%%{init} ]]end %% c"}})
    mermaid, _ = overlay_drawings(program, list(agent.run("hi").trace))
    assert "✗ refused" in mermaid and "%" not in mermaid and "#37;#37;{init}" in mermaid
    (result,) = parse_all([mermaid])
    assert result["ok"], result
