"""Conformance, third pass (language.md §4, §7; tooling.md §3): names, cascades, test scripts and
the place of a diagnostic in a file whose text is unknown.

Each test pins a deviation a checker audit found and failed before its fix, except the two
marked as guards (they keep a fix from overreaching).
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

import afp_dsl
from afp_dsl import cli


def diags(text: str):
    return afp_dsl.check(textwrap.dedent(text))


def codes(text: str) -> list[str]:
    return [d.code for d in diags(text)]


# ---------------------------------------------------------------- one root cause, one diagnostic
def test_a_misspelt_tool_of_the_agent_does_not_also_make_its_policy_block_dead():
    spec = """
    agent a { tools = [lookp] policies = [p] }
    tool lookup { description = "x" }
    policy p { before lookup { deny when true because "x" } }
    """
    assert codes(spec) == ["AFP101"]


def test_a_policy_block_for_a_tool_no_agent_has_is_still_reported():
    """A guard: with every name resolved, the dead block is still a warning."""
    spec = """
    agent a { tools = [lookup2] policies = [p] }
    tool lookup { description = "x" }
    tool lookup2 { description = "x" }
    policy p { before lookup { deny when true because "x" } }
    """
    assert codes(spec) == ["AFP401"]


# ---------------------------------------------------------------- §4: one namespace per module
def test_an_import_alias_and_a_declaration_cannot_share_a_name():
    spec = """
    import "std/redact" as r
    fact r { data = "x" }
    agent a { redact = [r.secrets] context = [r] }
    """
    found = diags(spec)
    assert [d.code for d in found] == ["AFP103"]
    assert "both an import alias and a declaration" in found[0].message


# ---------------------------------------------------------------- tests whose agent is unknown
def test_a_misspelt_test_agent_does_not_hide_names_declared_nowhere():
    spec = """
    agent support { tools = [lookup] }
    tool lookup { description = "x" }
    skill refunds { description = "x" }
    test t1 {
      agent = suport
      user "x"
      model calls lokup {}
      tool lokup2 returns 1
      model says "y"
      expect cursor refnds
      expect called lookpu 1
    }
    """
    found = diags(spec)
    assert [d.code for d in found] == ["AFP101", "AFP404", "AFP404", "AFP101", "AFP404"]
    assert [d.help for d in found[1:]] == ["did you mean `lookup`?"] * 2 + [
        "did you mean `refunds`?", "did you mean `lookup`?"]


def test_names_declared_somewhere_are_not_claimed_when_the_agent_is_unknown():
    """A guard: whether the unknown agent has `other` cannot be decided, so it is not claimed."""
    spec = """
    agent support { tools = [lookup] }
    tool lookup { description = "x" }
    tool other { description = "x" }
    test t1 { agent = suport user "x" model calls other {} model says "y" }
    """
    assert codes(spec) == ["AFP101"]


def test_a_misspelt_event_kind_in_expect_trace_is_caught_by_the_checker():
    spec = """
    agent a { tools = [t] }
    tool t { description = "x" }
    test tt { user "x" model says "y" expect trace tool.caled }
    """
    found = diags(spec)
    assert [d.code for d in found] == ["AFP106"]
    assert found[0].help == "did you mean `tool.called`?"


def test_a_misspelt_outcome_gets_a_did_you_mean():
    spec = """
    agent a { tools = [t] }
    tool t { description = "x" }
    test tt { user "x" model says "y" expect outcome answerd }
    """
    (found,) = diags(spec)
    assert found.code == "AFP106" and found.help.startswith("did you mean `answered`?")


# ---------------------------------------------------------------- §3: short and JSON places
def test_an_unreadable_file_is_reported_at_line_1_column_1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (the path is shown as given, whatever the test's own cwd)
    bad = Path("x.afp")
    bad.write_bytes(b"\xff\xfe agent")
    runner = CliRunner()
    short = runner.invoke(cli.main, ["check", str(bad), "--format", "short"])
    assert short.exit_code == 1
    assert short.output.startswith(f"{bad}:1:1: error[AFP006]")
    doc = json.loads(runner.invoke(cli.main, ["check", str(bad), "--format", "json"]).stdout)
    assert (doc[0]["line"], doc[0]["column"], doc[0]["end_line"], doc[0]["end_column"]) == (1, 1, 1, 1)
    human = runner.invoke(cli.main, ["check", str(bad)])
    assert f"--> {bad}:1:1" in human.output and "internal error" not in human.output


# ---------------------------------------------------------------- §7: rules that never match
def test_a_rule_covered_by_earlier_rules_of_its_block_can_never_match():
    spec = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "x" input { n: integer } }
    policy p { before t {
      deny when args.n > 1 because "a"
      deny when args.n > 5 because "covered"
      allow when args.n == 0
    } }
    """
    found = diags(spec)
    assert [(d.code, d.primary.span.start) for d in found] == [
        ("AFP401", textwrap.dedent(spec).index("deny when args.n > 5"))]


