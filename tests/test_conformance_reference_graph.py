"""Conformance: the original framework's skill-graph example programs, ported to `.afp`.

As `test_conformance_reference.py` (agentfootprint-behaviour §14), for the graph: a refused jump
and an open skill, a cold start the model picks, status routing, guarded routes with their
evidence and Mermaid captions, and the §15 model-pick case of a retried cold start.
"""
from __future__ import annotations

import textwrap

from interp_support import call, make, moves, payloads, run_blocks, tool_texts


# f/23-skill-graph-scoped-read-skill: a refused jump, an open skill, then a hop over a bare edge.
SCOPED = """
agent ops { graph = m  skills = [notes] }
tool load_inventory { description = "Load the inventory." impl = returns("42 hosts") }
skill triage    { description = "Work out what is needed." body = "TRIAGE" }
skill inventory { description = "Load the inventory." body = "INVENTORY" tools = [load_inventory] }
skill audit     { description = "Read the audit log." body = "AUDIT" }
skill notes     { description = "Shared notes." body = "NOTES" }
graph m {
  scope_tools = true
  entry triage
  route triage -> inventory
  route inventory -> audit
}
test scoped {
  user "Summarise the inventory"
  model calls read_skill { id: "audit" }, read_skill { id: "notes" }
  model calls read_skill { id: "inventory" }
  model calls load_inventory {}
  model says "Inventory loaded; here is the summary."
  expect answer == "Inventory loaded; here is the summary."
  expect trace skill.rejected
  expect cursor inventory
  expect called load_inventory 1
}
"""


def test_f23_refused_jump_open_skill_and_hop(tmp_path):
    run_blocks(tmp_path, SCOPED, allowed=("AFP203",))


def test_f23_what_the_model_reads_and_what_moved():
    agent, rec = make(SCOPED, [[("read_skill", {"id": "audit"}), ("read_skill", {"id": "notes"})],
                               call("read_skill", id="inventory"), call("load_inventory"), "done"])
    r = agent.run("Summarise the inventory")
    refused, opened = tool_texts(rec.requests[1])
    assert refused == ('read_skill("audit") is not reachable from the current skill `triage`. '
                       'Reachable skills: inventory, notes. Pick one of these, or finish.')
    assert opened == "Skill 'notes' activated for the next iteration."
    (rejected,) = payloads(r, "skill.rejected")
    assert rejected == {"requested": "audit", "cursor": "triage", "allowed": ["inventory", "notes"]}
    # scoped tools: offered only once their skill is active
    assert [[t.name for t in q.tools] for q in rec.requests[:3]] == [
        ["read_skill"], ["read_skill"], ["load_inventory", "read_skill"]]
    # the open skill never moved the cursor; the hop did; the base and the open skill stay
    assert moves(r)[:3] == [(None, "triage", "entry"), ("triage", "triage", "stay"),
                            ("triage", "inventory", "model-pick")]
    assert rec.requests[2].system == "TRIAGE\n\nINVENTORY\n\nNOTES"


# f/28-skill-graph-entry-read: no entry's condition holds, so the model picks where to start.
def test_f28_the_model_picks_the_entry_when_no_condition_holds(tmp_path):
    (_, runs), = run_blocks(tmp_path, """
    agent oncall { graph = m }
    tool page_oncall { description = "Page the on-call engineer." impl = returns("paged") }
    skill incident { description = "Handle an incident." tools = [page_oncall] }
    skill billing  { description = "Billing questions." }
    graph m {
      entry incident when message mentions "incident"
      entry billing  when message mentions "invoice"
    }
    test entry_by_read {
      user "The API returns 500s everywhere"
      model calls read_skill { id: "incident" }
      model calls page_oncall {}
      model says "Incident acknowledged; paging on-call."
      expect answer == "Incident acknowledged; paging on-call."
      expect cursor incident
      expect called page_oncall 1
    }
    """).values()
    assert moves(runs[-1]) == [(None, None, "none"), (None, "incident", "model-pick"),
                               ("incident", "incident", "stay")]


