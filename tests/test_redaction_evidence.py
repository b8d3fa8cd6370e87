"""Redaction (semantics §9) of evidence (§4): a guard's actual value read from under a redacted
key is the rule's placeholder whatever its length, in the trace, `why` and the report."""
from __future__ import annotations

import pytest
from interp_support import call, make, payloads

SPEC = """
agent g { graph = gr context = [hint] redact = [secrets] }
skill a { description = "a" tools = [fetch] }
skill b { description = "b" }
graph gr {
  entry a
  route a -> b on fetch when result.card.cvv matches /^[0-9]{3}$/ and 1 < result.n
}
instruction hint { prompt = "hint" when = last.result.card.cvv != "000" }
tool fetch { description = "fetch" }
redact secrets { keys = ["cvv"] placeholder = "<cvv>" }
"""


@pytest.mark.parametrize("result", [{"card": {"cvv": "417"}, "n": 2},
                                    '{"card": {"cvv": "417"}, "n": 2}'])
def test_a_short_secret_a_guard_read_is_not_in_its_evidence(result):
    agent, _ = make(SPEC, [call("fetch"), "done"], tools={"fetch": lambda: result})
    r = agent.run("hi")
    (route,) = payloads(r, "route.evaluated")
    assert route["fired"] is True
    assert [(c["actual"], c["passed"]) for c in route["conditions"]] == [
        ("fetch", True), ("<cvv>", True), (2, True)]
    (piece,) = [p for c in payloads(r, "context.composed")[1:] for p in c["pieces"]
                if p["name"] == "hint"]
    assert piece["detail"][0]["actual"] == "<cvv>"
    assert "417" not in r.trace.to_json() + r.why()
    assert payloads(r, "redaction.applied")[0]["counts"]["secrets"] >= 3


def test_refused_evidence_and_the_report_hold_the_placeholder():
    from afp_dsl import report_html
    agent, _ = make(SPEC.replace("matches /^[0-9]{3}$/", '== "999"'), [call("fetch"), "done"],
                    tools={"fetch": lambda: {"card": {"cvv": "417"}, "n": 2}})
    r = agent.run("hi")
    (refused,) = payloads(r, "route.evaluated")
    assert refused["fired"] is False and refused["conditions"][1]["actual"] == "<cvv>"
    html = report_html.report(r.trace.events)
    assert "&lt;cvv&gt;" in html and "417" not in html
