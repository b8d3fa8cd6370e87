"""Audit of `why` (semantics §12, docs/trace.md §3) on runs that stress it: the decisions behind
each context piece, across routes, stays, conversations and the iteration budget."""
from __future__ import annotations

import json

import afp_dsl as afp

STAY = """
agent desk { graph = g }
tool probe { description = "p" input { q: string } output { level: integer } }
skill start { description = "s" body = "Probe." tools = [probe] }
skill deep { description = "d" body = "Deep." }
graph g {
  entry start
  route start -> deep on probe when result.level > 2
}
"""


def _stay_run():
    agent = afp.load(STAY).agent(provider=afp.providers.mock([[("probe", {"q": "a"})], "low"]),
                                 tools={"probe": lambda q: {"level": 1}})
    r = agent.run("go")
    assert r.outcome == "answered"
    return r


def test_a_stay_with_refused_edges_is_shown_under_the_skill_it_kept():
    """Iteration 2's `start` piece was there because the cursor stayed: the edge out of it was
    weighed on the probe's result and refused. Before, only the entry move of iteration 1 was
    shown, and the refusal (with its actual value) appeared nowhere in the answer's tree."""
    r = _stay_run()
    lines = r.why().splitlines()
    piece = next(i for i, x in enumerate(lines) if "skill `start` — entry" in x)
    below = "\n".join(lines[piece + 1:piece + 8])
    assert "cursor start -> start (stay)" in below, below
    assert "edge `start -> deep` refused on `probe`" in below
    assert "✗ result.level > 2 — actual 1" in below
    doc = json.loads(r.why(format="json"))
    kinds = _walk(doc["tree"])
    assert {"kind": "cursor", "cause": "stay"} in kinds


def test_the_skill_question_shows_the_stay_too():
    text = _stay_run().why(skill="start")
    assert "cursor start -> start (stay)" in text and "actual 1" in text, text


def _walk(node: dict) -> list[dict]:
    out = [{"kind": node["kind"], "cause": node["data"].get("cause")}]
    for c in node["children"]:
        out += _walk(c)
    return out


NAN = """
agent a { graph = g }
tool t { description = "t" input { x: number } output { v: number } }
skill s { description = "s" tools = [t] }
skill u { description = "u" }
graph g { entry s
  route s -> u on t when result.v > 1 }
"""


def test_the_json_document_is_strict_json_when_a_tool_returned_nan():
    """A condition's actual value NaN was written as Python's bare `NaN`, which `JSON.parse` and
    `jq` refuse; every JSON form of the trace writes the string "NaN" (docs/trace.md §1)."""
    agent = afp.load(NAN).agent(provider=afp.providers.mock([[("t", {"x": 1})], "done"]),
                                tools={"t": lambda x: {"v": float("nan")}})
    r = agent.run("go")

    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")
    doc = json.loads(r.why(edge="s->u", format="json"), parse_constant=refuse)
    conds = [c for c in _nodes(doc["tree"]) if c["kind"] == "condition"]
    assert [c["data"]["actual"] for c in conds] == ["t", "NaN"], conds  # (the `on t`, the guard)


def _nodes(node: dict) -> list[dict]:
    return [node] + [x for c in node["children"] for x in _nodes(c)]


def test_the_json_nodes_carry_what_their_text_says():
    """The JSON of `budget.exhausted` (and other events without a builder of their own) carried
    `data: {}`, and a tool result's node not its result: a reader had to parse the text line."""
    spec = ('agent g { tools = [t] max_iterations = 1 }\n'
            'tool t { description = "t" input { q: string } }')
    agent = afp.load(spec).agent(provider=afp.providers.mock([[("t", {"q": "a"})], "gave up"]),
                                 tools={"t": lambda q: {"hits": 0}})
    r = agent.run("go")
    assert r.outcome == "max_iterations"
    nodes = _nodes(json.loads(r.why(format="json"))["tree"])
    budget = next(n for n in nodes if n["kind"] == "budget.exhausted")
    assert budget["data"] == {"limit": 1, "action": "wrapped-up", "pending": ["t"]}, budget
    agent = afp.load(spec.replace("max_iterations = 1", "max_iterations = 3")).agent(
        provider=afp.providers.mock([[("t", {"q": "a"})], "none"]),
        tools={"t": lambda q: {"hits": 0}})
    nodes = _nodes(json.loads(agent.run("go").why(format="json"))["tree"])
    result = next(n for n in nodes if n["kind"] == "tool_result")
    assert result["data"]["result"] == {"hits": 0}, result


