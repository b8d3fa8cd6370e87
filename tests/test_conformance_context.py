"""Conformance: context composition (§2) and read_skill (§3)."""
from __future__ import annotations

import pytest

from interp_support import call, make, payloads, tool_texts

ORDER = """
agent g {
  system  = "SYSTEM"
  context = [second, first, empty, cond]
  tools   = [base_tool]
  skills  = [open_one, open_two]
}
steering first  { prompt = "FIRST" }
steering second { prompt = "SECOND" }
steering empty  { prompt = "" }
instruction cond { when = message matches /urgent/ prompt = "URGENT" }
tool base_tool { description = "b" impl = returns("B") }
tool t1 { description = "t1" impl = returns("1") }
tool t2 { description = "t2" impl = returns("2") }
skill open_one { description = "first open" body = "OPEN-ONE" tools = [t1] }
skill open_two { description = "second open" body = "OPEN-TWO" tools = [t2] }
"""


def test_system_prompt_order_and_blank_line_join():
    agent, prov = make(ORDER, ["ok"])
    agent.run("urgent please")
    assert prov.requests[0].system == "SYSTEM\n\nSECOND\n\nFIRST\n\nURGENT"


def test_instruction_when_false_is_skipped_with_its_evidence():
    agent, prov = make(ORDER, ["ok"])
    r = agent.run("calm")
    assert "URGENT" not in prov.requests[0].system
    (composed,) = payloads(r, "context.composed")
    (skipped,) = composed["skipped"]
    assert skipped["name"] == "cond" and skipped["conditions"][0]["passed"] is False


def test_tools_order_baseline_then_skills_then_read_skill():
    agent, prov = make(ORDER, ["ok"])
    agent.run("hi")
    assert [t.name for t in prov.requests[0].tools] == ["base_tool", "t1", "t2", "read_skill"]


def test_pieces_carry_provenance_with_source_span():
    agent, _ = make(ORDER, ["ok"])
    r = agent.run("urgent")
    pieces = payloads(r, "context.composed")[0]["pieces"]
    cond = [p for p in pieces if p["name"] == "cond"][0]
    assert cond["reason"] == "when" and cond["detail"][0]["actual"] == "urgent"
    assert cond["source"][0] == "<text>"


def test_open_skills_activate_in_order_and_stay_active():
    agent, prov = make(ORDER, [call("read_skill", id="open_two"), call("read_skill", id="open_one"),
                               call("t1"), "ok"])
    r = agent.run("hi")
    assert r.outcome == "answered"
    last = prov.requests[-1].system
    assert last.index("OPEN-TWO") < last.index("OPEN-ONE")
    assert "activated for the next iteration" in tool_texts(prov.requests[1])[0]
    assert "OPEN-TWO" not in prov.requests[0].system


def test_read_skill_enum_lists_every_skill_and_no_graph_menu():
    agent, prov = make(ORDER, ["ok"])
    agent.run("hi")
    rs = [t for t in prov.requests[0].tools if t.name == "read_skill"][0]
    assert rs.schema["properties"]["id"]["enum"] == ["open_one", "open_two"]
    assert "  - open_one: first open" in rs.description
    assert "body becomes part of the system prompt" in rs.description


def test_when_with_a_type_mismatch_is_false_not_a_crash():
    spec = ORDER.replace("when = message matches /urgent/", "when = last.result.count > 3")
    agent, prov = make(spec, ["ok"])
    r = agent.run("hi")
    assert r.outcome == "answered"
    assert "URGENT" not in prov.requests[0].system


MISSING = """
agent g {
  system  = "S"
  context = [cond]
  tools   = [t]
}
instruction cond { when = %s prompt = "COND" }
tool t { description = "t" impl = returns({ count: null }) }
"""


