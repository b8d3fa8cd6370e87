"""`why` from any event walks `caused_by` back to the user message (semantics §12): a tool call
is shown with the reply that asked for it, and an edge's evidence with the call it came from.
Before, a tool result stopped at "requested by [id]" and an edge at its evidence, so only the
first iteration's context ever reached the user message."""
from __future__ import annotations

import afp_dsl as afp

SPEC = """
agent desk { graph = g }
tool find { description = "find" input { id: string } impl = returns({status: "ok"}) }
tool act { description = "act" input { id: string } impl = returns("done") }
skill look { description = "look" tools = [find] }
skill doit { description = "do" tools = [act] }
graph g { entry look
  route look -> doit on find when result.status == "ok" }
"""


def _run():
    agent = afp.load(SPEC).agent(provider=afp.providers.mock([
        [("find", {"id": "A"})], [("act", {"id": "A"})], "all done"]))
    r = agent.run("please handle A")
    assert r.outcome == "answered"
    return r


def _event(r, kind: str, nth: int = 0) -> str:
    return [e.id for e in r.trace if e.kind == kind][nth]


def test_every_event_walks_back_to_the_user_message():
    r = _run()
    for kind, nth in (("tool.returned", 0), ("tool.returned", 1), ("cursor.moved", 1),
                      ("route.evaluated", 0), ("tool.called", 1), ("llm.replied", 1)):
        text = r.why(_event(r, kind, nth))
        assert "user message to `desk`: please handle A" in text, (kind, text)


def test_the_reply_that_asked_for_a_call_is_expanded_once():
    r = _run()
    text = r.why()
    first_reply = _event(r, "llm.replied", 0)
    lines = [line for line in text.splitlines() if line.lstrip().startswith(f"[{first_reply}]")]
    assert lines and "calling `find`" in lines[0] and "(see above)" not in lines[0]
    assert all("(see above)" in line for line in lines[1:]), lines


PING_PONG = """
agent desk { graph = g max_iterations = 200 }
tool ping { description = "p" impl = returns("ok") }
tool pong { description = "q" impl = returns("ok") }
skill a { description = "a" tools = [ping] }
skill b { description = "b" tools = [pong] }
graph g { entry a
  route a -> b on ping
  route b -> a on pong }
"""


def _why_lines(n: int) -> int:
    script = [[("ping" if i % 2 == 0 else "pong", {})] for i in range(n)] + ["done"]
    r = afp.load(PING_PONG).agent(provider=afp.providers.mock(script)).run("go")
    assert r.outcome == "answered"
    return len(r.why().splitlines())


def test_the_explanation_of_a_long_run_grows_linearly():
    """Each earlier LLM call reached through a tool call counts the results the tree already
    shows instead of listing them again; listing them made 300 iterations ≈ 46,000 lines."""
    small, large = _why_lines(20), _why_lines(80)
    assert large < 5 * small, (small, large)  # linear: ≈ 4×; quadratic would be ≈ 16×
    text = afp.load(PING_PONG).agent(provider=afp.providers.mock(
        [[("ping", {})], [("pong", {})], [("ping", {})], "done"])).run("go").why()
    assert "tool results in the history (2, 2 shown above)" in text


# ---------------------------------------------------------------- audited: what a call was sent
def test_the_wrap_up_answer_says_the_call_was_sent_no_tools():
    spec = 'agent g { tools = [t] max_iterations = 2 }\ntool t { description = "t" impl = returns("r") }'
    r = afp.load(spec).agent(provider=afp.providers.mock(
        [[("t", {})], [("t", {})], "wrapped"])).run("go")
    assert r.outcome == "max_iterations"
    text = r.why()
    assert "tools sent with this call: none (the wrap-up after the iteration budget" in text


