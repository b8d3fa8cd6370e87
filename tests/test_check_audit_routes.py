"""Audit regressions for competing routes (AFP205/AFP210).

A route whose `status` names only words outside the vocabulary (AFP306) never fires: it is not
also judged against the routes before it (one root cause, one diagnostic).
"""
from __future__ import annotations

from check_support import analyse

GRAPH = """agent a { graph = g }
tool t { description = "d" output { v: number } }
skill s1 { description = "d" tools = [t] }
skill s3 { description = "d" }
skill s4 { description = "d" }
graph g {
  entry s1
  route s1 -> s3 on t when result.v > 1
  %s
}
"""


def _codes(route: str) -> list[str]:
    return [d.code for d in analyse(GRAPH % route, "t.afp")[1]]


def test_route_with_only_unknown_statuses_is_not_also_ambiguous():
    assert _codes("route s1 -> s4 on t status bogus") == ["AFP306"]
    assert _codes("route s1 -> s4 status [bogus, nope]") == ["AFP306", "AFP306"]


def test_route_with_some_known_statuses_still_competes():
    assert sorted(_codes("route s1 -> s4 on t status [success, nope]")) == ["AFP205", "AFP306"]
    assert _codes("route s1 -> s4 on t status success") == ["AFP205"]