def test_the_budget_event_points_at_the_attribute_that_set_the_budget(tmp_path):
    """`budget.exhausted`'s source is the `max_iterations = N` that set the budget (both parser
    paths: a plain agent is lowered from its tokens, one with `file(...)` from its tree); with no
    such attribute (the default budget), the agent's name."""
    tools = {"t": lambda q: {"hits": 0}}
    (tmp_path / "sys.txt").write_text("Be brief.", encoding="utf-8")
    for extra in ("", '\n  system = file("sys.txt")'):
        text = ('agent g {\n  tools = [t],\n  max_iterations = 1,' + extra + '\n}\n'
                'tool t { description = "t" input { q: string } }\n')
        path = tmp_path / "budget.afp"
        path.write_text(text, encoding="utf-8")
        r = afp.load(str(path)).agent(provider=afp.providers.mock([[("t", {"q": "a"})], "gave up"]),
                                      tools=tools).run("go")
        spent = next(e for e in r.trace.events if e.kind == "budget.exhausted")
        assert text[spent.source.start:spent.source.end] == "max_iterations = 1", extra
        assert "iteration budget 1 exhausted (wrapped-up) (%s:3)" % path in r.why()
    text = 'agent g { tools = [t] }\ntool t { description = "t" input { q: string } }\n'
    calls = [[("t", {"q": "a"})]] * 10 + ["gave up"]
    r = afp.load(text).agent(provider=afp.providers.mock(calls), tools=tools).run("go")
    spent = next(e for e in r.trace.events if e.kind == "budget.exhausted")
    assert spent.payload["limit"] == 10 and text[spent.source.start:spent.source.end] == "g"


BODILESS = """
agent desk { graph = g }
tool find { description = "f" input { id: string } impl = returns({status: "ok"}) }
skill look { description = "l" tools = [find] }
skill doit { description = "d" }
graph g { entry look when message mentions "handle"
  route look -> doit on find when result.status == "ok" }
"""


def test_a_cursor_skill_without_a_body_is_shown_with_the_route_behind_it():
    """A skill with no body adds no context piece, so the answer's tree never said the cursor was
    on `doit`, nor the edge and evidence that put it there (the skill still decides the tools
    and the routes; it is in the composition's `active`)."""
    r = afp.load(BODILESS).agent(provider=afp.providers.mock(
        [[("find", {"id": "A"})], "done"])).run("please handle A")
    text = r.why()
    assert "context of iteration 2: 0 pieces" in text, text
    assert "skill `doit` — route (no body, so no text in the prompt)" in text
    assert "edge `look -> doit` fired on `find`" in text and '✓ result.status == "ok"' in text
    piece = next(n for n in _nodes(json.loads(r.why(format="json"))["tree"])
                 if n["kind"] == "piece" and n["data"]["name"] == "doit")
    assert piece["data"]["reason"] == "route" and piece["children"][0]["kind"] == "cursor"


CONV = """
agent chat { graph = g continuity = "conversation" }
tool check { description = "c" input { q: string } output { ok: boolean } }
skill greet { description = "g" body = "Hi." tools = [check] }
skill follow { description = "f" body = "Follow up." }
graph g { entry greet when message mentions "hello"
  route greet -> follow on check when result.ok == true }
"""


def test_a_continuity_cursor_says_where_it_came_from():
    """The second run of a conversation starts on the first run's last skill; its explanation
    said only `cursor none -> follow (continuity)`, under the second message, as if that message
    had put it there."""
    agent = afp.load(CONV).agent(provider=afp.providers.mock(
        [[("check", {"q": "x"})], "hi", "still here"]), tools={"check": lambda q: {"ok": True}})
    conv = agent.conversation()
    conv.run("hello there")
    text = conv.run("and now?").why()
    assert "cursor none -> follow (continuity)" in text, text
    assert (f"carried over: the previous run of conversation `{conv.id}` ended with the cursor "
            "on `follow`") in text