# ce/17-brains-and-tool-effects: a refused refund routes on its status to the store-credit skill,
# and an instruction reacts to the refusal.
def test_ce17_a_denied_status_routes_and_an_instruction_reacts(tmp_path):
    (_, runs), = run_blocks(tmp_path, """
    agent returns_desk { graph = m  policies = [window]  context = [after_denial] }
    tool issue_refund {
      description = "Refund an order."
      input { order: string, days_since_purchase: integer }
      impl = returns("refunded")
    }
    tool offer_credit { description = "Offer store credit." impl = returns("credit offered") }
    policy window {
      before issue_refund {
        deny when args.days_since_purchase > 30 because "outside the 30-day window (policy P-12)"
      }
    }
    instruction after_denial {
      when   = last.status == "denied"
      prompt = "The refund was refused: say why, and offer store credit."
    }
    skill refunds      { description = "Refund an order."    tools = [issue_refund] }
    skill store_credit { description = "Offer store credit." tools = [offer_credit] }
    graph m {
      entry refunds
      route refunds -> store_credit on issue_refund status denied
    }
    test outside_the_window {
      user "Refund order #7011, bought 45 days ago"
      model calls issue_refund { order: "7011", days_since_purchase: 45 }
      model says "Order #7011 is outside the 30-day window (policy P-12), so I cannot refund it — I can offer store credit instead."
      expect route refunds -> store_credit
      expect cursor store_credit
      expect not called issue_refund
      expect answer matches /policy P-12/
    }
    """).values()
    (run,) = runs
    composed = payloads(run, "context.composed")
    assert [[p["name"] for p in c["pieces"] if p["kind"] == "instruction"] for c in composed] == \
        [[], ["after_denial"]]


# f/64-skill-map-guards (and §5 example 3): guarded routes, their evidence and their captions.
GUARDS = """
agent risk_desk { graph = m }
tool assess_risk {
  description = "Assess the account's risk."
  output { riskLevel: string, score: number }
  impl = returns({ riskLevel: "high", score: 0.9 })
}
tool close_case { description = "Close the case." impl = returns("closed") }
skill triage     { description = "Triage."     tools = [assess_risk] }
skill escalation { description = "Escalate."   tools = [close_case] }
skill wrapup     { description = "Wrap up." }
graph m {
  entry triage when message mentions ["check", "account"]
  route triage -> escalation on assess_risk when result.riskLevel in ["high", "critical"] and result.score >= 0.7
  route escalation -> wrapup on close_case
}
test guarded_path {
  user "Please check my account"
  model calls assess_risk {}
  model calls close_case {}
  model says "Case handled."
  expect answer == "Case handled."
  expect route triage -> escalation
  expect route escalation -> wrapup
  expect cursor wrapup
}
"""


def test_f64_guarded_routes_fire_with_evidence(tmp_path):
    (_, runs), = run_blocks(tmp_path, GUARDS).values()
    fired = [p for p in payloads(runs[-1], "route.evaluated") if p["edge"] == "triage -> escalation"]
    (ev,) = fired
    assert ev["fired"] is True
    assert [(c["actual"], c["passed"]) for c in ev["conditions"]] == [
        ("assess_risk", True), ("high", True), (0.9, True)]


def test_f64_mermaid_matches_the_reference_shape():
    import afp_dsl as afp
    from afp_dsl.graph_export import to_mermaid
    text = to_mermaid(afp.load(textwrap.dedent(GUARDS)), graph="m")
    assert text.splitlines() == [
        "flowchart TD",
        "  __start__([▶ start])",
        '  n_triage["triage"]',
        '  n_escalation["escalation"]',
        '  n_wrapup["wrapup"]',
        '  __start__ -->|"when message mentions [check, account]"| n_triage',
        ('  n_triage -->|"on assess_risk when result.riskLevel in [high, critical] AND '
         'result.score ≥ 0.7"| n_escalation'),
        "  n_escalation -->|on close_case| n_wrapup",
    ]


# §15 skillGraphModelPick, "cold start matching an entry + a pick of another → the entry": here
# the cold start is retried while no entry has fired, and an entry whose `when` holds on the
# retry wins over the model's accepted pick of another entry; the pick is recorded as superseded
# (semantics §4), as it is when a declared route beats it.
def test_an_entry_firing_on_a_retried_cold_start_supersedes_the_pick():
    agent, rec = make("""
    agent g { graph = m }
    skill a { description = "A" body = "BODY-A" }
    skill b { description = "B" body = "BODY-B" }
    graph m {
      entry a when iteration >= 2
      entry b when message matches /beta/
    }
    """, [call("read_skill", id="b"), "done"])
    r = agent.run("hello")
    moved = payloads(r, "cursor.moved")
    assert [(p["to"], p["cause"]) for p in moved] == [(None, "none"), ("a", "entry")]
    assert moved[-1]["superseded_pick"] == "b"
    assert rec.requests[1].system == "BODY-A"
    (move,) = [e for e in r.trace if e.kind == "cursor.moved" and e.payload["to"] == "a"]
    assert "a model pick of `b` was superseded" in r.why(event=move.id)
    agent, _ = make("""
    agent g { graph = m }
    skill a { description = "A" }
    graph m { entry a when iteration >= 2 }
    """, [call("read_skill", id="a"), "done"])
    assert "superseded_pick" not in payloads(agent.run("hello"), "cursor.moved")[-1]
