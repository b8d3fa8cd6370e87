"""Conformance: redaction (§9) and the canary: a planted secret never reaches any record."""
from __future__ import annotations

import json

from click.testing import CliRunner
from interp_support import call, make, payloads

from afp_dsl.store import sqlite

SPEC = """
agent g { tools = [login, fetch] context = [creds] redact = [secrets] }
fact creds { data = { api_key: "sk-FACTSECRET-0001", user: "maya" } }
tool login { description = "login" input { password: string, user: string } }
tool fetch { description = "fetch" }
redact secrets {
  keys     = ["api_key", "password", "token"]
  patterns = [/sk-[A-Za-z0-9-]{10,}/]
  %s
}
"""
SECRETS = ("sk-FACTSECRET-0001", "PW-ARG-3333", "TOK-RESULT-7777", "sk-USERSECRET-9999")
MESSAGE = "my key is sk-USERSECRET-9999, please log in"
SCRIPT = [call("login", password="PW-ARG-3333", user="maya"), call("fetch"),
          "Done. Your token is TOK-RESULT-7777 and your password PW-ARG-3333."]
TOOLS = {"login": lambda password, user: "ok", "fetch": lambda: {"token": "TOK-RESULT-7777"}}


def assert_clean(text: str) -> None:
    for s in SECRETS:
        assert s not in text, s


def test_canary_trace_store_and_error_hold_no_secret_while_the_model_saw_them(tmp_path):
    db = tmp_path / "runs.db"
    agent, prov = make(SPEC % "", SCRIPT, tools=TOOLS, store=sqlite(db))
    r = agent.run(MESSAGE)
    assert r.outcome == "answered"
    assert_clean(r.trace.to_json())
    assert_clean(r.why())
    agent.store.close()
    assert_clean(db.read_bytes().decode("latin-1"))
    seen = prov.requests[0].system + "".join(m.content for m in prov.requests[-1].messages)
    assert "sk-FACTSECRET-0001" in seen and "sk-USERSECRET-9999" in seen
    assert "TOK-RESULT-7777" in seen
    assert r.answer.endswith("PW-ARG-3333.")  # the caller's live answer is raw


def test_canary_error_message_is_scrubbed():
    agent, _ = make(SPEC % "", SCRIPT[:2], tools=TOOLS)
    r = agent.run(MESSAGE)
    assert r.outcome == "error" and "LLM call #3" in r.error
    assert "[REDACTED]" in r.error
    assert_clean(r.error)
    assert_clean(r.trace.to_json())


def test_model_true_scrubs_what_the_model_is_sent():
    agent, prov = make(SPEC % "model = true", SCRIPT, tools=TOOLS)
    agent.run(MESSAGE)
    seen = prov.requests[-1].system + json.dumps(
        [[m.content, [dict(c.arguments) for c in m.tool_calls]] for m in prov.requests[-1].messages])
    assert_clean(seen)


def test_model_true_scrubs_the_tools_the_model_is_sent_too():
    """Tool descriptions and the descriptions in their schemas reach the model scrubbed; the
    schema's own keywords, and what the run validates against, are untouched."""
    spec = (SPEC % "model = true").replace(
        'tool fetch { description = "fetch" }',
        'tool fetch { description = "fetch with sk-TOOLDESC-4444" '
        'input { q?: string "a key like sk-FIELDDESC-5555" } }')
    agent, prov = make(spec, SCRIPT, tools=TOOLS)
    r = agent.run(MESSAGE)
    tools = {t.name: t for t in prov.requests[0].tools}
    sent = json.dumps([[t.description, t.schema] for t in tools.values()])
    assert "sk-TOOLDESC-4444" not in sent and "sk-FIELDDESC-5555" not in sent
    assert tools["fetch"].schema["properties"]["q"]["type"] == "string"
    assert r.outcome == "answered"


def test_copied_secret_is_scrubbed_and_the_report_counts_without_values():
    agent, _ = make(SPEC % "", SCRIPT, tools=TOOLS)
    r = agent.run(MESSAGE)
    fin = payloads(r, "run.finished")[0]
    assert "TOK-RESULT-7777" not in fin["answer"] and "[REDACTED]" in fin["answer"]
    (applied,) = payloads(r, "redaction.applied")
    assert applied["counts"]["secrets"] >= 3
    assert any(p.endswith(".token") for p in applied["paths"])
    assert all("7777" not in p for p in applied["paths"])


def test_a_result_written_as_json_text_is_scrubbed_under_its_keys_too():
    # a host tool returning `json.dumps(...)`: guards read it as data, so does redaction
    tools = {"login": lambda password, user: "ok",
             "fetch": lambda: ' {"token": "TOK-RESULT-7777", "items": [1, NaN]}'}
    agent, prov = make(SPEC % "", [call("fetch"), call("login", password="x", user="TOK-RESULT-7777"),
                                   "done"], tools=tools)
    r = agent.run("hi")
    assert_clean(r.trace.to_json())
    (first, second) = payloads(r, "tool.returned")
    assert first["result"] == ' {"token": "[REDACTED]", "items": [1, NaN]}'  # the text, scrubbed
    assert payloads(r, "tool.called")[1]["args"]["user"] == "[REDACTED]"  # and a later copy
    assert "TOK-RESULT-7777" in json.dumps([m.content for m in prov.requests[1].messages])  # model: raw


def test_json_text_teaches_nothing_without_key_rules_or_when_it_is_not_json():
    from afp_dsl import ir
    from afp_dsl.redaction import Redactor
    keys = Redactor((ir.Redact(name="k", keys=("token",)),))
    for text in ('{"token": "AB-secret-1"', "token: AB-secret-1", '"AB-secret-1"', 12):
        keys.learn_json_text(text)
        assert keys.scrub("AB-secret-1") == "AB-secret-1"
    patterns_only = Redactor((ir.Redact(name="p", patterns=(ir.Regex(pattern="zz"),)),))
    patterns_only.learn_json_text('{"token": "AB-secret-1"}')
    assert patterns_only.scrub("AB-secret-1") == "AB-secret-1"
    keys.learn_json_text('[{"TOKEN": "AB-secret-1"}]')
    assert keys.scrub("x AB-secret-1") == "x [REDACTED]"


CLI_SPEC = SPEC % "" + """
test canary {
  agent = g
  user "unused"
  model calls login { password: "PW-ARG-3333", user: "maya" }
  tool login returns "ok"
  model calls fetch {}
  tool fetch returns { token: "TOK-RESULT-7777" }
  model says "Your token is TOK-RESULT-7777 and sk-USERSECRET-9999"
}
"""


def test_canary_cli_json_output_and_store_file(tmp_path):
    from afp_dsl.cli import main
    spec = tmp_path / "c.afp"
    spec.write_text(CLI_SPEC)
    db = tmp_path / "s.db"
    res = CliRunner().invoke(main, ["run", str(spec), "-m", MESSAGE, "--script", "canary",
                                    "--store", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert_clean(res.output)
    out = json.loads(res.stdout)
    assert out["outcome"] == "answered" and "[REDACTED]" in out["answer"]
    assert_clean(db.read_bytes().decode("latin-1"))