def test_a_reference_is_worded_as_the_node_it_points_to():
    """A reference to a reply or a context read `model replied calling `t``, `context composed:
    1 pieces, tools t` while the node it points to reads `model replied (LLM call #2, iteration
    2) calling `t`` and `context of iteration 2: 1 piece`: the reader could not match them."""
    spec = 'agent g { system = "s" tools = [t] max_iterations = 2 }\ntool t { description = "t" }'
    agent = afp.load(spec).agent(provider=afp.providers.mock(
        [[("t", {})], [("t", {})], "gave up"]), tools={"t": lambda: "r"})
    text = agent.run("go").why()
    assert "context of iteration 2: 1 piece (see above)" in text, text
    lines = [x.strip() for x in text.splitlines() if "model replied (LLM call #2" in x]
    assert len(lines) == 1 and "(see above)" not in lines[0], lines
    assert "pieces, tools" not in text and "1 pieces" not in text


def test_a_long_run_is_explained_down_to_a_pointer_where_the_tree_stops():
    """Before: each iteration nests the one before it a few levels deeper, and a run of about
    120 iterations overflowed the stack (`afpc why` exited 2, "nested too deeply"). Now the tree
    stops `MAX_LEVELS` deep at a node naming the event to explain next, and that works too."""
    import afp_dsl as afp
    from afp_dsl.why import MAX_LEVELS, render_text, why_tree
    spec = ('agent a { max_iterations = 400 tools = [t] graph = g }\n'
            'tool t { description = "t" input { x: integer } }\n'
            'skill s1 { description = "one" tools = [t] }\n'
            'skill s2 { description = "two" tools = [t] }\n'
            'graph g { entry s1 route s1 -> s2 on t route s2 -> s1 on t }\n')
    script = [[("t", {"x": i})] for i in range(300)] + ["done"]
    r = afp.load(spec).agent(provider=afp.providers.mock(script), tools={"t": lambda x: "ok"}).run("go")
    assert r.outcome == "answered"
    node, _ = why_tree(r.trace)
    text = render_text(node)
    stops = [line for line in text.splitlines() if f"stops {MAX_LEVELS} levels deep" in line]
    assert len(stops) >= 1
    deeper = stops[0].split("explain event `")[1].split("`")[0]
    again, query = why_tree(r.trace, deeper)
    assert query == {"event": deeper} and again.event == deeper and again.kind != "ref"
    assert again.children and "(the tree stops" not in render_text(again).splitlines()[0]


def test_a_stay_is_not_the_self_loop_edge_taken():
    """`why --edge start->start` on a run that only stayed: no such edge exists and none was
    taken (before, every `cursor.moved` from `start` to `start` counted as the edge taken)."""
    r = _stay_run()
    text = r.why(edge="start->start")
    assert "was taken" not in text, text
    assert "never fired" in text and "by staying, not over the edge" in text, text
    doc = json.loads(r.why(edge="start->start", format="json"))
    assert doc["tree"]["data"]["taken"] is False


def test_the_edge_that_fired_is_taken():
    agent = afp.load(STAY).agent(provider=afp.providers.mock([[("probe", {"q": "a"})], "deep"]),
                                 tools={"probe": lambda q: {"level": 5}})
    r = agent.run("go")
    text = r.why(edge="start->deep")
    assert "edge `start -> deep` was taken (iteration 2)" in text, text


def test_expect_route_is_not_met_by_a_stay(tmp_path):
    from afp_dsl.api import Program, analyse
    from afp_dsl.testing import collect, run_test
    f = tmp_path / "stay.afp"
    f.write_text(STAY + """
test stays {
  user "go"
  model calls probe { q: "a" }
  tool probe returns { level: 1 }
  model says "low"
  expect route start -> start
}
""", encoding="utf-8")
    loaded, diags = analyse(f)
    program = Program(loaded, diags)
    [t] = collect(program, str(f), None)
    result = run_test(program, t, str(f))
    assert not result.passed
    text = "\n".join(map(str, result.failures))
    assert "edge `start -> start` was not taken" in text and "edges taken: none" in text, text


