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
    ("  route c -> d on t\n  route a -> c\n", False),        # a bare one too (a model pick)
    ("  route c -> d\n  route a -> d on t\n", False),        # (no deterministic route out of it)
])
def test_a_later_unconditional_entrys_own_routes_never_fire_without_a_way_in(routes, stranded):
    found = [d.message for d in afp_dsl.check(BASES.format(routes=routes)) if d.code == "AFP204"]
    assert found == (["the routes out of entry `c` never fire"] if stranded else []), found