@pytest.mark.parametrize("when, reasons", [
    ("last.result.x == 3", ["`last.result.x` does not exist"]),     # a missing field
    ("last.result[0] == 3", ["`last.result[0]` does not exist"]),   # not a list
    ("last.result.count == 3", [None]),                             # present, and null
    ("last.result.count.deep", ["`last.result.count.deep` does not exist"]),  # a bare path
])
def test_a_when_that_fails_on_a_missing_path_is_recorded_with_the_reason(when, reasons):
    """§2: a fact's or instruction's `when` that fails at run time (a type mismatch, a missing
    path) is false and is recorded with the reason. The path reads as null (§6); the evidence
    says it does not exist, which a path holding null does not."""
    agent, _ = make(MISSING % when, [call("t"), "ok"])
    r = agent.run("hi")
    (skipped,) = payloads(r, "context.composed")[1]["skipped"]
    assert [c.get("reason") for c in skipped["conditions"]] == reasons, skipped
    assert all(c["actual"] is None and c["passed"] is False for c in skipped["conditions"])


def test_a_missing_path_under_not_holds_and_says_nothing():
    agent, prov = make(MISSING % "not (last.result.x == 1)", [call("t"), "ok"])
    r = agent.run("hi")
    assert "COND" in prov.requests[1].system
    assert "skipped" not in payloads(r, "context.composed")[1] or not payloads(r, "context.composed")[1]["skipped"]


GRAPH = """
agent g { graph = m skills = [notes] }
skill a { description = "A desc" }
skill b { description = "B desc" }
skill c { description = "C desc" }
skill notes { description = "open notes" body = "NOTES" }
graph m {
  entry a
  route a -> b
  route b -> c
}
"""


def test_read_skill_description_with_a_graph_has_reachable_and_refused_parts():
    agent, prov = make(GRAPH, ["ok"])
    agent.run("hi")
    d = [t for t in prov.requests[0].tools if t.name == "read_skill"][0].description
    reach, refused = d.split("Not reachable from here")
    assert "  - b: B desc" in reach and "  - notes: open notes" in reach
    assert "  - c: C desc" in refused
    assert d.rstrip().endswith("available on the next call.")


def test_read_skill_menu_has_two_parts_the_current_skill_among_the_refused():
    """§3: two parts, reachable then not; the cursor is not reachable from itself (a pick of it is
    refused), so it is listed in the second part, and the first part names reachable skills only."""
    agent, prov = make(GRAPH, ["ok"])
    agent.run("hi")
    d = [t for t in prov.requests[0].tools if t.name == "read_skill"][0].description
    head, reach, refused, tail = d.split("\n\n")
    assert head == "Activate a skill for the next iteration."
    assert reach == "Reachable from here:\n  - b: B desc\n  - notes: open notes"
    assert refused == ("Not reachable from here (read_skill for these will be refused):\n"
                       "  - a: A desc\n  - c: C desc")
    assert tail.startswith("Pass the skill's id.")


def test_refusal_teaches_and_records_and_moves_nothing():
    agent, prov = make(GRAPH, [call("read_skill", id="c"), "ok"])
    r = agent.run("hi")
    text = tool_texts(prov.requests[1])[0]
    assert text == ('read_skill("c") is not reachable from the current skill `a`. '
                    'Reachable skills: b, notes. Pick one of these, or finish.')
    assert payloads(r, "skill.rejected")[0]["allowed"] == ["b", "notes"]
    assert [p["to"] for p in payloads(r, "cursor.moved")] == ["a", "a"]


ORDERED = """
agent x { system = "S" graph = m skills = [notes] }
skill a { description = "A" }
skill notes { description = "N" }
skill b { description = "B" }
skill c { description = "C" }
skill d { description = "D" }
graph m {
  entry a
  entry b when message == "never"
  route a -> d
  route a -> c
}
"""


def test_reachable_skills_are_successors_then_entries_then_open_skills():
    """§4: successors plus the entries, minus the cursor, in declaration order: the routes' order
    for the successors, then the entries' (the original's `reachableSkills('lookup')` is
    `['audit', 'triage']`: its route's target before its entry), not the skills' order; the open
    skills follow. Before: the skills' declaration order, `notes, b, c, d`."""
    agent, prov = make(ORDERED, [call("read_skill", id="a"), "ok"])
    r = agent.run("hi")
    d = [t for t in prov.requests[0].tools if t.name == "read_skill"][0].description
    assert d.split("\n\n")[1] == "Reachable from here:\n  - d: D\n  - c: C\n  - b: B\n  - notes: N"
    assert payloads(r, "skill.rejected")[0]["allowed"] == ["d", "c", "b", "notes"]
    assert tool_texts(prov.requests[1])[0].endswith("Reachable skills: d, c, b, notes. Pick one of these, or finish.")


