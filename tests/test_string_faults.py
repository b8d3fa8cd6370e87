"""AFP005 points at the first fault of a string literal: an escape JSON does not have, or a raw
control character (before: "invalid escape" underlining the whole string, also for a control
character, which is no escape at all)."""
from __future__ import annotations

import json
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import afp_dsl as afp
from afp_dsl.lower_values import _string_fault

pieces = st.sampled_from(['a', ' ', '\\\\', '\\"', '\\/', '\\n', '\\t', '\\u00e9', '\\u12', '\\q',
                          '\\x', '\\', '\t', '\x01', '\x1b', '\x7f', 'é', '\\u0041B', '"'])
STRING = re.compile(r'"(?:[^"\\\n\r]|\\.)*"')  # the grammar's STRING token (grammar/afp.lark)


@settings(max_examples=400, deadline=None)
@given(st.lists(pieces, max_size=6))
def test_a_literal_has_a_fault_exactly_when_json_refuses_it(parts) -> None:
    literal = f'"{"".join(parts)}"'
    assume(STRING.fullmatch(literal))  # (what the lexer hands on as one string)
    at, what = _string_fault(literal)
    try:
        json.loads(literal)
        ok = True
    except ValueError:
        ok = False
    assert ok == (what == ""), (literal, at, what)
    if not ok:  # the fault is where JSON's own decoder first stops
        json.loads(literal[:at] + '"')  # (the text before it is a valid string)


def _diag(text: str):
    (d,) = [d for d in afp.check(text) if d.code == "AFP005"]
    return d


def test_a_control_character_is_named_with_its_escape() -> None:
    d = _diag('agent a {\n  system = "Be\x01 brief."\n}\n')
    assert d.message == "control character U+0001 inside a string"
    assert d.help == "write it as the escape `\\u0001`"
    assert (d.labels[0].span.end - d.labels[0].span.start) == 1
    tab = _diag('agent a {\n  system = "Be\tbrief \\q"\n}\n')
    assert tab.message == "a tab inside a string" and tab.help == "write it as the escape `\\t`"


def test_a_bad_escape_is_named_and_a_good_one_passed_over() -> None:
    d = _diag('agent a {\n  system = "C:\\\\temp \\q"\n}\n')
    assert d.message == "invalid escape `\\q` in string"
    src = 'agent a {\n  system = "C:\\\\temp \\q"\n}\n'
    assert src[d.labels[0].span.start:d.labels[0].span.end] == "\\q"
    assert _diag('agent a {\n  system = "\\u12x"\n}\n').message == "invalid escape `\\u12` in string"