def test_a_rule_that_can_still_decide_is_not_claimed():
    """A guard: `n > 1` does not cover `n < 0`, nor `n == 0` once `n > 1` and `n < 0` are out."""
    spec = """
    agent a { tools = [t] policies = [p] }
    tool t { description = "x" input { n: integer } }
    policy p { before t {
      deny when args.n > 1 because "a"
      deny when args.n < 0 because "b"
      allow when args.n == 0
    } }
    """
    assert codes(spec) == []


def test_a_skill_of_an_imported_graph_is_suggested_with_its_alias(tmp_path):
    (tmp_path / "glib.afp").write_text(
        'skill s1 { description = "one" }\nskill s2 { description = "two" }\n'
        'graph g { entry s1 route s1 -> s2 }\n', encoding="utf-8")
    main = tmp_path / "main.afp"
    main.write_text('import "./glib.afp" as lib\nagent a { graph = lib.g }\n'
                    'test t { agent = a user "hi" model says "ok" expect cursor s2 }\n', encoding="utf-8")
    found = [d for d in afp_dsl.check(str(main)) if d.code == "AFP101"]
    assert [d.help for d in found] == ["did you mean `lib.s2`?"]


# ---------------------------------------------------------------- §7: routes that never fire
COVERED = """
agent a {{ graph = g }}
tool t {{ description = "x" output {{ v: integer }} }}
skill s1 {{ description = "x" tools = [t] }}
skill s2 {{ description = "x" }}
skill s3 {{ description = "x" }}
graph g {{
  entry s1
  route s1 -> s2 on t when result.v > 1
  route s1 -> s3 on t when {later}
}}
"""


def test_a_guarded_route_covered_by_an_earlier_guarded_route_never_fires():
    found = diags(COVERED.format(later="result.v > 5"))
    assert [d.code for d in found] == ["AFP205"]
    assert "never fires" in found[0].message


def test_guards_that_only_overlap_are_still_an_overlap():
    """A guard: `v > 1` does not cover `v > 5 or v < 0`, so order decides (AFP210)."""
    found = diags(COVERED.format(later="result.v > 5 or result.v < 0"))
    assert [d.code for d in found] == ["AFP210"]


# ---------------------------------------------------------------- §7: `in` lists
INSTRUCTION = """
agent a {{ tools = [t] context = [i] }}
tool t {{ description = "x" }}
instruction i {{ prompt = "p" when = {w} }}
"""


def test_an_in_list_item_of_a_type_the_key_cannot_have_is_reported_item_by_item():
    found = diags(INSTRUCTION.format(w='iteration in [1, "a"]'))
    assert [(d.code, d.message) for d in found] == [("AFP305", '`iteration` can never be `"a"`')]
    found = diags(INSTRUCTION.format(w='message in ["x", 3]'))
    assert [(d.code, d.message) for d in found] == [("AFP305", "`message` can never be `3`")]


