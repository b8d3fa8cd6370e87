"""A pattern that can backtrack exponentially (AFP307) never stalls a run: searched on a short
text as written, refused on a long one (`afp_dsl/regex_budget.py`). A refused condition does
not hold, with its reason in the trace; a refused redact pattern redacts the whole text (fails
closed). Before, `afpc run` spun at full CPU for minutes on a 37-character message."""
from __future__ import annotations

import threading

import afp_dsl as afp
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock
from afp_dsl.regex_budget import too_costly

GUARD = """
agent a { context = [i] }
instruction i { when = message matches /^(a+)+$/ prompt = "ALL A" }
"""
REDACT = """
agent a { redact = [r] }
redact r { patterns = [/(x+x+)+y/] }
"""
NEAR_MISS = "a" * 40 + "!"


def _run(spec: str, message: str, script=("ok",)):
    out = {}

    def go():
        agent = afp.load(spec).agent(provider=mock(list(script)),
                                     effects=Effects(run_ids=counter_ids("b")))
        out["r"] = agent.run(message)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the run stalled"
    return out["r"]


def test_a_risky_guard_is_searched_on_a_short_text():
    r = _run(GUARD, "aaaa")
    pieces = [p["name"] for e in r.trace if e.kind == "context.composed" for p in e.payload["pieces"]]
    assert pieces == ["i"]


def test_a_risky_guard_on_a_long_text_does_not_hold_and_says_why():
    r = _run(GUARD, NEAR_MISS)
    assert r.outcome == "answered"
    composed = [e.payload for e in r.trace if e.kind == "context.composed"][0]
    assert composed["pieces"] == []
    [skipped] = composed["skipped"]
    text = str(skipped)
    assert "was not searched over 41 characters" in text and "AFP307" in text, text


def test_a_risky_redact_pattern_on_a_long_text_redacts_it_whole():
    r = _run(REDACT, "x" * 40, script=["fine"])
    started = next(e.payload for e in r.trace if e.kind == "run.started")
    assert started["message"] == "[REDACTED]"
    short = _run(REDACT, "xxy", script=["fine"])  # (short enough to search: found, then redacted)
    assert next(e.payload for e in short.trace if e.kind == "run.started")["message"] == \
        "[REDACTED]"
    clean = _run(REDACT, "xx", script=["fine"])  # (searched: no match, kept)
    assert next(e.payload for e in clean.trace if e.kind == "run.started")["message"] == "xx"


def test_only_a_risky_pattern_is_ever_refused():
    assert not too_costly("^a+$", "", 10**6)
    assert not too_costly("^(a+)+$", "", 5)
    assert too_costly("^(a+)+$", "", 41)


def test_expect_answer_matches_with_a_risky_pattern_fails_instead_of_hanging(tmp_path):
    from click.testing import CliRunner
    from afp_dsl.cli import main
    spec = tmp_path / "t.afp"
    spec.write_text('agent a { }\ntest t {\n  user "go"\n  model says "' + NEAR_MISS + '"\n'
                    '  expect answer matches /^(a+)+$/\n}\n', encoding="utf-8")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=CliRunner().invoke(main, ["test", str(spec)])),
                         daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the test stalled"
    assert out["r"].exit_code == 1 and "was not searched over 41 characters" in out["r"].output


def test_a_policy_rule_whose_search_is_refused_denies():
    """Expression errors are denials (semantics §8): a rule's `matches` refused on a long text
    denies, and never hangs (before, a policy rule's compiled fast path searched it anyway)."""
    spec = ('agent a { policies = [p] }\n'
            'policy p { input { deny when message matches /^(a+)+$/ because "all a" } }\n')
    r = _run(spec, NEAR_MISS)
    assert r.outcome == "denied" and "was not searched over 41 characters" in r.answer
    assert _run(spec, "aaaa").outcome == "denied"  # (short: searched, and it matches)
    assert _run(spec, "ab").outcome == "answered"


def test_a_check_in_whose_search_is_refused_pauses():
    """A human-approval gate fails closed: the check-in pauses when its condition cannot be
    evaluated, a refused search included."""
    spec = ('agent a { tools = [t] }\ntool t { description = "t" input { q: string } '
            'check_in = args.q matches /^(a+)+$/ }\n')
    r = _run(spec, "go", script=[[("t", {"q": NEAR_MISS})], "done"])
    assert r.outcome == "paused"

