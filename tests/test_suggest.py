"""`suggest.closest`: difflib's best close match, else a short name one edit away; difflib imported
lazily."""
from __future__ import annotations

import difflib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl.suggest import closest

names = st.text("abcdeXY_", min_size=0, max_size=8)


@settings(derandomize=True, deadline=None, max_examples=200, database=None)
@given(names, st.lists(names, max_size=6))
def test_closest_is_the_best_close_match_else_one_edit_away(word, candidates) -> None:
    found = difflib.get_close_matches(word, candidates, n=1)
    got = closest(word, candidates)
    if found:
        assert got == found[0]
    else:
        one_edit = [c for c in candidates if c != word and _edits(word, c) == 1]
        assert got == (one_edit[0] if one_edit and 2 <= len(word) <= 5 else None)
    assert closest(word, iter(candidates)) == got  # any iterable


def _edits(a: str, b: str) -> int:
    """Optimal string alignment distance (substitution, insertion, deletion, adjacent swap)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@pytest.mark.parametrize("word, candidates, meant", [
    ("ab", ["a_agent", "ac"], "ac"), ("t2", ["t1"], "t1"), ("tl", ["lt"], "lt"),
    ("abcd", ["abd"], "abd"), ("ab", ["abc"], "abc"),
    ("x", ["y"], None), ("ab", ["cd"], None), ("abcdefg", ["abcdefh"], "abcdefh"),
])
def test_short_names_one_edit_away_are_suggested(word, candidates, meant) -> None:
    assert closest(word, candidates) == meant


def test_a_misspelt_name_gets_its_suggestion_and_a_stranger_none() -> None:
    assert closest("toools", ["tools", "skills"]) == "tools"
    assert closest("zzz", ["tools", "skills"]) is None
    assert closest("x", []) is None


def test_a_clean_check_does_not_import_difflib(tmp_path) -> None:
    spec = tmp_path / "ok.afp"
    spec.write_text('agent a {\n  system = "Hi."\n}\n', encoding="utf-8")
    code = ("import sys, afp_dsl; diags = afp_dsl.check(sys.argv[1]); "
            "print(len(diags), 'difflib' in sys.modules, 'textwrap' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False"]
    typo = tmp_path / "typo.afp"
    typo.write_text('agent a {\n  sytem = "Hi."\n}\n', encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code, str(typo)], capture_output=True, text=True, check=True)
    count, has_difflib, _ = out.stdout.split()
    assert int(count) >= 1 and has_difflib == "True"  # a suggestion was needed
