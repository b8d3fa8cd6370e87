"""Audit regression: dead conditional entries (AFP204).

Entries are tried in order at cold start (semantics §4), so a conditional entry whose `when` can
hold only where an earlier entry's holds never starts a run; before, only entries after an
unconditional one were reported.
"""
from __future__ import annotations

from check_support import analyse

GRAPH = """agent a {{ graph = g }}
tool t {{ description = "d" }}
skill s1 {{ description = "d" tools = [t] }}
skill s2 {{ description = "d" tools = [t] }}
skill s3 {{ description = "d" }}
graph g {{
  {entries}
  route s1 -> s2 on t
  route s2 -> s3 on t
}}
"""


def _found(entries: str) -> list[tuple[str, int]]:
    text = GRAPH.format(entries="\n  ".join(entries.split(";")))
    return [(d.code, text.count("\n", 0, d.primary.span.start) + 1) for d in analyse(text, "t.afp")[1]]


def test_entry_covered_by_earlier_entries_is_dead():
    assert _found('entry s1 when iteration >= 1; entry s2 when message mentions "x"') == [("AFP204", 8)]
    assert _found('entry s1 when message mentions "x"; entry s2 when message mentions "x"') == [
        ("AFP204", 8)]
    assert _found('entry s1 when iteration < 3; entry s3 when iteration > 5;'
                  'entry s2 when iteration == 2 or iteration == 7') == [("AFP204", 9)]


def test_entries_that_can_each_start_a_run_are_silent():
    assert _found('entry s1 when message mentions "x"; entry s2 when message mentions "y"') == []
    assert _found('entry s1 when iteration < 3; entry s2 when iteration <= 3') == []
    assert _found('entry s1 when message matches /a/; entry s2') == []


def test_unsatisfiable_or_unknown_entries_are_not_also_dead():
    assert [c for c, _ in _found('entry s1 when iteration >= 1; entry s2 when iteration < 1')] == [
        "AFP208"]
    assert [c for c, _ in _found('entry s1 when iteration >= 1; entry s2 when tool == "t"')] == [
        "AFP303"]

