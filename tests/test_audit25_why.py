"""Audit (session 25) of the trace and `why` (semantics §4, §12; docs/trace.md §1, §3): the
causes a cursor move cites, and what its explanation shows of the batch that decided it."""
from __future__ import annotations

import json

import afp_dsl as afp

CONFLICT = """
agent a { graph = g }
tool probe { description = "p" input { n: number } output { ok: boolean } impl = returns({ ok: true }) }
tool scan { description = "s" input { q: string } output { hits: number } impl = returns({ hits: 7 }) }
skill start { description = "s" body = "Begin." tools = [probe, scan] }
skill left { description = "l" body = "Left." }
skill right { description = "r" body = "Right." }
skill far { description = "f" body = "Far." }
graph g {
  entry start
  route start -> left on probe when result.ok == true
  route start -> right on scan when result.hits > 5
  route start -> far
}
"""


def _conflict_run():
    script = [[("probe", {"n": 1}), ("scan", {"q": "x"}), ("read_skill", {"id": "far"})], "done"]
    r = afp.load(CONFLICT).agent(provider=afp.providers.mock(script)).run("go")
    assert r.outcome == "answered"
    return r


def _one(r, kind, **want):
    return next(e for e in r.trace if e.kind == kind
                and all(e.payload.get(k) == v for k, v in want.items()))


def _walk(node):
    yield node
    for c in node["children"]:
        yield from _walk(c)


def test_the_move_s_explanation_shows_the_batch_s_route_conflict():
    """`afpc why --event` on the move a conflict was recorded for: the conflict (winner and
    losers) is part of that decision (semantics §4); before, only the answer's tree named it."""
    r = _conflict_run()
    move = _one(r, "cursor.moved", cause="route")
    conflict = _one(r, "route.conflict")
    assert conflict.payload["winner"]["edge"] == "start -> left"
    text = r.why(move.id)
    assert f"[{conflict.id}] route conflict from `start`: `start -> left` won over `start -> right`" \
        in text, text
    doc = json.loads(r.why(move.id, format="json"))
    assert conflict.id in [n["event"] for n in _walk(doc["tree"])]


def test_a_superseded_pick_is_shown_with_the_result_that_accepted_it():
    """The pick a declared edge beat (semantics §4: "recorded as superseded"): the why names the
    edge that beat it and the `read_skill` result that accepted the pick, so "why didn't my pick
    move the cursor?" is a lookup. Before, a bare note without either."""
    r = _conflict_run()
    move = _one(r, "cursor.moved", cause="route")
    assert move.payload["superseded_pick"] == "far"
    picked = _one(r, "tool.returned", tool="read_skill")
    doc = json.loads(r.why(move.id, format="json"))
    note = next(n for n in _walk(doc["tree"]) if n["kind"] == "note"
                and "superseded" in n["text"])
    assert note["text"] == "a model pick of `far` was superseded by the declared edge `start -> left`"
    assert note["data"] == {"superseded_pick": "far"}
    assert [c["event"] for c in note["children"]] == [picked.id]


PICK = """
agent a { graph = g }
tool probe { description = "p" input { n: number } impl = returns("ok") }
skill start { description = "s" body = "Begin." tools = [probe] }
skill next { description = "n" body = "Next." }
graph g {
  entry start
  route start -> next
}
"""


def test_a_model_pick_move_is_caused_by_the_result_that_accepted_the_pick():
    """A `model-pick` move depends on the `read_skill` that was accepted (semantics §4: "a
    read_skill accepted in the previous iteration"), which its `tool.returned` records; the move
    cited the `tool.called` instead, so `why` showed the request, not the acceptance, and
    `afpc trace show` indented the move as if a tool call of its own iteration had caused it."""
    agent = afp.load(PICK).agent(provider=afp.providers.mock([[("read_skill", {"id": "next"})],
                                                             "done"]))
    r = agent.run("go")
    move = _one(r, "cursor.moved", cause="model-pick")
    accepted = _one(r, "tool.returned", tool="read_skill")
    assert accepted.payload["status"] == "success"
    assert move.caused_by == (accepted.id,)
    assert "read_skill` (call-1-1) returned success" in r.why(move.id).splitlines()[1]
    from afp_dsl.cli_trace import timeline
    shown = timeline({"run_id": r.run_id, "agent": "a"}, list(r.trace)).splitlines()
    line = next(x for x in shown if f"[{move.id}] cursor start -> next (model-pick)" in x)
    assert line.startswith(f"  [{move.id}]"), line  # (not nested under a call)


