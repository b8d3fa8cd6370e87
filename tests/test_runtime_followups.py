"""Runtime audit follow-ups: what a failed condition records, and what the mock says when a
resumed run asks a fresh script for a reply it does not have."""
from __future__ import annotations

import afp_dsl as afp
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock


def _run(spec: str, message: str):
    agent = afp.load(spec).agent(provider=mock(["ok"]), effects=Effects(run_ids=counter_ids("f")))
    return agent.run(message)


def test_a_missing_path_in_an_ordered_comparison_says_it_does_not_exist():
    """`last.result.count > 3` before any tool ran said "`>` needs two numbers or two strings,
    got null and number"; the path does not exist, as `==` already said (semantics §2)."""
    spec = 'agent a { context = [f] }\nfact f { when = last.result.count > 3 data = "x" }\n'
    r = _run(spec, "go")
    skipped = next(e.payload for e in r.trace if e.kind == "context.composed")["skipped"]
    assert skipped[0]["conditions"][0]["reason"] == "`last.result.count` does not exist"


def test_a_fresh_mock_after_a_resume_names_the_runs_call_number():
    from afp_dsl.providers.base import Message, Request
    from afp_dsl.providers.mock import MockProvider
    import pytest
    from afp_dsl.providers.base import ProviderError
    with pytest.raises(ProviderError) as info:
        MockProvider([]).complete(Request("", [Message("user", "x")], call_number=2))
    assert "no reply for LLM call #2 (its reply #1; it scripted 0)" in str(info.value)
    with pytest.raises(ProviderError) as info:
        MockProvider([]).complete(Request("", [Message("user", "x")], call_number=1))
    assert "no reply for LLM call #1 (it scripted 0)" in str(info.value)
