"""Audit 25, redaction (semantics §9, language §5.6, std/redact): canaries and card shapes."""
from __future__ import annotations

import json

import pytest
from interp_support import call, make, payloads
from test_examples import _rule

from afp_dsl import export, ir, report_html
from afp_dsl.redaction import Redactor

# ---------------------------------------------------------------- std/redact cards
CARDS_FOUND = [
    ("4111\u00a01111\u00a01111\u00a01111", "[CARD]"),          # no-break spaces
    ("4111\u202f1111\u202f1111\u202f1111", "[CARD]"),          # narrow no-break spaces
    ("4111\u2009111111\u200911111", "4111\u2009111111\u200911111"),  # not a layout, not Luhn
    ("3782\u00a0822463\u00a010005", "[CARD]"),                  # Amex 4-6-5
    ("card 4111\u00a01111\u00a01111\u00a01111\u00a0123", "card [CARD]\u00a0123"),  # its CVV
    ("card4111111111111111", "card[CARD]"),                     # glued to letters
    ("4111111111111111exp", "[CARD]exp"),
    ("id_4111111111111111", "id_[CARD]"),
    ("VISA4111111111111111 ok", "VISA[CARD] ok"),
    ("x4111 1111 1111 1111y", "x[CARD]y"),
]
CARDS_KEPT = [
    "4111111111111112abc",                                    # Luhn-invalid
    "IBAN DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000",
    "FR76\u00a03000\u00a06000\u00a00112\u00a03455\u00a07890\u00a0189",
    "NO4222222222222",                                         # an IBAN glued to its country
    "ISBN9780110003702",
    "a41111111111111111111b",                                  # a longer run of digits
]


@pytest.mark.parametrize("text,want", CARDS_FOUND)
def test_std_cards_finds_cards_with_no_break_spaces_or_glued_to_letters(text, want):
    assert Redactor([_rule("cards")]).scrub_text(text) == want


@pytest.mark.parametrize("text", CARDS_KEPT)
def test_std_cards_still_leaves_other_numbers_alone(text):
    assert Redactor([_rule("cards")]).scrub_text(text) == text


