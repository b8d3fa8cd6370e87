"""AFP209 is an error only when provable (language.md §7): a route `on p` where `p` is a tool of
a persistent base — an unconditional entry, active every iteration beside the cursor
(semantics §4), so its tools are offered whatever skill is current — fires when `p` returns
while the route's source is current. It was an error ("which `a` cannot call") although the
route fires at run time (the scripted test below passes); now such a tool counts as a baseline
tool does."""
from __future__ import annotations

import afp_dsl
from afp_dsl import ir
from afp_dsl.api import Program, analyse
from afp_dsl.testing import run_test

SPEC = '''agent z { graph = g }
tool p { description = "p" }
tool t { description = "t" }
tool q { description = "q" }
skill base { description = "base" tools = [p] }
skill a { description = "a" tools = [t] }
skill b { description = "b" }
skill c { description = "c" tools = [q] }
graph g {
  SCOPE
  entry a when message mentions "go"
  entry base
  route a -> b on p
  route b -> c on t
}
test hop {
  user "go"
  model calls p {}
  tool p returns "ok"
  model says "done"
  expect route a -> b
  expect cursor b
}
'''


def _codes(spec: str) -> list[tuple[str, str]]:
    return [(d.code, d.severity.name) for d in afp_dsl.check(spec)]


def test_a_route_on_a_persistent_base_tool_is_not_afp209() -> None:
    for scope in ("", "scope_tools = true"):
        spec = SPEC.replace("SCOPE", scope)
        found = [c for c in _codes(spec) if c[0] == "AFP209"]
        # `b -> c on t`: `t` is a tool of `a`, a conditional entry: not a base, still reported
        assert found == [("AFP209", "ERROR")], found
        (d,) = [d for d in afp_dsl.check(spec) if d.code == "AFP209"]
        assert "route `b -> c` waits for `t`" in d.message


def test_the_route_fires_at_run_time() -> None:
    program, diags = analyse(SPEC.replace("SCOPE", "scope_tools = true")
                             .replace("  route b -> c on t\n", ""))
    assert program is not None and not [d for d in diags if d.is_error], diags
    test = next(d for d in program.root_module.decls if isinstance(d, ir.Test))
    result = run_test(Program(program), test, "spec.afp")
    assert result.passed, result


def test_a_misspelt_base_tool_decides_nothing() -> None:
    spec = SPEC.replace("SCOPE", "").replace("tools = [p]", "tools = [pp]")
    assert [c for c, _ in _codes(spec) if c in ("AFP101", "AFP209")] == ["AFP101"]


OTHER = '''agent z { graph = g }
tool t { description = "t" }
tool u { description = "u" }
skill a { description = "a" tools = [u] }
skill b { description = "b" tools = [t] }
graph g {
  SCOPE
  entry a
  route a -> b on t
}
'''


def test_a_tool_offered_through_another_skill_is_not_said_never_to_return() -> None:
    """With `tool_scope = "always"` (the default) `t`, a tool of `b`, is offered while `a` is
    current, so the route can fire: AFP209 keeps its severity but no longer says `a` "cannot
    call" it; a note names the skill that has it. Under `scope_tools = true` it cannot."""
    (d,) = [d for d in afp_dsl.check(OTHER.replace("SCOPE", "")) if d.code == "AFP209"]
    assert d.message == "route `a -> b` waits for `t`, which is not a tool of `a`", d.message
    assert d.labels[0].message == "not a tool of `a`"
    assert any(n.startswith("`t` is a tool of `b`: with `tool_scope = \"always\"`") and
               "the route fires if the model calls it there" in n for n in d.notes), d.notes
    (d,) = [d for d in afp_dsl.check(OTHER.replace("SCOPE", "scope_tools = true"))
            if d.code == "AFP209"]
    assert d.message == "route `a -> b` waits for `t`, which `a` cannot call", d.message
    assert not any("is a tool of `b`" in n for n in d.notes), d.notes


OPEN = '''agent z { graph = g skills = [o] tool_scope = "active" }
tool p { description = "p" }
tool t { description = "t" }
skill o { description = "open" tools = [p] }
skill a { description = "a" tools = [t] }
skill b { description = "b" }
graph g {
  entry a
  route a -> b on p
}
test hop {
  user "go"
  model calls read_skill { id: "o" }
  model calls p {}
  tool p returns "ok"
  model says "done"
  expect route a -> b
  expect cursor b
}
'''


def test_a_route_on_an_open_skills_tool_is_not_afp209() -> None:
    """An open skill (`skills`) is loaded by `read_skill` from any skill and stays active, so
    its tool `p` can return while `a` is current, even with `tool_scope = "active"`: the route
    fires (the test passes), so AFP209 "`a` cannot call `p`" was a false error."""
    assert [d.code for d in afp_dsl.check(OPEN)] == []
    program, _ = analyse(OPEN)
    test = next(d for d in program.root_module.decls if isinstance(d, ir.Test))
    assert run_test(Program(program), test, "spec.afp").passed
    # without the open skill, `p` is offered nowhere: still an error
    closed = OPEN.replace(" skills = [o]", "").replace('  model calls read_skill { id: "o" }\n', "")
    found = [(d.code, d.severity.name) for d in afp_dsl.check(closed) if d.code != "AFP404"]
    assert ("AFP209", "ERROR") in found, found


def test_a_route_on_another_skills_tool_under_always_is_not_said_never_to_fire() -> None:
    """`--explain-reach` called the route "never fires" although, with every skill's tools
    offered, it fires when the model calls the tool while its source is current."""
    from afp_dsl.analysis import Analysis
    from afp_dsl.checks.reach import reach_report
    for scope, dead in (("", False), ("scope_tools = true", True)):
        program, _ = analyse(OTHER.replace("SCOPE", scope))
        report = reach_report(Analysis(program), "b")
        assert ("never fires" in report) is dead, report