ENTRIES = """
agent a { graph = g }
skill s1 { description = "d" }
skill s2 { description = "d" }
graph g {
  entry s1 when message mentions ["refund"]
  entry s2
}
"""


def test_an_entry_that_did_not_hold_is_evidence_of_why_its_skill_did_not_start():
    """Before, `why --skill s1` said "the trace never mentions `s1`; did you mean `s2`?": the
    cold start recorded only the entry that fired."""
    r = afp.load(ENTRIES).agent(provider=afp.providers.mock(["ok"])).run("hello")
    moved = next(e.payload for e in r.trace if e.kind == "cursor.moved")
    span = next(e.span for d in afp.load(ENTRIES).ir.modules[0].decls
                if type(d).__name__ == "Graph" for e in d.entries if e.skill.name == "s1")
    assert moved["refused_entries"] == [{"skill": "s1", "conditions": [
        {"text": 'message mentions ["refund"]', "actual": "hello", "passed": False}],
        "source": ["<text>", span.start, span.end]}]
    text = r.why(skill="s1")
    assert "never mentions" not in text, text
    line = ENTRIES[:span.start].count("\n") + 1
    assert f"entry `s1` was tried and its `when` did not hold (<text>:{line})" in text, text
    assert '✗ message mentions ["refund"] — actual hello' in text


def test_the_answer_s_tree_shows_the_message_an_input_link_rewrote():
    """semantics §12: the policy decisions on the way. Before, the first context cited only
    `run.started`, so `why` explained the answer against the message the person typed, never
    the one the model got from the `input` link's rewrite."""
    spec = ('agent a { system = "S" policies = [scrub] }\n'
            'policy scrub { impl = python("interp_host:scrub_ssn") }\n')
    r = afp.load(spec).agent(provider=afp.providers.mock(["ok"])).run("my ssn is 123-45-6789")
    text = r.why()
    row = next(line for line in text.splitlines() if "at input" in line)
    assert "rewrote" in row and "[ssn]" in row, text
    assert text.index("at input") < text.index("user message to `a`")


def test_a_result_an_after_link_replaced_shows_what_the_model_read():
    """docs/trace.md: `read` is what the model read. Before, an after-denied call's line showed
    only the tool's real result, as if the model had read it."""
    spec = ('agent a { tools = [t] policies = [p] }\n'
            'tool t { description = "t" impl = returns({ pii: true, mail: "maya@example.com" }) }\n'
            'policy p { after t { deny when result.pii == true because "Aggregate it instead." } }\n')
    r = afp.load(spec).agent(provider=afp.providers.mock([[("t", {})], "ok"])).run("go")
    line = next(x for x in r.why().splitlines() if "returned denied" in x)
    assert '; the model read: Aggregate it instead. (' in line, line
    assert "maya@example.com" in line  # (the record keeps the real result, semantics §7)


def test_the_reply_s_tree_names_the_retries_and_the_fallback_that_answered():
    """Before, `llm.retry`/`llm.fallback` hung off the call but no reply's tree showed them, so
    `why` read as if the first provider had answered."""
    from afp_dsl.providers import with_fallback, with_retry
    from afp_dsl.providers._errors import ServerUnreachableError

    class Down:
        name = "down"

        def complete(self, request):
            raise ServerUnreachableError("down: cannot connect")

    provider = with_fallback(with_retry(Down(), 2, sleep=lambda s: None), afp.providers.mock(["ok"]))
    r = afp.load('agent a { system = "S" }').agent(provider=provider).run("hi")
    assert r.outcome == "answered", r.error
    lines = r.why().splitlines()
    reply = next(i for i, x in enumerate(lines) if "model replied" in x)
    below = "\n".join(lines[reply + 1:reply + 4])
    assert "provider `down` attempt 1 of 2 failed" in below, below
    assert "`mock` was asked instead" in below, below


