"""Conformance: redaction (§9) and the canary: a planted secret never reaches any record."""
from __future__ import annotations

import json
import pathlib

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


# ---------------------------------------------------------------- agents as tools (§9, language §5.2)
INNER_SPEC = """
agent outer { tools = [helper, ask_me] redact = [secrets] }
agent inner { tools = [ifetch, ask_me] redact = [innerrule] }
tool ifetch { description = "ifetch" }
tool ask_me { description = "ask" input { q: string } check_in = true }
tool helper { description = "inner" input { q: string } impl = agent(inner) }
redact secrets { keys = ["password"] }
redact innerrule { keys = ["inner_secret"] placeholder = "<INNER>" }
"""
INNER_TOOLS = {"ifetch": lambda: {"inner_secret": "INNERSEC-4444", "password": "PWVAL-3333"},
               "ask_me": lambda q: "fine"}


def _inner_clean(result, store) -> None:
    """No secret in the run's trace, its `why`, or the store file (inner runs' traces included;
    the checkpoint is gone once the run ended)."""
    store.close()
    text = result.trace.to_json() + result.why()
    path = pathlib.Path(store.path)
    for f in path.parent.glob(path.name + "*"):
        text += f.read_bytes().decode("latin-1")
    assert "INNERSEC-4444" not in text and "PWVAL-3333" not in text


def test_a_secret_an_inner_agents_own_rule_found_is_scrubbed_from_the_outer_records(tmp_path):
    """The inner run shares the outer run's remembered secrets; the outer redactor, which does
    not hold the inner agent's rules, still scrubs a copy of one (with the inner rule's name and
    placeholder) in the inner answer it records and in any later copy."""
    store = sqlite(tmp_path / "s.db")
    agent, _ = make(INNER_SPEC, [call("helper", q="go"), call("ifetch"),
                                 "inner found INNERSEC-4444", "outer says INNERSEC-4444"],
                    name="outer", tools=INNER_TOOLS, store=store)
    r = agent.run("hi")
    assert r.outcome == "answered"
    returned = [p for p in payloads(r, "tool.returned") if p["tool"] == "helper"]
    assert returned[0]["result"] == "inner found <INNER>"
    (applied,) = payloads(r, "redaction.applied")
    assert applied["counts"]["innerrule"] >= 2
    _inner_clean(r, store)


def test_secrets_remembered_in_a_run_survive_its_resume(tmp_path):
    """The checkpoint carries the remembered secrets (raw, as it carries the history): after a
    resume, a copy of a secret an inner run found (under the outer's key or its own) is still
    scrubbed, whether the inner run paused or finished before the outer one paused."""
    from afp_dsl import approve
    for script in ([call("helper", q="go"), call("ifetch"), "inner done", call("ask_me", q="ok?"),
                    "outer says INNERSEC-4444 PWVAL-3333"],
                   [call("helper", q="go"), call("ifetch"), call("ask_me", q="ok?"),
                    "inner says INNERSEC-4444 PWVAL-3333", "outer done"]):
        store = sqlite(tmp_path / f"s{len(script[3])}.db")
        agent, _ = make(INNER_SPEC, script, name="outer", tools=INNER_TOOLS, store=store)
        r = agent.run("hi")
        assert r.outcome == "paused"
        r = agent.resume(r.checkpoint, approve(r.checkin, by="dana"))
        assert r.outcome == "answered"
        assert store.checkpoint(r.run_id) is None  # deleted when the run ended
        _inner_clean(r, store)


def test_sibling_rule_sets_sharing_a_memory_keep_their_own_rules():
    """Two redactors joined from one with different extra rules (two inner agents) number
    their rules alike; a secret one of them remembered is scrubbed by the others with the rule
    that found it, never with a different rule that has the same local index."""
    from afp_dsl import ir
    from afp_dsl.redaction import Redactor
    outer = Redactor((ir.Redact(name="o", keys=("password",)),))
    a = outer.joined((ir.Redact(name="a", keys=("ka",), placeholder="<A>"),))
    b = outer.joined((ir.Redact(name="b", keys=("kb",), placeholder="<B>"),))
    a.scrub({"ka": "SECRET-A-1"})
    assert b.scrub("x SECRET-A-1") == "x <A>" and outer.scrub("SECRET-A-1") == "<A>"
    assert b.report().counts == {"a": 1} and "b" not in b.report().counts


