"""`mentions [a, b]` holds where `mentions a` or `mentions b` does, ignoring case (language §6):
an entry whose keywords are all among an earlier entry's can never start a run (AFP204, the
original's rules-shadowed-by-order), while one with a keyword of its own can."""
from __future__ import annotations

import pytest

import afp_dsl

SPEC = ('agent ag {{ graph = g }}\nskill a {{ description = "a" }}\nskill b {{ description = "b" }}\n'
        'graph g {{\n  entry a when message mentions {first}\n  entry b when message mentions {then}\n}}\n')


@pytest.mark.parametrize("first, then, dead", [
    ('["refund", "charge"]', '["charge"]', True),
    ('["refund", "charge"]', '"Charge"', True),
    ('["refund", "charge"]', '["charge", "refund"]', True),
    ('"refund"', '["REFUND"]', True),
    ('["refund"]', '["refund", "charge"]', False),
    ('["refund", "charge"]', '["charge", "bill"]', False),
    ('["refund"]', '["refunds"]', False),
])
def test_an_entry_whose_keywords_an_earlier_one_has_is_dead(first: str, then: str, dead: bool) -> None:
    codes = [d.code for d in afp_dsl.check(SPEC.format(first=first, then=then))]
    assert ("AFP204" in codes) is dead, codes


def test_many_keywords_in_one_guard_are_still_analysed() -> None:
    """A guard whose keyword lists would split into too many cases (12 × 12) is solved with them
    whole: no claim it cannot back, and the rest of the checks still run."""
    words = ", ".join(f'"w{i}"' for i in range(12))
    others = ", ".join(f'"v{i}"' for i in range(12))
    spec = SPEC.format(first='"refund"', then=f"[{words}] and message mentions [{others}]")
    assert [d.code for d in afp_dsl.check(spec)] == []
    covered = SPEC.format(first=f"[{words}] and message mentions [{words}]", then='"w3"')
    assert [d.code for d in afp_dsl.check(covered)] == ["AFP204"]


BASES = ('agent ag {{ graph = g }}\ntool t {{ description = "t" }}\n'
         'skill a {{ description = "a" tools = [t] }}\nskill c {{ description = "c" tools = [t] }}\n'
         'skill d {{ description = "d" }}\ngraph g {{\n  entry a\n  entry c\n{routes}}}\n')


@pytest.mark.parametrize("routes, stranded", [
    ("  route c -> d on t\n", True),
    ("  route c -> d on t\n  route a -> c on t\n", False),   # a route leads the cursor to it
    ("  route c -> d on t\n  route a -> c\n", True),         # a bare one allows only a pick,
    # as the entry does already (the original's dead-entry-step: a deterministic edge in)
    ("  route c -> d\n  route a -> d on t\n", False),        # (no deterministic route out of it)
])
def test_a_later_unconditional_entrys_own_routes_fire_only_from_a_pick(routes, stranded):
    found = [d.message for d in afp_dsl.check(BASES.format(routes=routes))
             if d.message.startswith("the routes out of entry")]
    assert found == (["the routes out of entry `c` fire only after the model picks it"]
                     if stranded else []), found
    if stranded:
        assert [d.code for d in afp_dsl.check(BASES.format(routes=routes))] == ["AFP204"]


def test_a_keyword_refused_for_a_glued_mark_does_not_hide_a_shorter_one_at_the_same_place():
    """`mentions ["a", "a-b"]` on "a-b◌̃": `a-b` has a combining mark glued to it, `a` does not."""
    from afp_dsl.mentions import keywords_matcher
    assert keywords_matcher(("a", "a-b")).search("a-b\u0303").group(0) == "a"
    assert keywords_matcher(("a-b",)).search("a-b\u0303") is None


def test_many_entries_with_long_keyword_lists_check_quickly_enough_to_finish() -> None:
    """Splitting is bounded: 150 entries of 60 keywords are judged with the lists whole."""
    entries = "\n".join(
        f'  entry s{i} when message mentions [{", ".join(f"{chr(34)}w{i}_{j}{chr(34)}" for j in range(60))}]'
        for i in range(150))
    skills = "\n".join(f'skill s{i} {{ description = "s" }}' for i in range(150))
    spec = f"agent ag {{ graph = g }}\n{skills}\ngraph g {{\n{entries}\n}}\n"
    assert [d.code for d in afp_dsl.check(spec) if d.code == "AFP204"] == []
