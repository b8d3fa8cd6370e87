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


def _helps(tmp_path, text: str, **files: str) -> list[tuple[str, str | None]]:
    for name, body in files.items():
        (tmp_path / f"{name}.afp").write_text(body, encoding="utf-8")
    spec = tmp_path / "spec.afp"
    spec.write_text(text, encoding="utf-8")
    return [(d.message, d.help) for d in afp.check(str(spec)) if d.code == "AFP101"]


def test_a_bare_name_only_an_import_declares_suggests_its_alias(tmp_path):
    """Before, `redact = [cards]` with `import "std/redact" as std_redact` (and a bare `sk` for
    `c.sk`, in a list or in `active(...)`/`returned(...)`) was "unknown" with no suggestion."""
    common = 'skill sk { description = "d" }\ntool tt { description = "d" }\n'
    found = _helps(tmp_path, 'import "std/redact" as std_redact\nimport "./common.afp" as c\n'
                   'agent a { redact = [cards] skills = [sk] context = [i] }\n'
                   'instruction i { prompt = "p" when = active(sk) or returned(tt) }\n',
                   common=common)
    assert found == [("unknown redact rule `cards`", "did you mean `std_redact.cards`?"),
                     ("unknown skill `sk`", "did you mean `c.sk`?"),
                     ("unknown skill `sk`", "did you mean `c.sk`?"),
                     ("unknown tool `tt`", "did you mean `c.tt`?")]


def test_an_import_of_another_kind_is_not_suggested(tmp_path):
    found = _helps(tmp_path, 'import "./common.afp" as c\nagent a { tools = [sk] }\n',
                   common='skill sk { description = "d" }\n')
    assert found == [("unknown tool `sk`", None)]


def test_expect_cursor_suggests_a_skill_when_a_misspelt_entry_hides_the_graph(tmp_path):
    """Before: with the graph's entry misspelt too, the agent's skills were unknown and
    `expect cursor triag` had no suggestion, while every other `triag` had one. Since then the
    test's `triag` is the entry's root cause again (one diagnostic), so it is checked alone."""
    found = _helps(tmp_path, 'agent a { graph = g }\nskill triage { description = "x" }\n'
                   'graph g { entry triag }\n'
                   'test t { user "hi" model says "ok" expect cursor triag }\n')
    assert found == [("unknown skill `triag`", "did you mean `triage`?")]
    alone = _helps(tmp_path, 'agent a { graph = g }\nskill triage { description = "x" }\n'
                   'graph g { entry triagee }\n'
                   'test t { user "hi" model says "ok" expect cursor triag }\n')
    assert alone == [("unknown skill `triagee`", "did you mean `triage`?"),
                     ("unknown skill `triag`", "did you mean `triage`?")]


def test_a_suggestion_for_a_name_through_an_alias_is_written_with_the_alias(tmp_path):
    """Before: `graph = lib.gg` suggested `g` and `redact = [r.card]` suggested `cards`,
    neither of which resolves where it was written."""
    (tmp_path / "lib.afp").write_text('skill s { description = "x" }\ngraph g { entry s }\n'
                                      'tool t { description = "d" }\n'
                                      'redact cards { patterns = [/\\d{16}/] }\n', encoding="utf-8")
    main_afp = tmp_path / "main.afp"
    main_afp.write_text('import "lib.afp" as lib\n'
                        'agent a { graph = lib.gg tools = [lib.tt] redact = [lib.card] }\n', encoding="utf-8")
    found = {d.message: d.help for d in afp.check(main_afp) if d.code == "AFP101"}
    assert found == {"unknown graph `lib.gg`": "did you mean `lib.g`?",
                     "unknown tool `lib.tt`": "did you mean `lib.t`?",
                     "unknown redact rule `lib.card`": "did you mean `lib.cards`?"}


@pytest.mark.parametrize("spec, meant", [
    ('agent a { tools = [ab] }\ntool ac { description = "d" }\n', "did you mean `ac`?"),
    ('agent a { tools = [t2] }\ntool t1 { description = "d" }\n', "did you mean `t1`?"),
    ('agent a { tools = [ax] }\nskill ay { description = "d" }\n', None),
])
def test_a_suggestion_is_a_name_of_the_kind_expected_even_a_short_one(spec, meant):
    """Before: `tools = [ab]` beside a tool `ac` suggested the agent `a` (which would only be
    AFP102), and `t2` beside `t1` suggested nothing (difflib's ratio is 0.5 for two letters)."""
    found = [d.help for d in afp.check(spec) if d.code == "AFP101"]
    assert found == [meant]
