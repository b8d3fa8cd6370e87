"""Conformance: the graph cursor (semantics §4) — cold start, base, precedence, conflicts."""
from __future__ import annotations

from interp_support import call, make, moves, payloads

BATCH = """
agent g {
  graph = m
}
tool alpha { description = "alpha" impl = returns("A") }
tool beta  { description = "beta"  impl = returns("B") }
tool probe { description = "probe" impl = returns({ level: 7 }) }
skill a { description = "A" body = "BODY-A" tools = [alpha, beta, probe] }
skill b { description = "B" body = "BODY-B" }
skill c { description = "C" body = "BODY-C" }
graph m {
  entry a
  %s
}
"""


def batch(routes: str, script: list):
    return make(BATCH % routes, script)


def test_batch_conflict_first_result_in_call_order_wins():
    agent, _ = batch("route a -> b on alpha\n route a -> c on beta",
                     [[("beta", {}), ("alpha", {})], "done"])
    r = agent.run("go")
    assert ("a", "c", "route") in moves(r)
    (conflict,) = payloads(r, "route.conflict")
    assert conflict["winner"]["to"] == "c" and conflict["winner"]["tool"] == "beta"
    assert [x["to"] for x in conflict["losers"]] == ["b"]


def test_conflict_is_caused_by_the_winner_and_every_loser_evaluation():
    """The conflict names winner and losers (semantics §12), so it depends on each one's
    `route.evaluated`: the winner's first, then the losers' in call order."""
    agent, _ = batch("route a -> b on alpha\n route a -> c on beta\n route a -> a on probe",
                     [[("beta", {}), ("alpha", {}), ("probe", {})], "done"])
    r = agent.run("go")
    (conflict,) = [e for e in r.trace if e.kind == "route.conflict"]
    evaluated = {(e.payload["edge"], e.payload["call_id"]): e.id for e in r.trace
                 if e.kind == "route.evaluated"}
    assert list(conflict.caused_by) == [evaluated[("a -> c", "call-1-1")],
                                        evaluated[("a -> b", "call-1-2")],
                                        evaluated[("a -> a", "call-1-3")]]
    assert "probe" in r.why(event=conflict.id) and "`alpha` (call-1-2) returned" in \
        r.why(event=conflict.id)


def test_only_the_edge_that_moves_the_cursor_is_recorded_as_fired():
    """A later result's matching edge held but did not fire: its evidence says so and names the
    edge that did, and `why --edge` agrees with it (no "never fired" beside a "fired")."""
    for routes, to in (("route a -> b on alpha\n route a -> c on beta", "c"),
                       ("route a -> b on alpha\n route a -> b on beta", "b")):
        agent, _ = batch(routes, [[("beta", {}), ("alpha", {})], "done"])
        r = agent.run("go")
        fired = [(p["edge"], p["tool"]) for p in payloads(r, "route.evaluated") if p["fired"]]
        assert fired == [(f"a -> {to}", "beta")]
        (late,) = [p for p in payloads(r, "route.evaluated") if p["tool"] == "alpha"
                   and p["to"] == "b"]
        assert late["fired"] is False and all(c["passed"] for c in late["conditions"])
        assert late["reason"] == f"held, but `a -> {to}` fired first (`beta`, call-1-1)"
    agent, _ = batch("route a -> b on alpha\n route a -> c on beta",
                     [[("beta", {}), ("alpha", {})], "done"])
    text = agent.run("go").why(edge="a->b")
    assert "never fired; it lost 1 route conflict(s)" in text
    assert "route conflict from `a`: `a -> c` won over `a -> b`" in text
    assert "edge `a -> b` fired" not in text


def test_batch_same_target_is_not_a_conflict():
    agent, _ = batch("route a -> b on alpha\n route a -> b on beta",
                     [[("beta", {}), ("alpha", {})], "done"])
    r = agent.run("go")
    assert ("a", "b", "route") in moves(r)
    assert payloads(r, "route.conflict") == []


def test_one_result_matching_two_edges_takes_the_first_declared():
    agent, _ = batch("route a -> c on alpha\n route a -> b on alpha", [call("alpha"), "done"])
    r = agent.run("go")
    assert ("a", "c", "route") in moves(r)


def test_empty_batch_stays_and_the_stay_is_recorded():
    agent, _ = batch("route a -> b on alpha", [call("probe"), "done"])
    r = agent.run("go")
    assert moves(r) == [(None, "a", "entry"), ("a", "a", "stay")]


