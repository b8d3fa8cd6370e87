"""Audit regression: the "did you mean" of `expect route` (AFP406) and `expect cursor`
(AFP101/AFP102) names a skill as the test's module must write it. A skill of an imported graph
written without its alias (`expect route s1 -> s2`) was answered "did you mean `s1`?", the very
name that failed; it is now `lib.s1`.
"""
from __future__ import annotations

import afp_dsl

LIB = ('tool lt { description = "d" }\n'
       'skill first { description = "d" tools = [lt] }\n'
       'skill second { description = "d" }\n'
       'graph g { entry first route first -> second on lt }\n')


def _check(tmp_path, lines: str) -> list:
    (tmp_path / "lib.afp").write_text(LIB, encoding="utf-8")
    main = tmp_path / "main.afp"
    main.write_text('import "./lib.afp" as lib\nagent a { graph = lib.g }\n'
                    f'test x {{ user "hi" model says "k" {lines} }}\n', encoding="utf-8")
    return afp_dsl.check(main)


def test_expect_route_without_the_alias_suggests_the_alias(tmp_path):
    found = _check(tmp_path, "expect route first -> lib.second")
    assert [(d.code, d.help) for d in found] == [("AFP406", "did you mean `lib.first`?")]


def test_expect_route_misspelt_suggests_the_written_form(tmp_path):
    found = _check(tmp_path, "expect route lib.first -> lib.secnd")
    assert [(d.code, d.help) for d in found] == [("AFP406", "did you mean `lib.second`?")]
    found = _check(tmp_path, "expect route lib.first -> secnd")
    assert [(d.code, d.help) for d in found] == [("AFP406", "did you mean `lib.second`?")]


def test_expect_cursor_of_another_kind_suggests_the_written_form(tmp_path):
    found = _check(tmp_path, "expect cursor second")
    assert [(d.code, d.help) for d in found] == [("AFP101", "did you mean `lib.second`?")]
    found = _check(tmp_path, "expect cursor a")
    assert [(d.code, d.help) for d in found] == [("AFP102", None)]