def test_a_result_a_retry_threw_away_is_not_in_the_history():
    spec = ('agent g { tools = [t, u] }\ntool t { description = "t" impl = returns("T") }\n'
            'tool u { description = "u" }')
    agent = afp.load(spec).agent(provider=afp.providers.mock(
        [[("t", {})], [("u", {})], [("u", {})], "done"]))
    r = agent.run("hi")
    assert r.outcome == "error"
    agent.session.host["u"] = lambda: "U"
    text = agent.resume(r.checkpoint).why()
    top = text.split("tool results in the history (", 1)[1]
    assert top.startswith("2)")
    listed = [x for x in top.splitlines()[1:] if x.startswith("      [")]  # (its entries)
    assert len(listed) == 2 and not any("AFP501" in x for x in listed), listed
    # the failure is shown once, as what the retry went on from (not as a result in the history)
    assert "run resumed: a retry of the iteration that failed" in text


def test_a_reference_to_the_run_s_start_reads_as_the_user_message():
    from afp_dsl.why import Index, Locator
    from afp_dsl.why_walk import Walker
    r = _run()
    walker = Walker(Index(r.trace), lambda run_id: None, Locator())
    started = next(e for e in r.trace if e.kind == "run.started")
    first = walker.node(started)
    again = walker.node(started)  # shown above: a reference
    assert first.text == "user message to `desk`: please handle A"
    assert again.kind == "ref" and again.text == first.text + " (see above)"
    assert walker.ref(started).text == first.text


def test_an_error_run_s_answer_line_shows_no_json_null():
    r = afp.load('agent g { }').agent(provider=afp.providers.mock([])).run("hi")
    first = r.why().splitlines()[0]
    assert "null" not in first and "answer (error) — error: AFP502" in first


OPEN = """
agent desk { tools = [find] }
tool find { description = "find" input { id: string } impl = returns({status: "ok"}) }
"""


def test_a_later_context_of_an_agent_without_a_graph_walks_back_to_the_user_message():
    """A context composed after tool results, explained on its own, shows the results (and the
    calls and reply behind them). Before, with no cursor move to follow, it ended at its pieces:
    the context of iteration 2 never reached the user message."""
    agent = afp.load(OPEN).agent(provider=afp.providers.mock([[("find", {"id": "A"})], "ok"]))
    r = agent.run("please handle A")
    composed = _event(r, "context.composed", 1)
    text = r.why(composed)
    assert "user message to `desk`: please handle A" in text, text
    assert f"[{_event(r, 'tool.returned')}] `find` (call-1-1) returned success" in text
    # under the LLM call it went to, the results stay in that call's history, listed once
    answer = r.why()
    assert answer.count(f"[{_event(r, 'tool.returned')}] `find`") == 1, answer


STEPS = """
agent desk { graph = g }
tool first { description = "f" impl = returns("ok") }
tool second { description = "s" impl = returns("ok") }
skill work { description = "w" tools = [first, second]
  steps { first "do the first"  second "do the second" } }
graph g { entry work }
"""


def _tool_call_nodes(node: dict, out: list) -> list:
    if node.get("event") and node.get("kind") != "ref":
        out.append(node)
    for c in node.get("children", []):
        _tool_call_nodes(c, out)
    return out


def test_a_tool_call_a_step_and_a_result_both_cite_is_expanded_once():
    """The call behind "step 1 done" is the call behind the result in the history: the tree
    expands it once, as a `tool_call` node, and the second mention is a reference."""
    import json
    agent = afp.load(STEPS).agent(provider=afp.providers.mock([
        [("first", {})], "first done", "first done, the rest later"]))
    r = agent.run("go")
    call = _event(r, "tool.called")
    text = r.why()
    lines = [line.strip() for line in text.splitlines() if f"[{call}]" in line.split(")")[0]]
    assert len(lines) == 2 and "(see above)" not in lines[0] and "(see above)" in lines[1], text
    tree = json.loads(r.why(format="json"))["tree"]
    (node,) = [n for n in _tool_call_nodes(tree, []) if n["event"] == call]
    assert node["kind"] == "tool_call" and node["data"]["tool"] == "first"
