"""Audit regression: an `after` rule sees only calls that ran (spec/semantics.md §7: unknown
tools, `before` denials, invalid arguments and pauses never reach step 8), so a condition on
`status` naming only `denied`, `pending` or `invalid` never holds there (AFP401). A result over
`max_result_chars` is refused with status `invalid` after the tool ran, so `invalid` stays
possible for such a tool (and for `after *`).
"""
from __future__ import annotations

from check_support import analyse

SPEC = """agent a {{ tools = [t] policies = [p] }}
tool t {{ description = "d" {extra} }}
policy p {{
  after {tool} {{ deny when {cond} because "r" }}
}}
"""


def _codes(cond: str, tool: str = "t", extra: str = "") -> list[str]:
    return [d.code for d in analyse(SPEC.format(cond=cond, tool=tool, extra=extra), "t.afp")[1]]


def test_after_status_of_a_call_that_never_ran_is_reported():
    assert _codes('status == "denied"') == ["AFP401"]
    assert _codes('status in ["pending", "invalid"]') == ["AFP401"]
    assert _codes('status == "invalid"', tool="*") == []


def test_after_statuses_of_calls_that_ran_are_silent():
    for s in ("success", "failure", "partial", "absent"):
        assert _codes(f'status == "{s}"') == []
    assert _codes('status != "denied"') == []
    assert _codes('status == "invalid"', extra="max_result_chars = 10") == []