def test_a_deny_or_an_ask_records_the_values_its_rule_read_and_hides_redacted_ones():
    """semantics §12: "why was I refused?" is a lookup. Before, a rule's row named the rule but
    not the values it read; now a deny's or an ask's row has its conditions (an allow's keeps
    none: the common case stays cheap), a value read from under a redacted key hidden."""
    spec = ('agent a { tools = [pay] policies = [p] redact = [r] }\n'
            'redact r { keys = ["pin"] }\n'
            'tool pay { description = "pay" input { amount: number, pin: string } impl = returns("ok") }\n'
            'policy p { before pay { deny when args.amount > 500 and args.pin == "0000" '
            'because "no" } }\n')
    r = afp.load(spec).agent(provider=afp.providers.mock(
        [[("pay", {"amount": 900, "pin": "0000"})], "done"])).run("go")
    (row,) = [e.payload for e in r.trace if e.kind == "policy.decided"]
    assert [(c["text"], c["actual"], c["passed"]) for c in row["conditions"]] == [
        ("args.amount > 500", 900, True), ('args.pin == "[REDACTED]"', "[REDACTED]", True)], row
    text = r.why(event=[e.id for e in r.trace if e.kind == "policy.decided"][0])
    assert "✓ args.amount > 500 — actual 900" in text and "0000\n" not in text


def test_a_condition_on_a_redacted_key_that_is_absent_shows_null_not_a_placeholder():
    """`[REDACTED]` for a path that does not exist implied that a secret was there."""
    spec = ('agent a { graph = g redact = [r] }\nredact r { keys = ["password"] }\n'
            'tool t { description = "t" input { q: string, password?: string } impl = returns("x") }\n'
            'skill s { description = "s" tools = [t] }\nskill u { description = "u" }\n'
            'graph g { entry s  route s -> u on t when args.password == "pw" }\n')
    r = afp.load(spec).agent(provider=afp.providers.mock([[("t", {"q": "a"})], "ok"])).run("go")
    (ev,) = [e.payload for e in r.trace if e.kind == "route.evaluated"]
    assert ev["conditions"][-1]["actual"] is None, ev
    r2 = afp.load(spec).agent(provider=afp.providers.mock([[("t", {"q": "a", "password": "pw2"})],
                                                          "ok"])).run("go")
    (ev2,) = [e.payload for e in r2.trace if e.kind == "route.evaluated"]
    assert ev2["conditions"][-1]["actual"] == "[REDACTED]", ev2


def test_an_inner_run_s_event_id_printed_in_the_outer_tree_can_be_asked_about():
    """The outer tree prints inner events as `<run>/<call>:<seq>`; asking about one from the
    outer run said "no event … in run …". Now it is explained in its own run's trace."""
    import re
    spec = ('agent outer { tools = [ask_inner] }\nagent inner { system = "I" }\n'
            'tool ask_inner { description = "ask" input { question: string } impl = agent(inner) }\n')
    provider = afp.providers.mock([[("ask_inner", {"question": "q"})], "inner says hi", "done"])
    r = afp.load(spec).agent("outer", provider=provider).run("go")
    assert r.outcome == "answered", r.error
    ids = re.findall(r"\[(run-[0-9a-f]+/[^\]:]+:\d+)\]", r.why())
    assert ids, r.why()
    text = r.why(event=ids[0])
    assert text.startswith(f"[{ids[0]}]"), text


def test_a_cold_start_where_no_entry_fired_says_so():
    """Before: "entries tried first and refused" under `cursor none -> none (none)`, though
    nothing fired after them."""
    spec = ENTRIES.replace("  entry s2\n", '  entry s2 when message mentions ["order"]\n')
    r = afp.load(spec).agent(provider=afp.providers.mock(["ok"])).run("zzz nothing matches")
    moved = next(e for e in r.trace if e.kind == "cursor.moved")
    assert moved.payload["cause"] == "none", moved.payload
    text = r.why(event=moved.id)
    assert "no entry fired: every conditional entry was tried and refused" in text, text


def test_a_skill_name_the_model_made_up_is_never_suggested():
    """`why --skill nonexist` suggested `nonexistent`, an id the model invented for `read_skill`
    (refused by its schema), as if it were a skill."""
    spec = 'agent a { skills = [notes] }\nskill notes { description = "n" body = "N" }\n'
    r = afp.load(spec).agent(provider=afp.providers.mock(
        [[("read_skill", {"id": "nonexistent"})], "ok"])).run("go")
    assert any(e.kind == "tool.args_invalid" for e in r.trace)
    assert "nonexistent`?" not in r.why(skill="nonexist")
