"""Skill-graph routing and pauses, as properties over random small graphs (semantics §1, §4, §7,
§8, §10, §12).

Hypothesis draws a graph (entries with and without `when`, bare and guarded routes over `on`,
`status` and `when`), a `before` policy that denies or asks above a threshold, a mock script of
tool calls and `read_skill` picks, and a person's decisions (tests/route_props_support.py). Each
property is a sentence of the runtime specification, checked on the recorded trace: either
against a model of the spec's rules (`expected`), or directly, from the declared graph.
"""
from __future__ import annotations

from hypothesis import event, given, settings
from route_props_support import Route, Res, cases, expected, reachable, session
from trace_invariants import assert_trace_shape

SETTINGS = settings(max_examples=60, deadline=None, database=None)


# ---------------------------------------------------------------- reading a trace
def _calls(trace) -> dict[str, tuple[int, int]]:
    """call id → (iteration, position in its reply), from the `tool.called` events."""
    out, seen = {}, {}
    for e in trace:
        if e.kind == "tool.called":
            seen[e.iteration] = seen.get(e.iteration, 0) + 1
            out[e.payload["call_id"]] = (e.iteration, seen[e.iteration])
    return out


def observed(trace) -> dict:
    calls = _calls(trace)
    p = [(e.iteration, e.payload) for e in trace]
    return {
        "moves": [(i, x["from"], x["to"], x["cause"], x.get("superseded_pick")) for (i, x), e
                  in zip(p, trace) if e.kind == "cursor.moved"],
        "rows": [[i, x["from"], x["to"], calls[x["call_id"]], x["fired"]] for (i, x), e in zip(p, trace)
                 if e.kind == "route.evaluated"],
        "conflicts": [(i, x["winner"]["to"], [lo["to"] for lo in x["losers"]]) for (i, x), e in zip(p, trace)
                      if e.kind == "route.conflict"],
        "statuses": [(calls[x["call_id"]], x["tool"], x["status"]) for (i, x), e in zip(p, trace)
                     if e.kind == "tool.returned" and x["tool"] != "read_skill"],
    }


def _stats(want) -> None:
    event(f"pauses: {min(want.pauses, 2)}")
    event("causes: " + ",".join(sorted({m[3] for m in want.moves})))
    if want.conflicts:
        event("a route conflict")


# ---------------------------------------------------------------- §4: the cursor
@SETTINGS
@given(case=cases())
def test_the_cursor_moves_as_the_spec_says(case):
    """Semantics §4: cold start takes the first unconditional entry or the first whose `when`
    holds; mid-run a declared route beats a model pick, which beats staying ("first that applies
    wins"); tool results are taken in call order and, for each, the cursor's outgoing edges in
    declaration order, "the first deterministic edge ... whose conditions all hold fires"; bare
    edges never fire by themselves; a later result matching an edge to another target records a
    `route.conflict`; "a pick that loses to a declared edge is recorded as superseded". Stay is
    "a recorded decision, not an absence": one `cursor.moved` per iteration."""
    bodies, results, _ = session(case)
    want = expected(case)
    _stats(want)
    final = results[-1]
    assert final.outcome == "answered", (final.outcome, final.error)
    assert_trace_shape(final.trace, final.outcome)
    got = observed(final.trace)
    assert got["moves"] == want.moves
    assert got["conflicts"] == want.conflicts
    assert got["statuses"] == want.statuses
    assert [e.payload["from"] for e in final.trace if e.kind == "route.evaluated"] == \
        [r[1] for r in want.rows]
    assert got["rows"] == want.rows


@SETTINGS
@given(case=cases())
def test_every_evaluated_edge_is_recorded_with_its_verdict(case):
    """Semantics §4: "Every evaluation of a guarded edge records evidence ... for the edge that
    fired and for edges that were considered and refused". For each result of the previous batch,
    the rows are the cursor's deterministic edges in declaration order, up to the first that
    holds; no bare edge is ever evaluated; at most one row per iteration is `fired`, and only in
    an iteration whose move has cause `route`, to that row's target."""
    _, results, _ = session(case)
    trace = results[-1].trace
    moves = {e.iteration: e.payload for e in trace if e.kind == "cursor.moved"}
    batches: dict = {}
    for e in trace:
        if e.kind == "route.evaluated":
            batches.setdefault((e.iteration, e.payload["call_id"]), []).append(e.payload)
    for (it, _), rows in batches.items():
        cursor = moves[it]["from"]
        edges = [r for r in case.routes if r.src == cursor and r.deterministic]
        assert [(r["from"], r["to"]) for r in rows] == [(r.src, r.dst) for r in edges[:len(rows)]]
        held = [k for k, r in enumerate(rows) if r["fired"] or (r["reason"] or "").startswith("held")]
        assert held in ([], [len(rows) - 1]) and (held or len(rows) == len(edges)), rows
    for it, move in moves.items():
        fired = [r for (i, _), rows in batches.items() if i == it for r in rows if r["fired"]]
        assert len(fired) == (move["cause"] == "route")
        assert not fired or fired[0]["to"] == move["to"]


