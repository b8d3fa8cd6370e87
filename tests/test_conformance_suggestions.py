"""tooling.md §3: "did you mean" suggestions for every unknown name, on the command line too.

Before, `afpc explain unknwn-name`, `afpc run --agent suport`, `--script smal_refund`,
`afpc graph --graph dek` (and `afp.to_mermaid(program, graph="dek")`), `afpc resume` of a
mistyped run id and `afpc graph --run` of one listed the known names, or nothing, but never
the one meant, while `afpc why` and `afpc trace show` did.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import afp_dsl as afp
from afp_dsl.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support" / "support.afp"
TRIAGE = ROOT / "examples" / "incident_triage" / "incident_triage.afp"


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("typo, meant", [("unknwn-name", "unknown-name"),
                                         ("unreachable", "unreachable-skill")])
def test_explain_suggests_the_code_meant(typo, meant):
    res = cli("explain", typo)
    assert res.exit_code == 2
    assert f"did you mean `{meant}`?" in res.stderr and res.stdout == ""


def test_explain_suggests_nothing_for_a_word_like_no_code():
    res = cli("explain", "zzzz")
    assert res.exit_code == 2 and "did you mean" not in res.stderr
    assert "codes look like AFP101 or unknown-name" in res.stderr


def test_run_suggests_the_agent_and_the_script_meant(tmp_path):
    db = tmp_path / "runs.db"
    agent = cli("run", SUPPORT, "-m", "hi", "--agent", "suport", "--store", db)
    assert agent.exit_code == 1 and "did you mean `support`?" in agent.stderr
    script = cli("run", SUPPORT, "-m", "hi", "--script", "smal_refund", "--store", db)
    assert script.exit_code == 1 and "did you mean `small_refund`?" in script.stderr


def test_program_agent_suggests_the_agent_meant():
    with pytest.raises(afp.AgentNotFound, match="did you mean `support`"):
        afp.load(SUPPORT).agent("suport")


def test_graph_suggests_the_graph_meant():
    res = cli("graph", SUPPORT, "--graph", "dek")
    assert res.exit_code == 2 and "did you mean `desk`?" in res.stderr
    with pytest.raises(ValueError, match="did you mean `desk`"):
        afp.to_mermaid(afp.load(SUPPORT), graph="dek")


def test_a_graph_named_by_a_non_string_is_a_type_error():
    """Before: `to_mermaid(program, 5)` said "no graph named `5`", as if 5 were a name."""
    with pytest.raises(TypeError, match="graph= is a graph's name"):
        afp.to_dot(afp.load(SUPPORT), 5)


def test_resume_and_graph_run_suggest_the_run_meant(tmp_path):
    db = tmp_path / "runs.db"
    paused = cli("run", TRIAGE, "--script", "sev2_page_waits_for_the_commander", "-m",
                 "Please triage ALR-78", "--store", db, "--json")
    assert paused.exit_code == 3, paused.output
    run_id = paused.stdout.split('"run_id": "')[1].split('"')[0]
    resume = cli("resume", run_id[:-1], "--approve", "--store", db)
    assert resume.exit_code == 1 and f"did you mean `{run_id}`?" in resume.stderr
    drawn = cli("graph", TRIAGE, "--run", run_id[:-1], "--store", db)
    assert drawn.exit_code == 1 and f"did you mean `{run_id}`?" in drawn.stderr
    assert drawn.stdout == ""
