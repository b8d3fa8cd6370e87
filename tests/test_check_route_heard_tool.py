"""language §5.4/§7: a route without `on` hears the results of its source skill's tools; when the
skill has one tool, the guard's `result` and `args` are that tool's, checked against its schemas
(AFP304/AFP305) as with `on TOOL`."""
from __future__ import annotations

import pytest

import afp_dsl

TOOLS = ('tool probe { description = "p" input { port: string } '
         'output { crc: integer(min: 0), state: "up" | "down" } }\n'
         'tool fix { description = "f" input { port: string } }\n')


def spec_of(tools: str, route: str) -> str:
    return (TOOLS + f'skill a {{ description = "a" tools = [{tools}] }}\n'
            'skill b { description = "b" tools = [fix] }\nagent ag { graph = g }\n'
            f'graph g {{\n  entry a\n  route a -> b {route}\n}}\n')


@pytest.mark.parametrize("route, code", [
    ("status success when result.crcc > 1", "AFP304"),
    ('when result.crc == "x"', "AFP305"),
    ('status success when args.prt == "x"', "AFP304"),
])
def test_a_route_without_on_out_of_a_one_tool_skill_is_typed_by_that_tool(route, code) -> None:
    spec = spec_of("probe", route)
    assert [d.code for d in afp_dsl.check(spec) if d.severity.value == "error"] == [code]
    typed = spec_of("probe", "on probe " + route)  # (as `on probe` says)
    assert [d.code for d in afp_dsl.check(typed) if d.severity.value == "error"] == [code]


def test_a_skill_with_two_tools_leaves_the_guard_untyped() -> None:
    spec = spec_of("probe, fix", "when result.crcc > 1")
    assert [d.code for d in afp_dsl.check(spec) if d.severity.value == "error"] == []


@pytest.mark.parametrize("route, never", [
    ("on probe status success when result.crc < -1", True),
    ("on probe status success when result.crc >= 0", False),
    ("on probe when result.crc < -1", False),         # (any status: the result may be an error)
    ("on probe status success when result.crc < 5", False),
])
def test_a_number_fields_range_is_a_fact_of_the_guard(route: str, never: bool) -> None:
    """language §7, unsatisfiable guards: `integer(min: 0)` makes `< -1` impossible."""
    found = [d for d in afp_dsl.check(spec_of("probe", route)) if d.code in ("AFP305", "AFP208")]
    assert bool(found) is never, found
    if never:
        assert "`result.crc >= 0` (output schema of `probe`)" in found[0].notes


def test_a_route_on_a_built_in_is_not_an_unknown_tool():
    """`route p -> q on read_skill` was "unknown tool `read_skill`" (AFP101), though
    `before read_skill` is accepted: the built-in exists, but no route can wait for it."""
    import afp_dsl
    text = ('agent a { graph = g }\ntool t { description = "t" }\n'
            'skill p { description = "p" tools = [t] }\nskill q { description = "q" }\n'
            'graph g {\n  entry p\n  route p -> q on read_skill\n  route p -> q on skip_step\n}\n')
    found = [(d.code, d.message) for d in afp_dsl.check(text)]
    assert found == [("AFP209", "a route cannot wait for the built-in `read_skill`"),
                     ("AFP209", "a route cannot wait for the built-in `skip_step`")], found