def test_a_conversation_s_later_run_says_its_history_holds_earlier_runs_messages():
    """Semantics §12 asks for "the tool results in the history": in a conversation's second run
    the history the model read holds the first run's call and result too, which the second run's
    trace does not. Before, its tree listed only this run's results, as if that were all."""
    agent = afp.load(PICK).agent(provider=afp.providers.mock(
        [[("probe", {"n": 1})], "first", "second"]))
    chat = agent.conversation()
    first, second = chat.run("go"), chat.run("again")
    assert "earlier runs" not in first.why()
    doc = json.loads(second.why(format="json"))
    note = next(n for n in _walk(doc["tree"]) if n["kind"] == "note" and "earlier" in n["text"])
    # the first run's history: its user message, the call, the result, the answer
    assert note["data"] == {"conversation": chat.id, "messages": 4}
    assert "the history also holds 4 messages of the earlier runs of conversation" in second.why()


def test_a_context_cites_the_stay_its_iteration_decided():
    """The cursor is evaluated once per iteration, before the context is composed, and a `stay`
    is "a recorded decision, not an absence" (semantics §4): the context depends on it. It cited
    only the older move that first put the cursor there, so `why --event` on the context (and
    any walk over `caused_by`) never met the refused edges that kept the cursor where it was."""
    agent = afp.load(CONFLICT).agent(provider=afp.providers.mock(
        [[("scan", {"q": "x"})], "done"]), tools={"scan": lambda q: {"hits": 1}})
    r = agent.run("go")
    stay = _one(r, "cursor.moved", cause="stay")
    composed = [e for e in r.trace if e.kind == "context.composed"]
    assert stay.iteration == composed[-1].iteration == 2
    assert stay.id in composed[-1].caused_by
    assert f"[{stay.id}] cursor start -> start (stay)" in r.why(composed[-1].id)


ASK = """
agent a { tools = [pay] policies = [guard] }
tool pay { description = "p" input { amount: number } impl = returns("paid") }
policy guard { before pay { ask when args.amount > 10 because "big payment" } }
"""


def test_a_call_s_result_cites_the_ledger_row_of_the_person_s_answer():
    """Semantics §8: every decision appends a ledger row; after a check-in the asking link's
    row (`allow … approved by dana`, `deny … declined by dana`) is a policy decision on that
    call, so the call's `tool.returned` depends on it and its `why` shows it (brief: the why of a
    result includes its call and the policy decisions). It cited the ask and the check-in only."""
    for decide, outcome in ((afp.approve, "allow"), (afp.decline, "deny")):
        agent = afp.load(ASK).agent(provider=afp.providers.mock([[("pay", {"amount": 50})], "ok"]))
        paused = agent.run("pay")
        assert paused.outcome == "paused"
        r = agent.resume(paused.checkpoint, decide(paused.checkin, by="dana"))
        row = _one(r, "policy.decided", outcome=outcome, moment="before")
        assert row.payload["reason"].endswith("by dana")
        returned = _one(r, "tool.returned", tool="pay")
        assert row.id in returned.caused_by
        assert f"[{row.id}] policy `guard` decided {outcome}" in r.why(returned.id)


