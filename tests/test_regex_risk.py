"""The checker's regex budget: which patterns it runs on the spec's values, and what it says."""
from __future__ import annotations

import doctest

import pytest
from check_support import analyse

from afp_dsl.checks import regex_risk, solver
from afp_dsl.checks.regex_risk import backtracking_risk, paths, runnable

# Risky: every pattern that can backtrack exponentially, and some safe ones the conservative rule
# cannot tell apart (`(ab|AB)+`: alternatives that only differ in case).
RISKY = [r"(a|aa)+", r"(a+)+", r"(a*)*b", r"(\w+\s?)+$", r"^(a|aa)+$", r"(?:a?){30}a{30}",
         r"(ab|AB)+", r"(foo|foobar)+", r"(?:a|b|)+", r"((a+))+", r"(?=(a+))+x",
         r"(?>a|aa)+", r"(a|aa)++", r"(?:\u0131x|ix)+", r"(x+x+)+y"]
SAFE = [r"a+", r"[a-z]+\d*", r"(ab)+", r"^foo|bar$", r"(ab|cd)+", r"(a|b)+", r"(?:foo|bar|baz)+x",
        r"(\d+\.){3}\d+", r"^\w+@\w+\.\w+$", r"sk-[A-Za-z0-9]{20,}", r"(a|aa){1,3}", r"x*y*z*"]


@pytest.mark.parametrize("pattern", RISKY)
def test_a_pattern_that_can_backtrack_exponentially_is_risky(pattern: str) -> None:
    assert backtracking_risk(pattern) is not None
    assert not runnable(pattern, "", "a")  # never run, however short the text


@pytest.mark.parametrize("pattern", SAFE)
def test_a_pattern_that_cannot_is_safe_and_runs_on_short_texts(pattern: str) -> None:
    assert backtracking_risk(pattern) is None
    assert runnable(pattern, "", "a" * 20)


def test_a_pattern_that_does_not_compile_is_left_to_afp004() -> None:
    assert backtracking_risk("(a") is None and paths("(a", "", 10) == 0


def test_the_estimate_grows_with_the_text_and_stops_at_the_budget() -> None:
    assert paths(r".*a.*b.*c", "", 10) < paths(r".*a.*b.*c", "", 100)
    assert runnable(r".*a.*b.*c", "", "x" * 50)
    assert not runnable(r".*a.*b.*c.*d.*e", "", "x" * 5000)


def test_the_module_examples_hold() -> None:
    assert doctest.testmod(regex_risk).failed == 0


def _codes(text: str) -> list[str]:
    return [d.code for d in analyse(text)[1]]


REPRO = ('instruction i { when = message matches /^(a|aa)+$/ and message == '
         '"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab" prompt = "p" }')


@pytest.mark.timeout(60)
def test_the_backtracking_repro_finishes_with_a_warning_and_no_claim() -> None:
    assert _codes(REPRO) == ["AFP307"]


@pytest.mark.timeout(60)
def test_a_long_risky_route_guard_finishes() -> None:
    spec = ('tool t { description = "d" }\nskill a { description = "d", tools = [t] }\n'
            'skill b { description = "d" }\ngraph g { entry a\n  route a -> b on t when '
            'message matches /^(a|aa)+$/ and message == "' + "a" * 44 + 'b" }\n'
            'agent x { system = "s", tools = [t], graph = g }')
    assert "AFP208" not in _codes(spec) and "AFP307" in _codes(spec)


@pytest.mark.timeout(60)
def test_a_constant_left_operand_is_not_run_through_a_risky_pattern() -> None:
    spec = 'instruction i { when = "' + "a" * 60 + 'b" matches /^(a|aa)+$/ prompt = "p" }'
    assert _codes(spec) == ["AFP307"]


@pytest.mark.timeout(60)
def test_a_schema_default_is_not_validated_through_a_risky_pattern() -> None:
    spec = ('tool t { description = "d"\n  output = { type: "object", properties: { n: { type: '
            '"string", pattern: "^(a|aa)+$", default: "' + "a" * 60 + 'b" } } } }')
    assert "AFP302" not in _codes(spec)


def test_ordinary_patterns_keep_their_analysis() -> None:
    assert "AFP208" in _codes('instruction i { when = message matches /^a+$/ and message == "aab" prompt = "p" }')
    assert "AFP305" in _codes('instruction i { when = "aab" matches /^a+$/ prompt = "p" }')
    assert "AFP302" in _codes('tool t { description = "d"\n  output = { type: "object", properties: '
                              '{ n: { type: "string", pattern: "^a+$", default: "aab" } } } }')


def test_a_risky_pattern_on_a_number_is_still_a_type_mismatch() -> None:
    """Types are decided without running the pattern."""
    assert "AFP305" in _codes('instruction i { when = iteration matches /(a+)+/ prompt = "p" }')


def test_a_long_value_for_a_safe_pattern_leaves_the_key_unknown_with_a_note() -> None:
    atoms = solver.dnf([analyse('instruction i { when = message matches /.*a.*b.*c.*d/ and message == "'
                                + "x" * 3000 + '" prompt = "p" }')[0].modules[0].decls[0].when])[0]
    r = solver.solve_key(atoms, atoms[0].key)
    assert r.status == "unknown" and "not run on a value of 3000 characters" in r.note