def test_an_in_list_of_possible_items_is_not_claimed():
    """A guard: every item can be the value, and `not in` claims nothing."""
    assert codes(INSTRUCTION.format(w="iteration in [1, 2]")) == []
    assert codes(INSTRUCTION.format(w='iteration not in ["a"]')) == []


# ---------------------------------------------------------------- schema blocks
def test_a_repeated_rest_marker_in_a_schema_block_is_reported():
    spec = 'tool t { description = "x" input { a: string, ..., ... } }'
    found = diags(spec)
    assert [d.code for d in found] == ["AFP301"]
    assert found[0].primary.span.start == spec.rindex("...")
    assert codes('tool t { description = "x" input { ..., a: { b: string, ... } } }') == []


# ---------------------------------------------------------------- wrong kinds in a test without an agent
_WRONG_KINDS = """
agent a { tools = [t] }
agent b { tools = [t] }
tool t { description = "x" }
skill s { description = "x" }
test tt { user "x" model calls s {} tool s returns 1 expect called s 1 expect cursor t }
"""


def test_wrong_kinds_are_reported_when_the_tests_agent_cannot_be_decided():
    """Before: with two agents and none named, `model calls s` (a skill), `tool s returns`,
    `expect called s` and `expect cursor t` (a tool) were accepted silently, although whether a
    name is a skill or a tool does not depend on the agent."""
    found = diags(_WRONG_KINDS)
    assert [d.code for d in found] == ["AFP111", "AFP404", "AFP404", "AFP404", "AFP102"]
    assert [d.message for d in found[1:4]] == ["`s` is a skill, not a tool"] * 3
    assert found[4].message == "`t` is a tool, but `expect cursor` needs a skill"


def test_wrong_kinds_are_reported_when_the_tests_agent_is_not_an_agent():
    spec = ('agent a { tools = [t] }\ntool t { description = "x" }\n'
            'test tt { agent = t user "x" expect cursor t }\n')
    assert codes(spec) == ["AFP102", "AFP102"]


def test_qualified_names_stand_in_statements_at_check_and_at_run_time(tmp_path):
    """A guard (the docs said otherwise, the code was right): language.md §3, `alias.name`
    wherever a reference stands: a route's skill and `on` tool, a step, a policy block's tool;
    each acts at run time on the bare tool name."""
    (tmp_path / "lib.afp").write_text(
        'tool lt { description = "lt" input { q: string } }\n'
        'skill ls { description = "lib skill" body = "LIB BODY" }\n', encoding="utf-8")
    main = tmp_path / "main.afp"
    main.write_text(textwrap.dedent('''\
        import "lib.afp" as lib
        agent g { graph = m tools = [lib.lt] policies = [p] }
        skill s { description = "s" tools = [lib.lt] steps { lib.lt "run it" } }
        graph m { entry s  route s -> lib.ls on lib.lt }
        policy p { before lib.lt { deny when args.q == "no" because "nope" } }
        '''), encoding="utf-8")
    assert [d.code for d in afp_dsl.check(main)] == []
    script = [[("lt", {"q": "no"})], [("lt", {"q": "yes"})], "done"]
    r = afp_dsl.load(main).agent(provider=afp_dsl.providers.mock(script),
                                 tools={"lt": lambda q: "R"}).run("go")
    by = [(e.kind, e.payload) for e in r.trace]
    assert [p["outcome"] for k, p in by if k == "policy.decided"] == ["deny", "allow"]
    assert [p["to"] for k, p in by if k == "cursor.moved"] == ["s", "ls", "ls"]
    assert any(k == "step.advanced" for k, _ in by)


# ---------------------------------------------------------------- §2: the names the model sees
LIB = ('tool lt { description = "lib\'s" impl = returns("lib") }\n'
       'skill ls { description = "lib skill" body = "b" tools = [lt] }\n'
       'skill lone { description = "lib lone" body = "b" }\n')


