"""language §7 (policy rules that can never match) across blocks: two blocks of one moment are
one list at run time, so a rule after an always-true or covering rule of an earlier block never
decides (AFP401); a `before *` block runs before a later block of any tool, and a block for one
tool before a later block for the same tool only."""
from __future__ import annotations

import pytest

import afp_dsl

HEAD = ('agent a { tools = [refund, lookup] policies = [p] }\n'
        'tool refund { description = "r" input { amount: number } }\n'
        'tool lookup { description = "l" input { amount: number } }\n')


def _dead(blocks: str) -> list[int]:
    spec = HEAD + "policy p {\n" + blocks + "}\n"
    return sorted(spec.count("\n", 0, d.primary.span.start) + 1 - 4
                  for d in afp_dsl.check(spec) if d.code == "AFP401")


@pytest.mark.parametrize("blocks, dead", [
    ('input { deny when message matches /a/ because "1" }\n'
     'input { deny when message matches /a/ because "2" }\n', [2]),
    ('output { allow when true }\noutput { deny when text matches /x/ because "n" }\n', [2]),
    ('before refund { allow when true }\nbefore refund { deny when args.amount > 5 because "b" }\n', [2]),
    ('before * { allow when true }\nbefore refund { deny when args.amount > 5 because "b" }\n', [2]),
    ('before * { deny when args.amount > 1 because "a" }\n'
     'before lookup { deny when args.amount > 5 because "b" }\n', [2]),
])
def test_a_rule_an_earlier_block_decides_first_is_reported(blocks: str, dead: list[int]) -> None:
    assert _dead(blocks) == dead


@pytest.mark.parametrize("blocks", [
    'before refund { allow when true }\nbefore lookup { deny when args.amount > 5 because "b" }\n',
    'before refund { allow when true }\nbefore * { deny when args.amount > 5 because "b" }\n',
    'before refund { allow when true }\nafter refund { deny when status == "failure" because "b" }\n',
    'input { deny when message matches /a/ because "1" }\n'
    'input { deny when message matches /b/ because "2" }\n',
])
def test_blocks_that_do_not_share_calls_or_cover_each_other_are_silent(blocks: str) -> None:
    assert _dead(blocks) == []


@pytest.mark.parametrize("pattern, empty", [
    (r"/(?<=password=)\S*/", True),   # empty where its lookbehind holds: no probe holds it
    (r"/key-\d+|(?=token)/", True),
    (r"/x*/", True),
    (r"/sk-[A-Za-z0-9]{20,}/", False),
    (r"/(?<=password=)\S+/", False),
])
def test_afp403_finds_an_empty_shortest_match_beyond_the_probe_texts(pattern, empty) -> None:
    spec = f'redact r {{ patterns = [{pattern}] }}\n'
    assert [d.code for d in afp_dsl.check(spec)] == (["AFP403"] if empty else [])
