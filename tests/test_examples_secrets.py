"""The examples that say a secret never reaches a record keep their word.

Each case runs one of the example's own `test` blocks under the scripted mock and looks for the
raw secret in every recorded event (the JSONL a store or an export would hold) of every run the
block makes, inner runs included. The answer a test sees is the raw one (the interpreter keeps
raw values in live memory), so `expect` lines cannot pin this; the trace can.
"""
from __future__ import annotations

import pytest
from test_why_golden import example_runs

CASES = [  # (example, test block, raw secrets the script feeds in, the rule that must scrub them)
    # the code is typed into the user's message, recorded before any tool sees it under `code`
    ("it_helpdesk", "reset_over_two_messages", ["482913"], "otp"),
    ("travel_desk", "contact_details_are_redacted", ["2345 6789"], "phones"),
    ("db_ops", "leaking_answer_is_stopped", ["hunter2", "admin:"], "db_secrets"),
    # returned inside the inner run of `filings_reader`, under the analyst's `banking` rule
    ("due_diligence", "bank_details_stay_out_of_the_records", ["DE8937040044"], "banking"),
]


def _records(example: str, test: str) -> list[str]:
    out = []
    for _, r in example_runs(example, test):
        traces = [r.trace] + [t for tool in r.inner.values() for t in tool.runs.values()]
        out += [t.to_jsonl() for t in traces]
    return out


@pytest.mark.parametrize("example,test,secrets,rule", CASES, ids=[c[1] for c in CASES])
def test_the_secret_is_never_recorded(example: str, test: str, secrets: list[str], rule: str):
    records = _records(example, test)
    for secret in secrets:
        assert not [j for j in records if secret in j], f"{secret!r} reached a record of {example}"
    assert any(f'"{rule}"' in j and "redaction.applied" in j for j in records), \
        f"`{rule}` never applied in {example}::{test}: the case no longer feeds it a secret"
