"""AFP205 for a route that repeats an earlier one (spec/semantics.md §4: routes are tried in
declaration order and the first whose conditions all hold fires, so a later copy never does).

Routes to one target never compete, but an exact copy (same target, same tool, same statuses,
same guard; a label is only a caption) is dead: reported at the copy, with the earlier route as
the related location. Routes to one target that differ in any way stay silent, as before.
The rendered form is pinned by tests/golden/check/duplicate_routes.afp.
"""
from __future__ import annotations

from check_support import analyse

SPEC = """agent a {{ graph = g }}
tool lookup {{ description = "l" output {{ status: "found" | "missing", amount: integer }} }}
tool other {{ description = "o" }}
skill s {{ description = "s" tools = [lookup, other] }}
skill t {{ description = "t" }}
skill u {{ description = "u" }}
graph g {{
  entry s
{routes}
}}
"""


_SOURCE: list[str] = [""]  # the text last checked, for `_line`


def _check(*routes: str):
    """The diagnostics of SPEC with these routes (line 9 is the first route)."""
    _SOURCE[0] = SPEC.format(routes="\n".join(f"  {r}" for r in routes))
    return analyse(_SOURCE[0], "t.afp")[1]


def _line(d, primary: bool) -> int:
    """The 1-based line of the diagnostic's primary label (or of its related location)."""
    lab = next(lab for lab in d.labels if lab.primary == primary)
    return _SOURCE[0].count("\n", 0, lab.span.start) + 1


def test_an_unguarded_route_repeated_is_afp205_at_the_copy():
    found = _check("route s -> t on lookup", "route s -> t on lookup")
    assert [d.code for d in found] == ["AFP205"]
    d = found[0]
    assert d.message == ("route `s -> t` never fires: it duplicates an earlier route (the same "
                         "tool, statuses and guard)")
    assert (_line(d, True), _line(d, False)) == (10, 9)  # the copy; the earlier route as related
    assert d.help == "delete one of the two routes: they are the same route"
    assert "with no further condition" in d.notes[0]


def test_a_guarded_route_repeated_is_afp205():
    found = _check("route s -> t on lookup when result.amount > 5 and result.status == \"found\"",
                   "route s -> t on lookup when result.amount > 5 and result.status == \"found\"")
    assert [(d.code, _line(d, True)) for d in found] == [("AFP205", 10)]
    assert "under the same guard" in found[0].notes[0]


def test_a_guard_the_solver_cannot_decide_is_still_a_duplicate():
    found = _check("route s -> t when result.status matches /f/",
                   "route s -> t when result.status matches /f/")
    assert [d.code for d in found] == ["AFP205"]
    assert "duplicates an earlier route" in found[0].message


def test_status_sets_are_compared_as_sets():
    found = _check("route s -> t status [failure, denied]", "route s -> t status [denied, failure]")
    assert [d.code for d in found] == ["AFP205"]


def test_routes_differing_only_in_their_labels_are_duplicates_with_a_note():
    found = _check('route s -> t on lookup "first"', 'route s -> t on lookup "second"')
    assert [d.code for d in found] == ["AFP205"]
    assert any("label is only a caption" in n for n in found[0].notes)


def test_every_later_copy_names_the_first_route():
    found = _check(*["route s -> t on lookup when result.amount > 5"] * 3)
    assert [(d.code, _line(d, True), _line(d, False)) for d in found] == [
        ("AFP205", 10, 9), ("AFP205", 11, 9)]
    assert all("duplicates an earlier route" in d.message for d in found)


def test_a_copy_after_a_route_to_another_target_is_still_found():
    found = _check("route s -> t on lookup when result.amount > 5",
                   "route s -> u on lookup when result.amount < 0",
                   "route s -> t on lookup when result.amount > 5")
    assert [(d.code, _line(d, True)) for d in found] == [("AFP205", 11)]
    assert "duplicates an earlier route" in found[0].message
    assert _line(found[0], False) == 9  # the related location is the first copy, not `s -> u`


def test_routes_to_one_target_that_differ_stay_silent():
    assert _check("route s -> t on lookup", "route s -> t on lookup when result.amount > 5") == []
    assert _check("route s -> t on lookup", "route s -> t on other") == []
    assert _check("route s -> t on lookup", "route s -> t on lookup status failure") == []
    assert _check("route s -> t status failure", "route s -> t status [failure, denied]") == []
    assert _check("route s -> t on lookup when result.amount > 5",
                  "route s -> t on lookup when result.amount > 6") == []


def test_literals_equal_in_python_but_not_in_a_guard_are_no_duplicates():
    # no output schema: `result.x` is untyped, so neither guard is a type mismatch
    text = SPEC.replace('output {{ status: "found" | "missing", amount: integer }}', "")
    for a, b in (("1", "true"), ("1", "1.0"), ("0", "false")):
        _SOURCE[0] = text.format(routes=f"  route s -> t on lookup when result.x == {a}\n"
                                        f"  route s -> t on lookup when result.x == {b}")
        assert analyse(_SOURCE[0], "t.afp")[1] == [], (a, b)


def test_bare_routes_repeated_are_not_reported():
    # a bare route never fires by itself: it only widens what `read_skill` accepts
    found = _check("route s -> t on lookup", "route s -> u", "route s -> u")
    assert [d.code for d in found] == ["AFP203"]  # `u` is only entered by the model: nothing more


def test_a_copy_whose_guard_names_an_unknown_field_is_reported_once_per_guard_only():
    found = _check("route s -> t on lookup when result.amout > 5",
                   "route s -> t on lookup when result.amout > 5")
    assert [d.code for d in found] == ["AFP304", "AFP304"]  # no AFP205 cascade


def test_a_copy_is_not_an_earlier_competitor():
    # the copy never fires: the later route is compared with the original alone (one AFP205)
    found = _check("route s -> t on lookup", "route s -> t on lookup", "route s -> u on lookup")
    assert [(d.code, _line(d, True), _line(d, False)) for d in found] == [
        ("AFP205", 10, 9), ("AFP205", 11, 9)]
    assert "never fires: the earlier route `s -> t`" in found[1].message


def test_a_route_whose_guard_names_the_tool_of_an_earlier_on_route_is_shadowed():
    """`route s1 -> s2 when tool == "t1" and …` after `route s1 -> s3 on t1` never fires (it
    said only "can fire on the same result"); with `or` it can (on `t2`), and stays AFP205."""
    import afp_dsl
    head = ('agent a { graph = g }\ntool t1 { description = "x" output { n: number } }\n'
            'tool t2 { description = "x" }\nskill s1 { description = "d" tools = [t1, t2] }\n'
            'skill s2 { description = "d" }\nskill s3 { description = "d" }\n'
            'graph g {\n  entry s1\n  route s1 -> s3 on t1\n  route s1 -> s2 when %s\n}\n')
    (d,) = afp_dsl.check(head % 'tool == "t1" and result.n > 3')
    assert d.code == "AFP205" and "never fires" in d.message
    (d,) = afp_dsl.check(head % 'tool == "t1" or result.n > 3')
    assert d.code == "AFP205" and "can fire on the same result" in d.message