def test_json_text_learning_matches_its_plain_definition():
    """`learn_json_text` rejects quickly by the text's first character; it learns exactly what
    the plain definition (JSON text opens with `{` or `[` after any spaces) learns."""
    import json as _json
    from afp_dsl import ir
    from afp_dsl.redaction import Redactor

    def plain(red, text):
        if type(text) is str and text.lstrip()[:1] in ("{", "["):
            try:
                red.learn(_json.loads(text))
            except (ValueError, RecursionError):
                pass
    body = '{"token": "AB-secret-1"}'
    for lead in ("", " ", "\t", "\n", "\r", " \n ", "\u2003", "\x0b", "\x0c", " \u00a0", "x"):
        for text in (lead + body, lead + "[" + body + "]", lead, lead + " 12345678"):
            quick = Redactor((ir.Redact(name="k", keys=("token",)),))
            full = Redactor((ir.Redact(name="k", keys=("token",)),))
            quick.learn_json_text(text)
            plain(full, text)
            assert quick.memory_state() == full.memory_state(), repr(text)


def test_a_diagnostic_on_scripted_arguments_never_quotes_them():
    """AFP405 says what the schema expected where, never the arguments (semantics §9: no
    diagnostic holds a secret), as the model is told of its own invalid arguments (§7)."""
    import afp_dsl
    spec = (SPEC % "").replace("password: string, user: string",
                               "password: string(min_length: 40), user: integer") + (
        'test t {\n  user "log in"\n'
        '  model calls login { password: "PW-ARG-3333", user: "sk-USERSECRET-9999" }\n'
        '  model says "ok"\n}\n')
    [d] = [d for d in afp_dsl.check(spec) if d.code == "AFP405"]
    assert d.notes == ("password: expected at least 40 characters", "user: expected integer")
    assert_clean(d.message + "".join(d.notes) + (d.help or ""))


def test_a_secret_in_a_providers_call_id_stays_out_of_check_in_ids(tmp_path):
    """§9: no store row, error message or API value holds a raw value, the check-in id (made of
    the provider's call id) included; two such calls of one turn keep distinct ids, and the
    decision still resumes the run."""
    import pytest

    from afp_dsl import ResumeDecisionError, approve, load, providers
    from afp_dsl.providers.base import Reply, ToolCall
    spec = ('agent a { tools = [t] redact = [r] }\n'
            'tool t { description = "t" check_in = true impl = returns("ok") }\n'
            'redact r { patterns = [/sk-[A-Za-z0-9]{20,}/] }\n')
    first, second = "call_sk-ABCDEFGHIJKLMNOPQRSTUVWX", "call_sk-ZYXWVUTSRQPONMLKJIHGFEDCBA"
    reply = Reply(tool_calls=(ToolCall(first, "t", {}), ToolCall(second, "t", {})))
    db = tmp_path / "runs.db"
    agent = load(spec).agent("a", provider=providers.mock([reply, "end"]), store=sqlite(db))
    r = agent.run("hi")
    ids = [r.checkin.id]
    assert "sk-" not in r.checkin.id and "sk-" not in r.checkin.call_id
    with pytest.raises(ResumeDecisionError) as err:
        agent.resume(r.checkpoint, approve("another check-in"))
    assert "ABCDEFGH" not in str(err.value)
    r = agent.resume(r.checkpoint, approve(r.checkin))
    assert r.paused
    ids.append(r.checkin.id)
    assert len(set(ids)) == 2 and all("ABCDEFGH" not in i and "ZYXWVUTS" not in i for i in ids)
    r = agent.resume(r.checkpoint, approve(r.checkin))
    assert r.outcome == "answered"
    agent.store.close()
    stored = db.read_bytes().decode("latin-1")
    assert "ABCDEFGH" not in stored and "ZYXWVUTS" not in stored


AFTER_QUOTES = """
agent a { tools = [probe] policies = [pol] redact = [sec] }
redact sec { keys = ["token"] }
tool probe { description = "Probe." impl = returns(%s) }
policy pol { after probe { deny when result.token == "tok-DENYME" because "token tok-DENYME seen" } }
"""


def test_an_after_link_s_reason_quoting_the_result_s_secret_is_scrubbed():
    """semantics §9: no record holds the raw value. The `after` row is recorded before the
    call's `tool.returned`, whose result teaches the secret under `token`: before, the row's
    reason kept `tok-DENYME` (in the trace, `why` and every export); now the result's secrets
    are learnt before the `after` links run, for a result as a value or as JSON text."""
    for result in ('{ kind: "z", token: "tok-DENYME" }', r'"{\"token\": \"tok-DENYME\"}"'):
        agent, _ = make(AFTER_QUOTES % result, [call("probe"), "done"])
        r = agent.run("hi")
        (row,) = payloads(r, "policy.decided")
        assert row["outcome"] == "deny" and row["reason"] == "token [REDACTED] seen", row
        assert "tok-DENYME" not in json.dumps([e.to_dict() for e in r.trace]), result
