"""`suggest.closest`: the same answer as difflib's best close match, and difflib imported lazily."""
from __future__ import annotations

import difflib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_dsl.suggest import closest

names = st.text("abcdeXY_", min_size=0, max_size=8)


@settings(derandomize=True, deadline=None, max_examples=200, database=None)
@given(names, st.lists(names, max_size=6))
def test_closest_is_the_best_close_match(word, candidates) -> None:
    found = difflib.get_close_matches(word, candidates, n=1)
    assert closest(word, candidates) == (found[0] if found else None)
    assert closest(word, iter(candidates)) == closest(word, candidates)  # any iterable


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