def test_std_cards_stays_linear_on_long_runs_of_grouped_or_glued_digits():
    import time
    redactor = Redactor([_rule("cards")])
    for unit in ("4111\u00a0", "12\u202f4111\u202f", "a1", "x411111111111111", "DE89\u00a0"):
        start = time.perf_counter()
        redactor.scrub_text(unit * (200_000 // len(unit)))
        assert time.perf_counter() - start < 0.5, unit


# ---------------------------------------------------------------- copies inside JSON text
ESCAPED = 'PW"q\\z\u00e9-1'  # a quote, a backslash and a non-ASCII letter: JSON escapes all three
ESC_SPEC = """
agent g { tools = [login, echo] redact = [secrets] }
tool login { description = "login" input { password: string } }
tool echo { description = "echo" }
redact secrets { keys = ["password"] }
"""


def _json_forms(secret: str) -> set[str]:
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}


def test_a_remembered_secret_copied_into_json_text_is_scrubbed_in_its_escaped_form():
    """semantics §9: a later occurrence of a remembered string anywhere is scrubbed; a tool
    result written as JSON text holds the copy escaped (`\\"`, `\\\\`, `\\u00e9`)."""
    echo = json.dumps({"copy": ESCAPED}) + " and " + json.dumps(ESCAPED, ensure_ascii=False)
    agent, prov = make(ESC_SPEC, [call("login", password=ESCAPED), call("echo"), "done"],
                       tools={"login": lambda password: "ok", "echo": lambda: echo})
    r = agent.run("hi")
    assert r.outcome == "answered"
    assert echo in [m.content for m in prov.requests[-1].messages]  # the model read it raw
    returned = [p["result"] for p in payloads(r, "tool.returned") if p["tool"] == "echo"]
    assert returned == ['{"copy": "[REDACTED]"} and "[REDACTED]"']
    blob = r.trace.to_json() + export.to_jsonl(r.trace) + report_html.report(r.trace) + r.why()
    for form in _json_forms(ESCAPED) | {json.dumps(json.dumps(ESCAPED))[3:-3]}:
        assert form not in blob, form


def test_the_escaped_forms_are_remembered_only_when_json_changes_the_text():
    red = Redactor([ir.Redact(name="k", keys=("password",))])
    red.scrub({"password": "plain-1234"})
    assert [v for v, _ in red.memory_state()["values"]] == ["plain-1234"]
    red.scrub({"password": ESCAPED})
    assert red.scrub_text("x " + json.dumps(ESCAPED) + " y") == 'x "[REDACTED]" y'


# ---------------------------------------------------------------- `afpc test` quoting
BACKSLASH_TEST = r"""
agent g { tools = [login] redact = [sec] }
tool login { description = "login" input { password: string } }
redact sec { keys = ["password"] patterns = [/C:\\Users\\[a-z]+/] }
test t {
  user "log me in"
  model calls login { password: "it's\\\"q-TEST1" }
  tool login returns "ok"
  model says "in"
  expect answer == "it's\\\"q-TEST1 or C:\\Users\\maya"
}
"""


def test_afpc_test_never_quotes_an_expected_answer_holding_a_secret_with_escapes(tmp_path):
    """semantics §9: no CLI output holds the raw value. The expected answer was scrubbed after
    `repr` had escaped it (`C:\\\\Users\\\\maya`), where the pattern no longer matched."""
    from click.testing import CliRunner

    from afp_dsl.cli import main
    spec = tmp_path / "t.afp"
    spec.write_text(BACKSLASH_TEST, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    res = CliRunner().invoke(main, ["test", str(spec), "--junit", str(junit)])
    assert res.exit_code == 1 and "answer differs" in res.output, res.output
    assert "expected: '[REDACTED] or [REDACTED]'" in res.output
    for text in (res.output, junit.read_text(encoding="utf-8")):
        assert "TEST1" not in text and "maya" not in text


# ---------------------------------------------------------------- model = true
FACT_SPEC = """
agent g { system = "Be brief." context = [creds, tone] tools = [t] redact = [sec] }
tool t { description = "t" }
steering tone { prompt = "Answer kindly." }
fact creds { data = { pin: "12", Password: "pw-FACT-1", user: "maya", nested: [{ PIN: 7 }] } }
redact sec { keys = ["pin", "password"] %s }
"""


def test_model_true_scrubs_short_and_numeric_fact_values_under_keys_from_the_system_prompt():
    """semantics §9: a rule selects every value under a matching key; with `model = true` it
    also scrubs what is sent to the model. A fact's values shorter than 4 characters (or
    numbers) are not remembered, so scrubbing the system prompt's text missed them."""
    agent, prov = make(FACT_SPEC % "model = true", [call("t"), "done"], tools={"t": lambda: "ok"})
    assert agent.run("hi").outcome == "answered"
    for request in prov.requests:
        assert request.system == ('Be brief.\n\n{"Password": "[REDACTED]", "nested": [{"PIN": '
                                  '"[REDACTED]"}], "pin": "[REDACTED]", "user": "maya"}\n\n'
                                  'Answer kindly.')
    agent, prov = make(FACT_SPEC % "", ["done"])
    assert agent.run("hi").outcome == "answered"
    assert '"pin": "12"' in prov.requests[0].system  # records-only rules leave the model's view


def test_a_remembered_secret_quoted_by_repr_in_a_host_tools_error_is_scrubbed():
    """semantics §9: no error message holds the raw value. A host's exception text often quotes
    values with `repr` (`f"{args}"`, `KeyError`), which escapes a secret holding both quotes or
    a backslash; that copy is the same string and is scrubbed too."""
    secret = "it's\\\"q-REPR1"

    def login(password: str) -> str:
        raise ValueError(f"rejected {dict(password=password)}")
    agent, prov = make(ESC_SPEC, [call("login", password=secret), "done"],
                       tools={"login": login, "echo": lambda: "x"})
    r = agent.run("hi")
    (returned,) = [p for p in payloads(r, "tool.returned") if p["tool"] == "login"]
    assert returned["status"] == "failure"
    assert returned["result"] == {"error": "rejected {'password': '[REDACTED]'}"}
    assert "REPR1" not in r.trace.to_json()


# ---------------------------------------------------------------- agents as tools
INNER_PIN = """
agent outer { tools = [helper] redact = [sec] }
agent inner { tools = [] }
tool helper { description = "inner" input { %s } impl = agent(inner) }
redact sec { keys = ["pin"] %s }
"""


@pytest.mark.parametrize("fields,args,recorded", [
    ("pin: string", {"pin": "12"}, "[REDACTED]"),
    ("pin: string, q: string", {"pin": "12", "q": "go"}, '{"pin":"[REDACTED]","q":"go"}')])
@pytest.mark.parametrize("model", [False, True])
def test_an_inner_runs_message_made_of_a_redacted_argument_is_recorded_redacted(
        fields, args, recorded, model):
    """semantics §9 and language §5.2: the outer rules cover the inner run, whose user message
    is the tool's arguments. A value under a redacted key too short to be remembered (`"12"`)
    was recorded raw in the inner `run.started` (and sent to the inner model under
    `model = true`)."""
    agent, prov = make(INNER_PIN % (fields, "model = true" if model else ""),
                       [call("helper", **args), "inner answer", "outer done"], name="outer")
    r = agent.run("hi")
    assert r.outcome == "answered"
    (runs,) = r.inner.values()
    (trace,) = runs.runs.values()
    assert [e.payload["message"] for e in trace if e.kind == "run.started"] == [recorded]
    inner_saw = prov.requests[1].messages[0].content
    assert inner_saw == (recorded if model else inner_saw)
    assert ("12" in inner_saw) is not model


# ---------------------------------------------------------------- guards comparing a short secret
GUARD_SPEC = """
agent g { graph = flow redact = [sec] }
tool t { description = "t" }
skill a { description = "A." tools = [t] }
skill b { description = "B." }
graph flow { entry a  route a -> b on t when result.pin == "Q7" or result.pin in ["Z9", "Q8"] }
redact sec { keys = ["pin"] }
"""


def test_a_guard_comparing_a_short_secret_does_not_tell_it_in_evidence_or_drawings(tmp_path):
    """semantics §9: a value under a redacted key is redacted whatever its length. The evidence
    hid the actual `Q7`, but `result.pin == "Q7"` that held told it in the condition's text, and
    the run's graph (`afpc graph --run`, the HTML report) drew the taken edge's caption with it."""
    from click.testing import CliRunner

    from afp_dsl import load
    from afp_dsl.cli import main
    from afp_dsl.store import sqlite
    spec = tmp_path / "g.afp"
    spec.write_text(GUARD_SPEC, encoding="utf-8")
    program = load(str(spec))
    db = tmp_path / "s.db"
    from afp_dsl import providers
    agent = program.agent(provider=providers.mock([call("t"), "done"]), store=sqlite(db),
                          tools={"t": lambda: {"pin": "Q7"}})
    r = agent.run("hi")
    (route,) = payloads(r, "route.evaluated")
    assert route["fired"] is True
    assert [c["text"] for c in route["conditions"]] == [
        "on t", 'result.pin == "[REDACTED]"', 'result.pin in "[REDACTED]"']
    agent.store.close()
    texts = [r.trace.to_json(), r.why(), report_html.report(r.trace, program=program)]
    for fmt in ("mermaid", "json"):
        res = CliRunner().invoke(main, ["graph", str(spec), "--run", r.run_id, "--store", str(db),
                                        "--format", fmt])
        assert res.exit_code == 0, res.output
        texts.append(res.output)
    assert "[REDACTED]" in texts[-2]
    for text in texts:
        assert "Q7" not in text and "Z9" not in text


# ---------------------------------------------------------------- the whole canary, escaped
CANARY = 'S\u00e9"c\\r\'et-9\u00a0Z'  # quotes, a backslash, non-ASCII, a no-break space
CANARY_SPEC = """
agent outer { tools = [helper, pay, echo] redact = [sec] policies = [pol] }
agent inner { tools = [ifetch] redact = [own] }
tool ifetch { description = "ifetch" }
tool echo { description = "echo" }
tool pay { description = "pay" input { amount: number, Token: string } }
tool helper { description = "inner" input { q: string } impl = agent(inner) }
policy pol { before pay { ask when args.amount > 1 because "big" } }
redact sec { keys = ["token"] }
redact own { keys = ["inner_key"] placeholder = "<I>" }
"""


def test_a_secret_full_of_escapes_reaches_no_record_export_or_store(tmp_path):
    """semantics §9 end to end: the secret (under `Token`, and an inner agent's own key) comes
    back in a host tool's `repr`-quoted exception, a `json.dumps` echo, the inner and outer
    answers and a person's note; no record, export, CLI output or store byte holds it in any
    quoted form once the run ended (the raw checkpoint is gone)."""
    from click.testing import CliRunner

    from afp_dsl import approve
    from afp_dsl.cli import main
    from afp_dsl.store import sqlite
    inner_secret = CANARY + "-in"

    def pay(amount, Token):
        raise RuntimeError(f"pay failed for {Token!r} and {[CANARY]}")
    tools = {"ifetch": lambda: {"inner_key": inner_secret}, "pay": pay,
             "echo": lambda: json.dumps({"copy": CANARY, "c2": inner_secret})}
    script = [call("pay", amount=5, Token=CANARY), call("helper", q="go"), call("ifetch"),
              "inner says " + inner_secret, call("echo"),
              "outer says " + json.dumps(CANARY) + " " + repr(inner_secret)]
    db = tmp_path / "s.db"
    agent, _ = make(CANARY_SPEC, script, name="outer", tools=tools, store=sqlite(db))
    r = agent.run("hi")
    r = agent.resume(r.checkpoint, approve(r.checkin, by="dana", note="ok " + CANARY))
    assert r.outcome == "answered" and agent.store.checkpoint(r.run_id) is None
    agent.store.close()
    texts = [r.trace.to_json(), r.why(), export.to_jsonl(r.trace), report_html.report(r.trace)]
    run = CliRunner()
    texts += [run.invoke(main, args + ["--store", str(db)]).output for args in (
        ["trace", "show", r.run_id], ["why", r.run_id, "--format", "json"])]
    for fmt in ("jsonl", "html", "thinking"):
        out = tmp_path / f"e.{fmt}"
        run.invoke(main, ["trace", "export", r.run_id, "--format", fmt, "-o", str(out),
                          "--store", str(db)])
        texts.append(out.read_text(encoding="utf-8"))
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.glob("s.db*")]
    for text in texts:
        assert "et-9" not in text