def offered(tmp_path, main: str) -> list:
    (tmp_path / "lib.afp").write_text(LIB, encoding="utf-8")
    path = tmp_path / "main.afp"
    path.write_text('import "./lib.afp" as lib\n' + textwrap.dedent(main), encoding="utf-8")
    return afp_dsl.check(path)


def test_two_tools_one_agent_offers_under_one_bare_name_clash(tmp_path):
    found = offered(tmp_path, """
    tool lt { description = "mine" impl = returns("mine") }
    agent a { tools = [lt, lib.lt] }
    """)
    assert [d.code for d in found] == ["AFP103"]
    d = found[0]
    assert d.message == "agent `a` offers two different tools named `lt`"
    primary = [lb for lb in d.labels if lb.primary]
    assert len(primary) == 1 and primary[0].span.start > d.labels[1].span.start
    assert not d.labels[1].primary
    assert d.help.startswith("the model sees both as `lt`") and "rename one of the tools" in d.help


def test_two_skills_one_agent_offers_under_one_id_clash(tmp_path):
    found = offered(tmp_path, """
    skill ls { description = "my skill" body = "b" }
    agent a { skills = [ls, lib.ls] }
    """)
    assert [(d.code, d.message) for d in found] == [
        ("AFP103", "agent `a` offers two different skills with the id `ls`")]


def test_a_tool_of_a_skill_clashes_with_a_baseline_tool(tmp_path):
    """`lib.ls` offers lib's `lt`; the agent's own `lt` is another tool: both are written `lt`,
    so the diagnostic also points at the two declarations."""
    found = offered(tmp_path, """
    tool lt { description = "mine" impl = returns("mine") }
    agent a { tools = [lt] skills = [lib.ls] }
    """)
    assert [d.code for d in found] == ["AFP103"]
    assert len(found[0].labels) == 4


def test_a_graph_naming_two_skills_of_one_id_clashes(tmp_path):
    found = offered(tmp_path, """
    skill lone { description = "mine" body = "b" }
    graph g { entry lone route lone -> lib.lone on t }
    tool t { description = "t" }
    skill unused { description = "x" tools = [t] }
    agent a { graph = g tools = [t] }
    agent b { graph = g tools = [t] }
    """)
    assert [d.code for d in found if d.code == "AFP103"] == ["AFP103"]  # once for both agents


def test_one_declaration_reached_twice_and_a_tool_named_like_a_skill_are_no_clash(tmp_path):
    """A guard: the same tool in `tools` and in a skill's `tools`, and a skill `lt` beside the
    tool `lib.lt` (tool names and skill ids are separate lists for the model)."""
    found = offered(tmp_path, """
    skill lt { description = "a skill named like lib's tool" body = "b" }
    agent a { tools = [lib.lt] skills = [lib.ls, lt] }
    """)
    assert [d.code for d in found] == []


def test_a_tool_named_like_a_built_in_the_agent_offers_clashes():
    spec = """
    tool read_skill { description = "mine" }
    tool skip_step { description = "mine" }
    skill s { description = "s" tools = [skip_step] steps { skip_step "x" } }
    agent a { tools = [read_skill] skills = [s] }
    """
    found = diags(spec)
    assert sorted(d.message for d in found) == [
        "tool `read_skill` of agent `a` has the name of a built-in tool",
        "tool `skip_step` of agent `a` has the name of a built-in tool"]
    assert {d.code for d in found} == {"AFP103"}


def test_a_tool_named_read_skill_is_fine_for_an_agent_without_skills():
    """A guard: the built-in is offered only to an agent with skills."""
    assert codes('tool read_skill { description = "x" }\nagent a { tools = [read_skill] }\n') == []


