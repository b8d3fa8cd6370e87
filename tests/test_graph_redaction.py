"""A drawn graph shown with a run (the HTML report, `afpc graph --run`) is scrubbed with that run's
redaction: a secret a guard compares never reaches a caption, a tooltip or the Mermaid source.

Secrets: one the spec itself holds (a `returns` value), one only a run saw (a scripted tool
result), one a pattern matches. Without a run the graph is the spec's own text, drawn as written.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from afp_dsl.cli import main

SECRETS = ("TOKVAL-123456", "TOKRUN-987654", "sk-PATTERNSECRET1")
SPEC = """
agent desk {
  system = "Desk."
  graph  = flow
  redact = [secrets]
}
tool login {
  description = "Log in."
  input { user: string }
  impl = returns({ token: "TOKVAL-123456", status: "ok" })
}
tool fetch { description = "Fetch." }
skill start  { description = "Start."  body = "Log in." tools = [login, fetch] }
skill repair { description = "Repair." body = "Repair." }
skill other  { description = "Other."  body = "Other." }
graph flow {
  entry start
  route start -> repair on login when result.token == "TOKVAL-123456" and result.status == "ok"
  route start -> other on fetch when result.token == "TOKRUN-987654"
  route start -> other on login when message mentions "sk-PATTERNSECRET1"
}
redact secrets {
  keys     = ["token"]
  patterns = [/sk-[A-Za-z0-9]{10,}/]
}
test t {
  agent = desk
  user "hi"
  model calls fetch {}
  tool fetch returns { token: "TOKRUN-987654" }
  model calls login { user: "maya" }
  model says "Done."
}
"""


@pytest.fixture
def stored_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.afp").write_text(SPEC, encoding="utf-8")
    db = str(tmp_path / "runs.db")
    res = CliRunner().invoke(main, ["run", "g.afp", "--script", "t", "-m", "hi", "--store", db])
    assert res.exit_code == 0, res.output
    return db


def _leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s in text or s[:9] in text]  # (a clipped caption's prefix too)


def test_the_html_report_draws_the_graph_scrubbed(stored_run, tmp_path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["trace", "export", "last", "--format", "html", "-o", str(out),
                                    "--store", stored_run])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    assert "result.token" in html and "[REDACTED]" in html  # the graph is drawn, scrubbed
    assert _leaked(html) == []


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "json"])
def test_graph_with_a_run_is_scrubbed_in_every_format(stored_run, fmt):
    res = CliRunner().invoke(main, ["graph", "g.afp", "--run", "last", "--format", fmt,
                                    "--store", stored_run])
    assert res.exit_code == 0, res.output
    assert "result.token" in res.output and "[REDACTED]" in res.output
    assert _leaked(res.output) == []


def test_graph_without_a_run_is_the_spec_as_written(stored_run):
    res = CliRunner().invoke(main, ["graph", "g.afp"])
    assert res.exit_code == 0, res.output
    assert all(s in res.output for s in SECRETS)


def test_a_pattern_matching_a_declared_name_leaves_it_in_the_drawing(tmp_path, monkeypatch):
    """As in the trace (`redaction_events`): `/log/` scrubs data, not the tool `login` a
    caption names, nor a literal elsewhere that is no name."""
    monkeypatch.chdir(tmp_path)
    spec = SPEC.replace("patterns = [/sk-[A-Za-z0-9]{10,}/]", "patterns = [/sk-[A-Za-z0-9]{10,}/, /log/]")
    spec = spec.replace('result.status == "ok"', 'result.status == "logbook"')
    (tmp_path / "g.afp").write_text(spec, encoding="utf-8")
    db = str(tmp_path / "runs.db")
    assert CliRunner().invoke(main, ["run", "g.afp", "--script", "t", "-m", "hi",
                                     "--store", db]).exit_code == 0
    res = CliRunner().invoke(main, ["graph", "g.afp", "--run", "last", "--store", db,
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "on login" in res.output and "[REDACTED]book" in res.output
    assert _leaked(res.output) == []