def test_bare_edge_never_fires_by_itself():
    agent, _ = batch("route a -> b", [call("alpha"), "done"])
    r = agent.run("go")
    assert all(cause != "route" for _, _, cause in moves(r))


def test_guard_evidence_is_recorded_for_a_refused_edge():
    agent, _ = batch("route a -> b on probe when result.level > 9", [call("probe"), "done"])
    r = agent.run("go")
    (ev,) = payloads(r, "route.evaluated")
    assert ev["fired"] is False and ev["edge"] == "a -> b"
    assert ev["conditions"] == [{"text": "on probe", "actual": "probe", "passed": True},
                                {"text": "result.level > 9", "actual": 7, "passed": False}]


def test_the_on_and_status_clauses_are_conditions_with_their_actual_values():
    """§4: every evaluation of a guarded edge records each condition with its actual value and
    whether it passed; `on` and `status` are conditions too ("why didn't my edge fire?" is a
    lookup, not prose): the first that fails ends the list, as it ends the evaluation."""
    agent, _ = batch("route a -> b on alpha status [failure, denied] when result.level > 9\n"
                     "  route a -> b status failure", [call("probe"), "done"])
    r = agent.run("go")
    first, second = payloads(r, "route.evaluated")
    assert first["conditions"] == [{"text": "on alpha", "actual": "probe", "passed": False}]
    assert second["conditions"] == [{"text": "status failure", "actual": "success", "passed": False}]
    agent, _ = batch("route a -> b on probe status [failure, success] when result.level > 9",
                     [call("probe"), "done"])
    (ev,) = payloads(agent.run("go"), "route.evaluated")
    assert ev["conditions"] == [{"text": "on probe", "actual": "probe", "passed": True},
                                {"text": "status [failure, success]", "actual": "success", "passed": True},
                                {"text": "result.level > 9", "actual": 7, "passed": False}]


def test_status_edge_fires_on_failure_only():
    spec = BATCH % "route a -> b on alpha status failure"
    agent, _ = make(spec, [call("alpha"), call("alpha"), "done"])
    agent.session.stubs = None
    from afp_dsl.runtime import Stub, Stubs
    stubs = Stubs()
    stubs.add("alpha", Stub(fails="boom"))
    agent.session.stubs = stubs
    r = agent.run("go")
    assert ("a", "b", "route") in moves(r)


PICKS = """
agent g { graph = m }
tool probe { description = "probe" impl = returns("P") }
tool other { description = "other" impl = returns("O") }
skill a { description = "A" tools = [probe, other] }
skill b { description = "B" }
skill c { description = "C" }
graph m {
  entry a when message matches /alpha/
  entry b when message matches /beta/
  route a -> c on probe
}
"""


def test_cold_start_takes_the_first_entry_whose_when_holds_with_witness():
    agent, _ = make(PICKS, ["ok"])
    r = agent.run("alpha please")
    (first,) = payloads(r, "cursor.moved")
    assert (first["to"], first["cause"]) == ("a", "entry")
    assert first["witness"][0]["passed"] is True


def test_no_entry_fires_then_the_model_picks_an_entry():
    agent, _ = make(PICKS, [call("read_skill", id="b"), "ok"])
    r = agent.run("nothing matches")
    assert moves(r) == [(None, None, "none"), (None, "b", "model-pick")]


def test_cold_pick_of_a_non_entry_is_refused_and_moves_nothing():
    agent, prov = make(PICKS, [call("read_skill", id="c"), "ok"])
    r = agent.run("nothing matches")
    (rej,) = payloads(r, "skill.rejected")
    assert rej["requested"] == "c"
    assert moves(r)[-1][1] is None
    text = [m.content for m in prov.requests[1].messages if m.role == "tool"][0]
    assert 'read_skill("c") is not reachable' in text and "a, b" in text


def test_declared_route_beats_a_model_pick_and_the_pick_is_superseded():
    agent, _ = make(PICKS, [[("probe", {}), ("read_skill", {"id": "b"})], "ok"])
    r = agent.run("alpha")
    last = payloads(r, "cursor.moved")[-1]
    assert (last["from"], last["to"], last["cause"]) == ("a", "c", "route")
    assert last["superseded_pick"] == "b"


def test_model_pick_applies_when_no_route_fires():
    agent, _ = make(PICKS, [[("other", {}), ("read_skill", {"id": "b"})], "ok"])
    r = agent.run("alpha")
    assert moves(r)[-1] == ("a", "b", "model-pick")


BARE = """
agent g { graph = m }
tool probe { description = "probe" impl = returns("P") }
skill a { description = "A" tools = [probe] }
skill b { description = "B" }
graph m {
  entry a
  route a -> b on probe when result == "never"
  route a -> b
}
"""