# ---------------------------------------------------------------- a name declared nowhere, once
def _where(d) -> list[tuple[str, bool]]:
    return [(lab.message, lab.primary) for lab in d.labels]


def test_a_name_declared_nowhere_is_one_diagnostic_with_every_use_labelled():
    """tooling.md §3: one root cause, one diagnostic. A misspelt skill used by an entry and two
    routes is one AFP101 at its first use; the other uses are labels on it."""
    found = diags("""
    skill s { description = "x" }
    graph g {
      entry sx
      route sx -> s
      route s -> sx
    }
    agent a { graph = g }
    """)
    assert [d.code for d in found] == ["AFP101"]
    assert _where(found[0]) == [("nothing named `sx` is declared", True),
                                ("also named here", False), ("also named here", False)]
    assert found[0].help == "did you mean `s`?"


def test_a_tool_declared_nowhere_is_not_reported_again_by_the_policy_or_the_tests():
    found = diags("""
    agent a { tools = [lookp] policies = [p] }
    policy p { before lookp { deny when args.x == 1 because "n" } }
    test t {
      user "hi"
      model calls lookp { x: 1 }
      model says "ok"
      expect called lookp 1
    }
    """)
    assert [d.code for d in found] == ["AFP101"]
    assert _where(found[0])[1:] == [("also named here", False)]


def test_a_tool_only_the_tests_name_is_one_diagnostic_across_tests():
    found = diags("""
    tool lookup { description = "d" }
    agent a { tools = [lookup] }
    test t1 {
      user "hi"
      model calls lookp {}
      model says "ok"
      expect called lookp 1
    }
    test t2 {
      user "hi"
      model calls lookp {}
      model says "ok"
    }
    """)
    assert [d.code for d in found] == ["AFP404"]
    assert [m for m, _ in _where(found[0])] == ["not a tool of the agent"] + ["also named here"] * 2


def test_different_names_and_an_unknown_alias_are_each_one_diagnostic():
    found = diags("""
    agent a { tools = [t1, t2, x.t, x.u, t1] }
    """)
    assert sorted(d.message for d in found if d.code == "AFP101") == [
        "unknown module alias `x`", "unknown tool `t1`", "unknown tool `t2`"]
    alias = next(d for d in found if d.message == "unknown module alias `x`")
    assert _where(alias)[1:] == [("also named here", False)]


def test_a_tool_of_a_missing_import_is_not_also_unknown_to_the_test(tmp_path):
    """The test writes `lookup`, the name the model sees for the agent's `lib.lookup`; the
    import that failed (AFP107) is the one root cause, as when the imported file does not parse."""
    spec = tmp_path / "main.afp"
    spec.write_text('import "./nope.afp" as lib\nagent a { tools = [lib.lookup] }\n'
                    'test tt {\n  agent = a user "x"\n  model calls lookup {}\n'
                    '  tool lookup returns 1\n  model says "y"\n  expect called lookup 1\n}\n')
    assert [d.code for d in afp_dsl.check(spec)] == ["AFP107"]


def test_a_tool_through_an_unknown_alias_is_not_also_unknown_to_the_test():
    found = diags("""
    agent a { tools = [lb.lookup] }
    test tt { agent = a user "x" model calls lookup {} model says "y" }
    """)
    assert [(d.code, d.message) for d in found] == [("AFP101", "unknown module alias `lb`")]


def test_a_name_the_agent_does_not_list_at_all_is_still_unknown_to_the_test(tmp_path):
    # (guard) only the names the agent's unresolved references give are excused
    spec = tmp_path / "main.afp"
    spec.write_text('import "./nope.afp" as lib\nagent a { tools = [lib.lookup] }\n'
                    'test tt { agent = a user "x" model calls zzz {} model says "y" }\n')
    assert [(d.code, d.message) for d in afp_dsl.check(spec)] == [
        ("AFP107", "imported module `./nope.afp` not found"), ("AFP404", "unknown tool `zzz`")]
