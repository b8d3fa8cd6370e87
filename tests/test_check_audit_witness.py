"""language.md §7: the checker proves "reachability with a witness path". A skill reached only
through a bare route (AFP203) and a cycle with no way out (AFP207) are reachable claims: each
now carries a note with a path from an entry, in source syntax (as `--explain-reach` writes
hops), short on a long chain, and found in linear time overall."""
from __future__ import annotations

import afp_dsl

HEAD = '''agent z { graph = g }
tool t { description = "t" }
tool u { description = "u" }
skill a { description = "a" tools = [t] }
skill b { description = "b" tools = [t] }
skill c { description = "c" tools = [u] }
skill d { description = "d" }
'''


def _notes(spec: str, code: str) -> list[list[str]]:
    return [list(d.notes) for d in afp_dsl.check(spec) if d.code == code]


def test_a_bare_only_skill_names_a_path_in() -> None:
    # the path runs over the deterministic routes to the bare route's source, then the bare route
    spec = HEAD + '''graph g {
  entry a when message mentions "x"
  route a -> d
  route a -> b on t
  route b -> c on t
  route c -> d
}'''
    (notes,) = _notes(spec, "AFP203")
    assert "a path in: entry a when message mentions \"x\" → d (bare route: when the model " \
           "picks it)" in notes, notes


def test_a_bare_route_from_a_deep_skill_shows_the_deterministic_way_to_it() -> None:
    spec = HEAD + '''graph g {
  entry a
  route a -> b on t
  route b -> c on t
  route c -> d
}'''
    (notes,) = _notes(spec, "AFP203")
    assert "a path in: entry a → b on t → c on t → d (bare route: when the model picks it)" \
        in notes, notes


def test_a_cycle_with_no_way_out_names_how_the_cursor_gets_in() -> None:
    # `c` is declared before `b` but the cursor enters the cycle at `b`
    spec = HEAD.replace('skill b { description = "b" tools = [t] }\n', '') + \
        'skill b { description = "b" tools = [t] }\n' + '''graph g {
  entry a
  route a -> b on t
  route b -> c on t
  route c -> b on u
}'''
    (notes,) = _notes(spec, "AFP207")
    assert "the cursor gets in by: entry a → b on t" in notes, notes


def _chain(n: int) -> str:
    lines = ["agent z { graph = g }"]
    for i in range(n):
        lines += [f'tool t{i} {{ description = "t" }}',
                  f'skill s{i} {{ description = "s" tools = [t{i}] }}']
    lines += ['skill leaf { description = "leaf" }', "graph g {", "  entry s0"]
    lines += [f"  route s{i} -> s{i + 1} on t{i}" for i in range(n - 1)]
    lines += [f"  route s{n - 1} -> leaf", "}"]
    return "\n".join(lines)


def test_a_long_chain_is_cut_in_the_middle() -> None:
    (notes,) = _notes(_chain(30), "AFP203")
    (way,) = [x for x in notes if x.startswith("a path in: ")]
    assert way == ("a path in: entry s0 → s1 on t0 → s2 on t1 … → s27 on t26 → s28 on t27 "
                   "→ s29 on t28 → leaf (bare route: when the model picks it)"), way


def test_no_witness_note_where_nothing_is_claimed() -> None:
    # every skill reached by a deterministic route: neither AFP203 nor AFP207
    spec = HEAD + '''graph g {
  entry a
  route a -> b on t
  route b -> c on t
  route c -> d on u
}'''
    assert not [d.code for d in afp_dsl.check(spec) if d.code in ("AFP202", "AFP203", "AFP207")]


def test_a_path_of_eight_hops_is_shown_whole() -> None:
    (notes,) = _notes(_chain(7), "AFP203")  # entry, 6 routes, the bare route: 8 hops
    (way,) = [x for x in notes if x.startswith("a path in: ")]
    assert "…" not in way and way.count("→") == 7, way
    (notes,) = _notes(_chain(8), "AFP203")
    (way,) = [x for x in notes if x.startswith("a path in: ")]
    assert way.startswith("a path in: entry s0 → s1 on t0 → s2 on t1 … → s5 on t4 → s6 on t5 "
                          "→ s7 on t6 → leaf"), way


def test_an_overlap_witness_is_a_round_number_where_one_fits() -> None:
    """AFP210's example result read `result.n = 6.666666666666667` for `> 5` and `< 10`."""
    spec = '''agent z { graph = g }
tool t { description = "t" output { n: number } }
skill a { description = "a" tools = [t] }
skill b { description = "b" }
skill c { description = "c" }
graph g {
  entry a
  route a -> b on t when result.n > 5
  route a -> c on t when result.n < 10
}'''
    (notes,) = _notes(spec, "AFP210")
    assert "both hold when `t` returns, for example with result.n = 6" in notes, notes