def test_the_original_s_reachable_order():
    spec = """
    agent ag { graph = g }
    tool probe { description = "P" impl = returns("ok") }
    skill triage { description = "use triage" tools = [probe] }
    skill lookup { description = "use lookup" }
    skill audit { description = "use audit" }
    graph g { entry triage  route triage -> lookup on probe  route lookup -> audit when result matches /ok/ }
    """
    agent, _ = make(spec, [call("probe"), call("read_skill", id="lookup"), "done"])
    r = agent.run("hi")
    assert payloads(r, "skill.rejected")[0]["allowed"] == ["audit", "triage"]


def test_accepted_pick_body_joins_from_the_next_iteration():
    agent, prov = make(GRAPH, [call("read_skill", id="notes"), "ok"])
    agent.run("hi")
    assert "NOTES" not in prov.requests[0].system and "NOTES" in prov.requests[1].system
    assert tool_texts(prov.requests[1])[0] == "Skill 'notes' activated for the next iteration."


def test_open_skill_pick_never_moves_the_cursor():
    agent, _ = make(GRAPH, [call("read_skill", id="notes"), "ok"])
    r = agent.run("hi")
    assert [p["cause"] for p in payloads(r, "cursor.moved")] == ["entry", "stay"]


SCOPED = """
agent g { skills = [s] tools = [base] context = [after_t, while_s, last_ok] %s }
tool base { description = "base" impl = returns("B") }
tool t { description = "t" impl = returns({ ok: true }) }
skill s { description = "S" tools = [t] }
fact after_t { when = returned(t) == true data = "T-RAN" }
fact while_s { when = active(s) == true data = "S-ACTIVE" }
instruction last_ok { when = last.tool == "t" and last.result.ok == true prompt = "LAST-OK" }
"""


def test_tool_scope_active_offers_skill_tools_only_while_active():
    agent, prov = make(SCOPED % 'tool_scope = "active"',
                       [call("read_skill", id="s"), call("t"), "ok"])
    agent.run("hi")
    assert [t.name for t in prov.requests[0].tools] == ["base", "read_skill"]
    assert [t.name for t in prov.requests[1].tools] == ["base", "t", "read_skill"]


def test_tool_scope_always_offers_them_from_the_start():
    agent, prov = make(SCOPED % "", ["ok"])
    agent.run("hi")
    assert [t.name for t in prov.requests[0].tools] == ["base", "t", "read_skill"]


def test_last_root_in_context_when():
    agent, prov = make(SCOPED % "", [call("read_skill", id="s"), call("t"), "ok"])
    agent.run("hi")
    first, second, third = (r.system for r in prov.requests)
    assert "LAST-OK" in third and "LAST-OK" not in second


def test_returned_and_active_calls_in_context_when():
    agent, prov = make(SCOPED % "", [call("read_skill", id="s"), call("t"), "ok"])
    agent.run("hi")
    first, second, third = (r.system for r in prov.requests)
    assert "S-ACTIVE" not in first and "S-ACTIVE" in second
    assert "T-RAN" not in second and "T-RAN" in third


def test_returned_and_active_calls_with_hand_built_ir():
    from afp_dsl import ir
    from afp_dsl.effects import Effects, counter_ids
    from interp_support import Recording

    def cond(func, name):
        return ir.Compare(op="==", left=ir.Call(func=func, arg=ir.Ref(name=name)),
                          right=ir.Lit(value=True))
    decls = (
        ir.Agent(name="g", skills=(ir.Ref(name="s"),),
                 context=(ir.Ref(name="after_t"), ir.Ref(name="while_s"))),
        ir.Tool(name="t", description="t", impl=ir.ReturnsImpl(value="ok")),
        ir.Skill(name="s", description="S", tools=(ir.Ref(name="t"),)),
        ir.Fact(name="after_t", data=ir.Text(value="T-RAN"), when=cond("returned", "t")),
        ir.Fact(name="while_s", data=ir.Text(value="S-ACTIVE"), when=cond("active", "s")),
    )
    program = ir.Program(root="m", modules=(ir.Module(key="m", decls=decls),))
    prov = Recording([call("read_skill", id="s"), call("t"), "ok"])
    from afp_dsl.runner import Agent
    Agent(program, provider=prov, effects=Effects(run_ids=counter_ids("h"))).run("hi")
    first, second, third = (r.system for r in prov.requests)
    assert "S-ACTIVE" not in first and "S-ACTIVE" in second
    assert "T-RAN" not in second and "T-RAN" in third


