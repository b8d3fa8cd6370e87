"""The canary: a secret planted in every channel is absent from every export's encoded bytes.

Channels: a fact, the user's message, a tool argument, a tool result, the model's reply. Sinks:
JSONL, the HTML report, the thinking trace, OTLP JSON, OTel in-memory spans (names, attributes,
events — with content capture on), `why` (text and JSON), `afpc trace`/`afpc why` output, and
`afpc test` failure messages. Shared with the other trace tests: `canary_run()`.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from interp_support import call, make

from afp_dsl import export, report_html
from afp_dsl.cli import main
from afp_dsl.store import sqlite
from afp_dsl.why import explain

SECRETS = ("sk-FACTSECRET-0001", "PW-ARG-3333", "TOK-RESULT-7777", "sk-USERSECRET-9999")
XSS = '<script>window.__xss=1</script><img src="x" onerror="window.__xss=2">'
SPEC = """
agent g {
  system  = "You help."
  graph   = flow
  context = [creds]
  redact  = [secrets]
}
fact creds { data = { api_key: "sk-FACTSECRET-0001", user: "maya" } }
tool login { description = "login" input { password: string, user: string } }
tool fetch { description = "fetch" }
skill start { description = "Start." body = "Log in first." tools = [login] }
skill done  { description = "Finish." body = "Fetch, then answer." tools = [fetch] }
graph flow {
  entry start
  route start -> done on login
  route done -> start on fetch when result.token == "never"
}
redact secrets {
  keys     = ["api_key", "password", "token"]
  patterns = [/sk-[A-Za-z0-9-]{10,}/]
}
"""
MESSAGE = "my key is sk-USERSECRET-9999, please log in"
SCRIPT = [call("login", password="PW-ARG-3333", user="maya"), call("fetch"),
          "Done " + XSS + ". Your token is TOK-RESULT-7777 and your password PW-ARG-3333."]
TOOLS = {"login": lambda password, user: "ok", "fetch": lambda: {"token": "TOK-RESULT-7777"}}


def canary_run(store=None):
    agent, _ = make(SPEC, SCRIPT, tools=TOOLS, **({"store": store} if store else {}))
    r = agent.run(MESSAGE)
    assert r.outcome == "answered", r.error
    return agent, r


def assert_clean(data: bytes | str) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    for s in SECRETS:
        assert s.encode() not in raw, s


def test_the_canary_reached_the_model_and_the_raw_answer():
    _, r = canary_run()
    assert "TOK-RESULT-7777" in r.answer  # the caller's live answer is raw: the test is honest


def test_jsonl_thinking_html_and_why_hold_no_secret():
    agent, r = canary_run()
    assert_clean(export.to_jsonl(r.trace))
    assert_clean(export.thinking_json(r.trace))
    assert_clean(report_html.report(r.trace, program=agent.program if hasattr(agent, "program")
                                    else None))
    assert_clean(explain(r.trace, inner=r.inner))
    assert_clean(explain(r.trace, inner=r.inner, format="json"))
    assert_clean(explain(r.trace, skill="done", format="json"))
    assert_clean(explain(r.trace, edge="done->start"))


def test_otlp_json_and_in_memory_spans_hold_no_secret():
    pytest.importorskip("opentelemetry.sdk")
    from afp_dsl import otel
    _, r = canary_run()
    assert_clean(otel.to_otlp_json(r.trace, content=True))
    spans = otel.spans(r.trace, content=True)
    assert any(s.attributes.get("gen_ai.tool.call.arguments") for s in spans)  # content on
    for s in spans:
        assert_clean(s.to_json())


def test_cli_exports_and_why_hold_no_secret(tmp_path):
    db = tmp_path / "runs.db"
    agent, r = canary_run(sqlite(db))
    agent.store.close()
    runner = CliRunner()
    outputs = [runner.invoke(main, ["trace", "list", "--store", str(db)]),
               runner.invoke(main, ["trace", "show", r.run_id, "--store", str(db)]),
               runner.invoke(main, ["why", r.run_id, "--store", str(db)]),
               runner.invoke(main, ["why", r.run_id, "--format", "json", "--store", str(db)])]
    for fmt in ("jsonl", "html", "thinking", "otlp-json"):
        if fmt == "otlp-json":
            pytest.importorskip("opentelemetry.sdk")
        out = tmp_path / f"export.{fmt}"
        res = runner.invoke(main, ["trace", "export", r.run_id, "--format", fmt, "-o", str(out),
                                   "--store", str(db)])
        assert res.exit_code == 0, res.output
        assert_clean(out.read_bytes())
    for res in outputs:
        assert res.exit_code == 0, res.output
        assert_clean(res.output)


TEST_SPEC = SPEC + """
test leaks {
  agent = g
  user "my key is sk-USERSECRET-9999, please log in"
  model calls login { password: "PW-ARG-3333", user: "maya" }
  tool login returns "ok"
  model calls fetch {}
  tool fetch returns { token: "TOK-RESULT-7777" }
  model says "Your token is TOK-RESULT-7777."
  expect answer matches /^nothing like this$/
  expect answer == "also not this"
}
"""


def test_afpc_test_failure_messages_show_only_redacted_values(tmp_path):
    spec = tmp_path / "leak.afp"
    spec.write_text(TEST_SPEC, encoding="utf-8")
    res = CliRunner().invoke(main, ["test", str(spec)])
    assert res.exit_code == 1, res.output
    assert "answer does not match" in res.output and "answer differs" in res.output
    assert "[REDACTED]" in res.output  # the redacted answer is shown, not hidden entirely
    assert_clean(res.output)
    junit = tmp_path / "junit.xml"
    CliRunner().invoke(main, ["test", str(spec), "--junit", str(junit)])
    assert_clean(junit.read_bytes())


def test_afpc_test_quotes_an_expectation_redacted_as_the_run_is(tmp_path):
    """An expected answer quoting a secret (a pattern's, a stubbed result's, a scripted
    argument's) is shown redacted beside the recorded answer, never raw."""
    expects = ('expect answer == "token TOK-RESULT-7777, password PW-ARG-3333"\n'
               '  expect answer matches /sk-USERSECRET-9999/\n}\n')
    spec = tmp_path / "leak.afp"
    spec.write_text(TEST_SPEC.replace('expect answer matches /^nothing like this$/\n'
                                      '  expect answer == "also not this"\n}\n', expects))
    res = CliRunner().invoke(main, ["test", str(spec)])
    assert res.exit_code == 1 and "answer differs" in res.output, res.output
    assert "expected: 'token [REDACTED], password [REDACTED]'" in res.output
    assert_clean(res.output)