def _line(spec: str, event) -> str:
    return spec.splitlines()[spec[:event.source.start].count("\n")].strip()


def test_a_model_pick_records_the_declaration_that_made_it_reachable():
    """A pick over a declared route names the edge and points at the route (a bare one first:
    bare routes are there for picks); a cold pick of an entry points at the entry."""
    agent, _ = make(BARE, [[("probe", {}), ("read_skill", {"id": "b"})], "ok"])
    r = agent.run("go")
    (pick,) = [e for e in r.trace if e.kind == "cursor.moved"
               and e.payload["cause"] == "model-pick"]
    assert pick.payload["edge"] == "a -> b" and _line(BARE, pick) == "route a -> b"
    assert "cursor a -> b (model-pick) over `a -> b`" in r.why(event=pick.id)
    agent, _ = make(PICKS, [call("read_skill", id="b"), "ok"])
    r = agent.run("nothing matches")
    (pick,) = [e for e in r.trace if e.kind == "cursor.moved"
               and e.payload["cause"] == "model-pick"]
    assert "edge" not in pick.payload and _line(PICKS, pick).startswith("entry b when")


def test_pick_of_the_current_skill_is_refused():
    agent, _ = make(PICKS, [call("read_skill", id="a"), "ok"])
    r = agent.run("alpha")
    assert payloads(r, "skill.rejected")[0]["requested"] == "a"
    assert moves(r)[-1] == ("a", "a", "stay")


def test_the_refusal_of_a_pick_of_the_current_skill_says_it_is_not_reachable():
    """Semantics §3: a refusal names the skill, says it is not reachable from the current skill,
    lists the reachable ones and asks to pick one or finish; the current skill is no exception
    (reachable from the cursor leaves the cursor out), and the model is also told why."""
    agent, prov = make(PICKS, [call("read_skill", id="a"), "ok"])
    agent.run("alpha")
    text = [m.content for m in prov.requests[1].messages if m.role == "tool"][0]
    assert text.startswith('read_skill("a") is not reachable from the current skill `a`')
    assert "is the current skill already" in text
    assert "Reachable skills: " in text and text.endswith("Pick one of these, or finish.")


BASE = """
agent g { graph = m }
tool go { description = "go" impl = returns("G") }
skill base { description = "base" body = "BASE-BODY" }
skill x { description = "x" body = "X-BODY" tools = [go] }
skill y { description = "y" body = "Y-BODY" }
graph m {
  entry x when message matches /x/
  entry base
  route x -> y on go
}
"""


def test_unconditional_entry_is_a_persistent_base_beside_the_cursor():
    agent, prov = make(BASE, [call("go"), "done"])
    agent.run("x marks")
    first, second = prov.requests[0].system, prov.requests[1].system
    assert first.index("BASE-BODY") < first.index("X-BODY")
    assert "BASE-BODY" in second and "Y-BODY" in second
    assert "X-BODY" not in second  # a conditional entry is active only while the cursor is on it


def test_continuity_conversation_carries_the_cursor():
    spec = BASE.replace("agent g { graph = m }",
                        'agent g { graph = m continuity = "conversation" }')
    agent, _ = make(spec, [call("go"), "done", "again"])
    conv = agent.conversation()
    conv.run("x marks")
    r2 = conv.run("and now?")
    assert moves(r2)[0] == (None, "y", "continuity")


def test_continuity_run_starts_cold_each_time():
    agent, _ = make(BASE, [call("go"), "done", "again"])
    conv = agent.conversation()
    conv.run("x marks")
    r2 = conv.run("and now?")
    assert moves(r2)[0] == (None, "base", "entry")


def test_reachable_is_successors_plus_entries_minus_cursor():
    from afp_dsl.cursor import reachable
    agent, _ = make(BASE, ["ok"])
    g = agent.plan.graph
    assert reachable(g, None) == ("x", "base")
    assert reachable(g, "x") == ("y", "base")
    assert reachable(g, "base") == ("x",)


def test_a_guard_that_fails_on_a_missing_field_says_so():
    """§4 evidence, §2's reason: `result.nope` reads as null and the refused condition says the
    field does not exist (the tool's result has `level` only)."""
    agent, _ = batch("route a -> b on probe when result.nope == 1", [call("probe"), "done"])
    (ev,) = payloads(agent.run("go"), "route.evaluated")
    assert ev["conditions"][1] == {"text": "result.nope == 1", "actual": None, "passed": False,
                                   "reason": "`result.nope` does not exist"}