def test_graph_scope_tools_scopes_the_graph_skills():
    spec = """
    agent g { graph = m }
    tool t1 { description = "t1" impl = returns("1") }
    tool t2 { description = "t2" impl = returns("2") }
    skill a { description = "A" tools = [t1] }
    skill b { description = "B" tools = [t2] }
    graph m {
      scope_tools = true
      entry a when message matches /hi/
      route a -> b on t1
    }
    """
    agent, prov = make(spec, [call("t1"), "ok"])
    agent.run("hi")
    assert [t.name for t in prov.requests[0].tools] == ["t1", "read_skill"]
    assert [t.name for t in prov.requests[1].tools] == ["t2", "read_skill"]


def test_a_skill_piece_names_the_event_that_moved_the_cursor_there():
    """§2: a piece's provenance is `route` (or `model-pick`, `entry`) *with the event that moved
    the cursor*: the piece itself names that `cursor.moved`."""
    spec = ('agent a { graph = g }\ntool t1 { description = "t1" impl = returns("1") }\n'
            'skill s1 { description = "one" body = "S1" tools = [t1] }\n'
            'skill s2 { description = "two" body = "S2" }\n'
            'graph g { entry s1 when message mentions "go"  route s1 -> s2 on t1 }')
    agent, _ = make(spec, [call("t1"), "done"])
    r = agent.run("go")
    moved = {e.payload["to"]: e.id for e in r.trace if e.kind == "cursor.moved"}
    first, second = payloads(r, "context.composed")
    assert [(p["name"], p["reason"], p.get("event")) for p in first["pieces"]] == [
        ("s1", "entry", moved["s1"])]
    assert [(p["name"], p["reason"], p.get("event")) for p in second["pieces"]] == [
        ("s2", "route", moved["s2"])]


MENU_EDGES = '''
agent g { skills = [blank, multi, plain] }
skill blank { description = "" body = "B" }
skill multi { description = """Refunds and charges.

Not reachable from here: a line of its own.""" body = "M" }
skill plain { description = "Plain." body = "P" }
'''


def test_menu_lines_of_an_empty_or_multi_line_description():
    """An empty description read `  - blank: ` (a dangling colon); a later line of a
    description started at the margin, after a blank line, where it read as a part of the menu."""
    agent, prov = make(MENU_EDGES, ["ok"])
    agent.run("hi")
    d = [t for t in prov.requests[0].tools if t.name == "read_skill"][0].description
    assert d.split("\n\n")[0] == (
        "Activate a skill for the next iteration. Available skills:\n"
        "  - blank\n"
        "  - multi: Refunds and charges.\n"
        "    Not reachable from here: a line of its own.\n"
        "  - plain: Plain.")


def test_a_piece_of_only_blanks_is_dropped_as_empty():
    """A prompt of spaces and newlines was joined in, leaving blank lines of spaces in the
    system prompt; it is empty, and dropped as the empty ones are."""
    spec = '''
    agent g { system = "SYS" context = [blank, real] }
    steering blank { prompt = "  \\n  " }
    steering real { prompt = "REAL" }
    '''
    agent, prov = make(spec, ["ok"])
    agent.run("hi")
    assert prov.requests[0].system == "SYS\n\nREAL"


def test_returned_holds_in_the_iteration_after_the_batch_only():
    """The original's on-tool-return: ANY result of the previous iteration's batch, not "ever"."""
    spec = """
    agent g { tools = [t, u] context = [after_t] }
    tool t { description = "t" impl = returns("T") }
    tool u { description = "u" impl = returns("U") }
    instruction after_t { when = returned(t) prompt = "AFTER T" }
    """
    agent, prov = make(spec, [[("t", {}), ("u", {})], call("u"), call("u"), "done"])
    agent.run("hi")
    assert ["AFTER T" in q.system for q in prov.requests] == [False, True, False, False]
