"""AFP407 does-nothing: an empty policy or redact rule is accepted, but named (it would look
like protection that is not there)."""
from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("decl, code", [
    ("redact r { pattern = [/sk-[a-z]+/] }", "AFP104"),   # misspelt `patterns`
    ('redact r { keys = "password" }', "AFP106"),         # a string, not a list
    ('policy p { impll = python("a.b:c") }', "AFP104"),   # misspelt `impl`
    ('policy p { impl = python("acme.audit") }', "AFP106"),  # not `module:attribute`
    ("policy p { impl = returns(1) }", "AFP106"),         # not a host binding
])
def test_a_rejected_attribute_is_the_one_diagnostic_not_also_does_nothing(decl: str, code: str):
    # the declaration lowered without the attribute is not the one meant: one root cause
    other = "redact r { keys = [\"k\"] }" if decl.startswith("policy") else \
        'policy p { input { deny when message matches /x/ because "x" } }'
    assert [c for c, _ in _found(decl + "\n" + other + "\n")] == [code]


def test_a_rejected_attribute_elsewhere_does_not_hide_an_empty_declaration():
    assert [c for c, _ in _found("policy p { }\nredact r { pattern = [/x/] }\n")] == \
        ["AFP407", "AFP104"]