@SETTINGS
@given(case=cases())
def test_a_route_move_follows_a_declared_edge_whose_guard_held(case):
    """Semantics §4: the cursor moves over "a declared edge out of the cursor" whose conditions
    all hold on a tool result; a model pick moves it only to a skill "reachable from the cursor"
    (successors over any edge plus the entries, minus the cursor); nothing else moves it. Checked
    from the declared graph and the recorded results alone, without replaying the script."""
    _, results, _ = session(case)
    trace = results[-1].trace
    returned = {e.payload["call_id"]: e.payload for e in trace if e.kind == "tool.returned"}
    fired = {e.iteration: e.payload for e in trace if e.kind == "route.evaluated" and e.payload["fired"]}
    for e in trace:
        if e.kind != "cursor.moved" or e.iteration == 1:
            continue
        src, dst, cause = e.payload["from"], e.payload["to"], e.payload["cause"]
        if cause == "route":
            row = fired[e.iteration]
            res = returned[row["call_id"]]
            assert row["from"] == src and row["to"] == dst
            edges = [r for r in case.routes if (r.src, r.dst) == (src, dst) and r.deterministic]
            heard = Res((0, 0), res["tool"], res["status"], res["result"])
            assert any(r.holds(heard, case.own(src)) for r in edges), (e.payload, res, edges)
        elif cause == "model-pick":
            assert dst in reachable(case, src) and dst != src
        else:
            assert (cause, dst) in (("stay", src), ("none", None), ("entry", dst))


# ---------------------------------------------------------------- §7, §8, §10: deny, ask, decline
@SETTINGS
@given(case=cases(asks=True))
def test_deny_and_decline_never_execute_the_tool(case):
    """Semantics §7 (2.): a `before` deny means the tool does not run; §10: "A check_in or a
    policy ask pauses the run before the tool executes", and "Decline → the tool does not run".
    The host bodies run exactly for the calls the policy allowed or a person approved, in call
    order, and a pause happens before its call ran and after every earlier call of the batch."""
    bodies, results, done = session(case)
    want = expected(case)
    _stats(want)
    assert bodies.log == [x[1:] for x in want.executed]
    trace = results[-1].trace
    for e in trace:
        if e.kind == "tool.returned" and e.payload["status"] == "denied":
            assert e.payload["executed"] is False
    assert sum(r.outcome == "paused" for r in results) == want.pauses
    calls = _calls(trace)
    for r, ran in zip(results, done):
        if r.outcome == "paused":
            at = calls[r.checkin.call_id]
            assert ran == sum(1 for x in want.executed if x[0] < at)
            assert r.checkin.call_id not in {e.payload["call_id"] for e in r.trace
                                             if e.kind == "tool.returned"}


def _projection(results) -> dict:
    final = results[-1]
    returned = [(e.payload["call_id"], e.payload["tool"], e.payload["status"], e.payload["result"])
                for e in final.trace if e.kind == "tool.returned"]
    return {**observed(final.trace), "answer": final.answer, "outcome": final.outcome,
            "returned": returned}


@SETTINGS
@given(case=cases(asks=True))
def test_an_approved_ask_resumes_to_the_run_that_never_paused(case):
    """Semantics §10: `resume` with an approval continues "after the link that asked, then the
    tool runs": the run goes on from exactly the paused point. Approving every pause ends in the
    same cursor moves, evidence, tool results, answer and outcome as the same spec whose rule
    allows instead of asking; each resumed trace starts with the paused run's events unchanged,
    and the first result it records is the paused call's, before any new LLM call."""
    bodies, results, _ = session(case, decisions=())
    plain_bodies, plain, _ = session(case, ask="allow")
    assert len(plain) == 1 and plain[0].outcome == "answered"
    event(f"pauses: {min(len(results) - 1, 2)}")
    assert _projection(results) == _projection(plain)
    assert bodies.log == plain_bodies.log
    for before, after in zip(results, results[1:]):
        n = len(before.trace)
        assert [e.to_json() for e in after.trace][:n] == [e.to_json() for e in before.trace]
        rest = [e for e in after.trace][n:]
        assert rest[0].kind == "run.resumed"
        first = next(e for e in rest if e.kind in ("tool.returned", "llm.called"))
        assert first.kind == "tool.returned" and first.payload["call_id"] == before.checkin.call_id


# ---------------------------------------------------------------- §1: determinism
@SETTINGS
@given(case=cases(asks=True))
def test_the_same_spec_and_script_give_byte_identical_traces(case):
    """Semantics §1: "a run replayed with the same effects produces a byte-identical trace" — the
    run, its pauses and every resume with the same decisions."""
    _, first, _ = session(case)
    _, again, _ = session(case)
    assert [r.trace.to_json() for r in first] == [r.trace.to_json() for r in again]
    assert [(r.outcome, r.answer) for r in first] == [(r.outcome, r.answer) for r in again]


def test_route_text_reads_as_the_language_says():
    """language §5.4: the forms a route's conditions take (the generator's own text)."""
    r = Route("s0", "s1", "t0", ("success", "denied"), ("and", 3, "x"))
    assert r.text() == ('route s0 -> s1 on t0 status [success, denied] '
                        'when result.n > 3 and result.kind == "x"')
    assert Route("s0", "s1").text() == "route s0 -> s1" and not Route("s0", "s1").deterministic
