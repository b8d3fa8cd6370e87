"""An unconditional entry repeated for one skill (`entry a` twice) passed silently: the skill
is already a persistent base, so the second statement changes nothing. It is AFP204 dead-entry
("repeats an earlier entry") at the later one, once; other later unconditional entries stay
persistent bases (not reported), and a conditional entry of the same skill is judged as before."""
from __future__ import annotations

import afp_dsl

SPEC = '''agent z { graph = g }
tool t { description = "t" }
skill a { description = "a" tools = [t] }
skill b { description = "b" }
graph g {
  ENTRIES
  route a -> b on t
}
'''


def _found(entries: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in afp_dsl.check(SPEC.replace("ENTRIES", entries))]


def test_a_repeated_unconditional_entry_is_reported_once() -> None:
    assert _found("entry a\n  entry a") == [("AFP204", "entry `a` repeats an earlier entry")]
    assert _found("entry a\n  entry b\n  entry a") == [
        ("AFP204", "entry `a` repeats an earlier entry")]
    # a later base with routes of its own is reported for that, and the repeat once more
    assert _found('entry b\n  entry a "x"\n  entry a') == [
        ("AFP204", "the routes out of entry `a` fire only after the model picks it"),
        ("AFP204", "entry `a` repeats an earlier entry")]


def test_entries_that_add_something_are_not_reported() -> None:
    assert _found("entry a\n  entry b") == []
    assert _found('entry a when message == "x"\n  entry a') == []
