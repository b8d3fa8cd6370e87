"""AFP407 does-nothing: an empty policy or redact rule is accepted, but named (it would look
like protection that is not there)."""
from __future__ import annotations

import afp_dsl

HEAD = 'agent a { tools = [t] policies = [p] redact = [r] }\ntool t { description = "t" }\n'


def _found(text: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in afp_dsl.check(HEAD + text)]


def test_an_empty_policy_and_redact_rule_are_named():
    assert _found("policy p { }\nredact r { }\n") == [
        ("AFP407", "policy `p` has no rules and no `impl`: it allows everything"),
        ("AFP407", "redact rule `r` has no `keys` and no `patterns`: it scrubs nothing")]
    assert [c for c, _ in _found("policy p { input { } }\nredact r { keys = [] }\n")] == \
        ["AFP407", "AFP407"]


def test_a_policy_or_rule_that_does_something_is_not():
    assert _found('policy p { input { deny when message matches /x/ because "x" } }\n'
                  'redact r { keys = ["password"] }\n') == []
    assert _found('policy p { impl = python("m:f") }\nredact r { patterns = [/sk-\\w+/] }\n') == []