def test_an_event_past_the_tree_s_size_cap_is_not_called_shown_above():
    """A tree stops expanding after `why.MAX_NODES` events; the events it meets after that were
    printed as `… (see above)` though no line above showed them (a batch of 1,600 calls: 100 or
    so results). Each now names the event to explain next, as the depth cap's node does."""
    from afp_dsl.why import MAX_NODES
    spec = 'agent a { tools = [t] }\ntool t { description = "t" input { n: number } impl = returns("ok") }'
    calls = [("t", {"n": i}) for i in range(MAX_NODES // 2 + 100)]
    r = afp.load(spec).agent(provider=afp.providers.mock([calls, "done"])).run("go")
    shown: set[str] = set()
    capped = 0
    for line in r.why().splitlines():
        if not line.lstrip().startswith("["):
            continue
        event = line.lstrip()[1:].split("]", 1)[0]
        if line.endswith("(see above)") or "(see above) (" in line:
            assert event in shown, line
        elif f"(the tree stops at {MAX_NODES} events: explain event `{event}` to go on)" in line:
            capped += 1
        else:
            shown.add(event)
    assert capped > 0


STEPS = """
agent a { graph = g }
tool probe { description = "p" input { n: number } impl = returns("ok") }
tool fix { description = "f" input { n: number } impl = returns("fixed") }
tool note { description = "n" input { n: number } impl = returns("noted") }
skill work { description = "w" body = "Work." tools = [probe, fix, note] steps { fix "fix" note "note" } }
graph g { entry work }
"""


def _retried_run():
    agent = afp.load(STEPS).agent(provider=afp.providers.mock([[("probe", {"n": 1})]]))
    failed = agent.run("go")  # (the script runs out at LLM call #2)
    assert failed.outcome == "error"
    again = afp.load(STEPS).agent(provider=afp.providers.mock(
        [[("fix", {"n": 1})], "early", "done"]))
    r = again.resume(failed.checkpoint)
    assert r.outcome == "answered"
    return r


def test_the_iteration_a_retry_made_again_cites_the_retry():
    """A run resumed after an `error` makes its failed iteration again: that iteration's context
    follows from the `run.resumed` (semantics §10, §12 caused_by), and the answer's `why` says the
    call before failed (the reader saw LLM call #3 follow call #1 with no word of call #2)."""
    r = _retried_run()
    resumed = _one(r, "run.resumed", retry=True)
    again = next(e for e in r.trace if e.kind == "context.composed" and e.seq > resumed.seq)
    assert resumed.id in again.caused_by
    text = r.why()
    assert f"[{resumed.id}] run resumed: a retry of the iteration that failed" in text
    assert "answer (error) — error: AFP502 provider error on LLM call #2" in text


def test_an_error_s_answer_shows_no_note_recorded_after_it():
    """The notes under an answer (budget, unfinished steps, route conflicts) are those recorded
    before it: the `error` a retry went on from showed the retried run's later `steps.unfinished`."""
    r = _retried_run()
    failed = _one(r, "run.finished", outcome="error")
    assert any(e.kind == "steps.unfinished" for e in r.trace)
    assert "steps of `work` unfinished" not in r.why(failed.id)
    assert "steps of `work` unfinished" in r.why()


def test_a_refusal_s_line_says_which_condition_did_not_hold():
    """"Why didn't my edge fire?" must be a lookup (semantics §4): `afpc trace show` prints one
    line per event and no conditions, and a `when` that failed left the refusal's line bare
    (`edge `a -> b` refused on `t` (call-1-1)`)."""
    from afp_dsl.why_describe import describe
    agent = afp.load(CONFLICT).agent(provider=afp.providers.mock([[("scan", {"q": "x"})], "done"]),
                                     tools={"scan": lambda q: {"hits": 1}})
    r = agent.run("go")
    refused = _one(r, "route.evaluated", edge="start -> right")
    assert refused.payload["reason"] is None and refused.payload["fired"] is False
    assert describe(refused) == ("edge `start -> right` refused on `scan` (call-1-1): "
                                 "`result.hits > 5` did not hold (actual 1)")


def test_why_and_trace_show_say_when_the_spec_changed_since_the_run(tmp_path):
    """Events hold character offsets; `file:line` is read from the spec when asked. After an edit
    (one line added on top) every location was silently one line off; `afpc run` keeps the
    spec's SHA-256 with the run, and `why`/`trace show` now warn when it no longer matches."""
    from click.testing import CliRunner
    from afp_dsl.cli import main

    def cli(*args):
        return CliRunner().invoke(main, [str(a) for a in args])

    spec, db = tmp_path / "desk.afp", tmp_path / "runs.db"
    spec.write_text(PICK + 'test pick {\n  user "go"\n  model calls read_skill { id: "next" }\n'
                    '  model says "done"\n}\n', encoding="utf-8")
    assert cli("run", spec, "--script", "pick", "-m", "go", "--store", db).exit_code == 0
    for args in (("why", "last"), ("trace", "show", "last")):
        res = cli(*args, "--store", db)
        assert res.exit_code == 0 and "changed since run" not in res.stderr, res.stderr
    spec.write_text("# a comment\n" + spec.read_text(encoding="utf-8"), encoding="utf-8")
    for args in (("why", "last"), ("trace", "show", "last"),
                 ("trace", "export", "last", "--format", "html", "-o", tmp_path / "r.html")):
        res = cli(*args, "--store", db)
        assert res.exit_code == 0, res.output
        assert f"the spec `{spec}` (or a module it imports) changed since run" in res.stderr
        assert "changed since" not in res.stdout


BACK = """
agent a { graph = g }
tool probe { description = "p" input { n: number } impl = returns("ok") }
tool back { description = "b" input { n: number } impl = returns("ok") }
skill start { description = "s" body = "Begin." tools = [probe] }
skill deep { description = "d" body = "Deep." tools = [back] }
graph g {
  entry start
  route start -> deep on probe
  route deep -> start on back
}
"""


def test_the_piece_of_a_base_the_cursor_is_on_names_the_move_that_put_it_there():
    """docs/trace.md §1: "a skill piece the cursor is on has `event`, the id of the
    `cursor.moved` that put it there" (semantics §2: `entry`, `route` — with the event that
    moved the cursor). An unconditional entry is a persistent base too, and its piece was added
    as a base first, without the event, even while the cursor was on it."""
    script = [[("probe", {"n": 1})], [("back", {"n": 1})], "done"]
    r = afp.load(BACK).agent(provider=afp.providers.mock(script)).run("go")
    moves = [e for e in r.trace if e.kind == "cursor.moved"]
    assert [(m.payload["to"], m.payload["cause"]) for m in moves] == [
        ("start", "entry"), ("deep", "route"), ("start", "route")]
    pieces = [{x["name"]: x for x in e.payload["pieces"]} for e in r.trace
              if e.kind == "context.composed"]
    assert (pieces[0]["start"]["reason"], pieces[0]["start"].get("event")) == ("entry", moves[0].id)
    assert "event" not in pieces[1]["start"]  # (a base the cursor is not on: active as a base)
    assert (pieces[2]["start"]["reason"], pieces[2]["start"].get("event")) == ("route", moves[2].id)


INNER = """
agent outer { tools = [ask_helper] }
agent helper { tools = [lookup] }
tool ask_helper { description = "Ask the helper." input { question: string } impl = agent(helper) }
tool lookup { description = "Look up." input { key: string } check_in = true impl = returns("found") }
"""


def test_a_pause_an_inner_run_asked_for_is_explained_inside_that_run():
    """A check-in of an agent-backed tool's inner run pauses the outer run; the outer `why`
    stopped at the outer call (`ask_helper`), never showing the inner call that asked nor the
    reply that made it (semantics §12: walk back from any event). It now goes on into the kept
    inner run, as a result's tree does."""
    script = [[("ask_helper", {"question": "find k1"})], [("lookup", {"key": "k1"})]]
    agent = afp.load(INNER).agent("outer", provider=afp.providers.mock(script))
    r = agent.run("hi")
    assert r.outcome == "paused"
    asked = _one(r, "checkin.requested", source="inner")
    doc = json.loads(r.why(format="json"))
    checkin = next(n for n in _walk(doc["tree"]) if n["event"] == asked.id)
    inner = next(n for n in checkin["children"] if n["kind"] == "inner")
    assert inner["data"]["agent"] == "helper"
    texts = [n["text"] for n in _walk(inner)]
    assert any(t.startswith("model called `lookup` (call-2-1) with {\"key\": \"k1\"}") for t in texts), texts
