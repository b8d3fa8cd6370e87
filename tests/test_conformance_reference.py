"""Conformance: scenarios of the original framework's example programs, ported to `.afp`.

Each scenario is one of `agentfootprint-behaviour.md` §14 (example programs, run there under its
mock provider), written as a spec with `test` blocks: the block must pass under `afpc test`'s
rules (checked first, then run against the scripted mock), with the answer, routing and counts
the reference reports. Where the model-visible text matters (what the model reads back), the same
script runs under the recording mock of `interp_support` and the sentences are checked too.
Scenarios already ported elsewhere are named in the comments, not repeated here.
"""
from __future__ import annotations

import textwrap

from interp_support import call, make, moves, payloads, tool_texts

from afp_dsl.api import Program, analyse
from afp_dsl.diagnostics import has_errors
from afp_dsl.testing import collect, run_test


def run_blocks(tmp_path, spec: str, allowed: tuple[str, ...] = ()) -> dict:
    """Check `spec` (no errors; only the `allowed` warning codes), run its test blocks; returns
    {test name: (TestResult, [RunResult, ...])}."""
    f = tmp_path / "scenario.afp"
    f.write_text(textwrap.dedent(spec), encoding="utf-8")
    loaded, diags = analyse(f)
    assert loaded is not None and not has_errors(diags), [d.message for d in diags]
    assert {d.code for d in diags} <= set(allowed), [(d.code, d.message) for d in diags]
    program = Program(loaded, diags)
    out = {}
    for t in collect(program, str(f), None):
        runs: list = []
        out[t.name] = (run_test(program, t, str(f), observe=runs.append), runs)
    for name, (res, _) in out.items():
        assert res.passed, (name, res.failures)
    return out


# ce/02-skill (+ §1.2's system-prompt probe): read_skill, then the skill's tool, then the answer.
SKILL = """
agent desk {
  system  = "BASE SYSTEM."
  context = [steer, profile, instr]
  skills  = [refunds]
}
steering steer { prompt = "STEERING: be brief." }
fact profile { data = "FACT: signed up on 2024-01-15." }
instruction instr { prompt = "INSTR: confirm the amount." when = message mentions "refund" }
tool process_refund {
  description = "Refund a charge."
  input { amount: number }
  impl = returns("refunded 42.99")
}
skill refunds {
  description = "Refunds and charges"
  body        = "SKILL BODY: refund the charge."
  tools       = [process_refund]
}
test refund_through_a_skill {
  user "I want a refund of my $42.99 charge"
  model calls read_skill { id: "refunds" }
  model calls process_refund { amount: 42.99 }
  model says "Refund processed: $42.99 returned to your original payment method."
  expect answer == "Refund processed: $42.99 returned to your original payment method."
  expect called process_refund 1
  expect outcome answered
}
"""


def test_ce02_a_skill_read_then_its_tool_answers(tmp_path):
    run_blocks(tmp_path, SKILL)


def test_ce02_the_body_joins_the_prompt_from_the_next_iteration_in_composition_order():
    agent, rec = make(SKILL, [call("read_skill", id="refunds"),
                              call("process_refund", amount=42.99), "ok"])
    agent.run("I want a refund of my $42.99 charge")
    base = "BASE SYSTEM.\n\nSTEERING: be brief.\n\nFACT: signed up on 2024-01-15.\n\n" \
           "INSTR: confirm the amount."
    assert rec.requests[0].system == base
    assert [r.system for r in rec.requests[1:]] == [base + "\n\nSKILL BODY: refund the charge."] * 2
    # a skill's tools are offered from iteration 1 by default (tool_scope = "always", §2)
    assert [t.name for t in rec.requests[0].tools] == ["process_refund", "read_skill"]
    assert tool_texts(rec.requests[1]) == ["Skill 'refunds' activated for the next iteration."]


# core/02-agent-with-tools: the mock's demo mode calls the first tool, then quotes its result.
def test_core02_demo_mode_answers_by_quoting_the_tool_result():
    import afp_dsl as afp
    program = afp.load(textwrap.dedent("""
    agent weather_desk { tools = [weather] }
    tool weather {
      description = "Current weather for a city."
      input { city: string }
      impl = returns("SF: sunny, 72°F")
    }
    """))
    r = program.agent("weather_desk", provider=afp.providers.mock()).run("Weather in SF?")
    assert (r.outcome, r.answer) == ("answered", "Got it — SF: sunny, 72°F")
    assert [p["call_id"] for p in payloads(r, "tool.called")] == ["call-weather-1"]


# f/06-tool-args-validation: invalid arguments are not executed; the model fixes them and retries.
ARGS = """
agent echo_desk { tools = [repeat] }
tool repeat {
  description = "Repeat a word."
  input { word: string, times: integer }
}
test invalid_then_fixed {
  user "Say hello three times"
  model calls repeat { word: "hello" }
  model calls repeat { word: "hello", times: 3 }
  tool repeat returns "hello hello hello"
  model says "Done: hello hello hello"
  expect answer == "Done: hello hello hello"
  expect called repeat 1
  expect trace tool.args_invalid
}
"""


def test_f06_invalid_arguments_then_a_retry(tmp_path):
    run_blocks(tmp_path, ARGS, allowed=("AFP405",))


def test_f06_the_model_reads_what_was_missing_and_that_nothing_ran():
    agent, rec = make(ARGS, [call("repeat", word="hello"), call("repeat", word="hello", times=3),
                             "Done"], tools={"repeat": lambda word, times: " ".join([word] * times)})
    r = agent.run("Say hello three times")
    first = tool_texts(rec.requests[1])[0]
    assert first.startswith("Invalid arguments for tool `repeat` — the call was not executed.")
    assert "times" in first and "call it again" in first
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["invalid", "success"]
    assert tool_texts(rec.requests[2])[-1] == "hello hello hello"


# f/07-mock-multi-turn-replies: one script feeds two runs of a conversation.
def test_f07_a_script_is_consumed_across_the_runs_of_a_conversation(tmp_path):
    run_blocks(tmp_path, """
    agent faq { system = "Answer from the policy." }
    test two_turns {
      user "Hi"
      model says "Hello! How can I help?"
      user "How long do refunds take?"
      model says "Refunds take 3 business days."
      expect answer == "Refunds take 3 business days."
    }
    """)


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


# f/33-checkin and f/37-middleware: a ceiling that allows, a four-eyes ask approved by a person.
LEDGER = """
agent refunds_desk { tools = [refund] policies = [refund_ceiling, four_eyes] }
tool refund {
  description = "Refund an amount."
  input { amount: number }
  impl = returns("refund R-1 issued")
}
policy refund_ceiling { before refund { deny when args.amount > 500 because "Over the ceiling." } }
policy four_eyes { before refund { ask when args.amount > 100 because "A second pair of eyes." } }
test approved_by_a_person {
  user "Refund my $250"
  model calls refund { amount: 250 }
  expect outcome paused
  approve by "dana@ops"
  model says "Done — the refund is on its way."
  expect answer == "Done — the refund is on its way."
  expect called refund 1
}
test declined_by_a_person {
  user "Refund my $250"
  model calls refund { amount: 250 }
  decline by "dana@ops" note "not this one"
  model says "A person declined the refund."
  expect not called refund
}
"""


def test_f37_ledger_rows_of_the_chain_and_the_person_s_decision(tmp_path):
    out = run_blocks(tmp_path, LEDGER)
    first, resumed = out["approved_by_a_person"][1]
    rows = [(p["policy"], p["outcome"], p["rule"] is None) for p in payloads(first, "policy.decided")]
    assert rows == [("refund_ceiling", "allow", True), ("four_eyes", "ask", False)]
    (decided,) = payloads(resumed, "checkin.decided")
    assert (decided["decision"], decided["by"]) == ("approve", "dana@ops")
    _, declined = out["declined_by_a_person"][1]
    (returned,) = payloads(declined, "tool.returned")
    assert (returned["status"], returned["executed"]) == ("denied", False)
    assert "not this one" in returned["read"]


# ce/16-skill-steps: a procedure with a skip and a person's approval half-way.
STEPS = """
agent refund_bot { graph = m }
tool find_order    { description = "Find the order."     impl = returns({ order: "4021" }) }
tool verify_charge { description = "Verify the charge."  impl = returns("duplicate") }
tool issue_refund  {
  description = "Refund the duplicate charge."
  input { amount: number }
  check_in = true
  impl = returns("refunded 42.10")
}
tool file_receipt  { description = "File the receipt."   impl = returns("R-991") }
skill refund_procedure {
  description = "Refund a duplicate charge, step by step."
  tools = [find_order, verify_charge, issue_refund, file_receipt]
  steps {
    find_order    "find the order"
    verify_charge "make sure the charge is a duplicate"
    issue_refund  "refund the duplicate only"
    file_receipt  "file the receipt"
  }
}
graph m { entry refund_procedure }
test six_steps_skip_and_pause {
  user "I was charged twice on order #4021"
  model calls find_order {}
  model calls skip_step { reason: "the customer sent the bank statement" }
  model calls issue_refund { amount: 42.10 }
  approve by "maya"
  model calls file_receipt {}
  model says "Refunded the duplicate $42.10 charge on order #4021; receipt R-991 filed."
  expect answer matches /receipt R-991 filed/
  expect trace step.skipped
  expect not called verify_charge
  expect called issue_refund 1
  expect outcome answered
}
"""


def test_ce16_a_procedure_survives_a_skip_and_a_pause(tmp_path):
    (_, runs), = run_blocks(tmp_path, STEPS).values()
    first, resumed = runs
    assert first.outcome == "paused"
    advanced = [(p["step"], p.get("next")) for p in payloads(resumed, "step.advanced")]
    # the completed step's index (reference §16 quirk 4: the intended value, not the observed one)
    assert advanced == [(1, "verify_charge"), (3, "file_receipt"), (4, None)]
    (skipped,) = payloads(first, "step.skipped")
    assert (skipped["step"], skipped["policy"]) == (2, "advance")
    assert payloads(resumed, "steps.unfinished") == []


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


# f/55-result-ceiling: a result over the declared ceiling is refused; a narrower call succeeds.
def test_f55_a_result_over_its_ceiling_is_refused_then_narrowed():
    spec = """
    agent exporter { tools = [export_orders] }
    tool export_orders {
      description = "Export orders."
      input { limit?: integer }
      max_result_chars = 200
    }
    """
    def export(limit: int = 1000) -> str:
        return ",".join(f"#{i}" for i in range(limit))
    agent, rec = make(spec, [call("export_orders"), call("export_orders", limit=25),
                             "Exported 25 orders — summary ready."],
                      tools={"export_orders": export})
    r = agent.run("Export the orders")
    assert r.answer == "Exported 25 orders — summary ready."
    refused = tool_texts(rec.requests[1])[0]
    assert refused.startswith("Result too large: `export_orders` returned")
    assert "Narrow the request" in refused and "No data was returned." in refused
    assert [p["status"] for p in payloads(r, "tool.returned")] == ["invalid", "success"]


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
    assert [(c["actual"], c["passed"]) for c in ev["conditions"]] == [("high", True), (0.9, True)]


def test_f64_mermaid_matches_the_reference_shape():
    from afp_dsl.graph_export import to_mermaid
    import afp_dsl as afp
    text = to_mermaid(afp.load(textwrap.dedent(GUARDS)), graph="m")
    assert text.splitlines() == [
        "flowchart TD",
        "  __start__([▶ start])",
        '  n_triage["triage"]',
        '  n_escalation["escalation"]',
        '  n_wrapup["wrapup"]',
        '  __start__ -->|"when message mentions [check, account]"| n_triage',
        '  n_triage -->|"on assess_risk when result.riskLevel in [high, critical] AND '
        'result.score ≥ 0.7"| n_escalation',
        "  n_escalation -->|on close_case| n_wrapup",
    ]




# ce/05-dynamic-react: a skill's tool, an instruction that reacts to its result on the next
# iteration, and an e-mail address the model is never sent (a `model = true` redact rule).
REACT = """
agent refund_agent { skills = [refunds]  context = [confirm]  redact = [emails] }
tool issue_refund {
  description = "Refund an order."
  input { amount: number }
  impl = returns("refund of $42 issued for maya@example.com")
}
skill refunds { description = "Refunds" body = "Refund, then confirm." tools = [issue_refund] }
instruction confirm {
  when   = returned(issue_refund)
  prompt = "Confirm the refund and say when the money arrives."
}
redact emails { patterns = [/[a-z.]+@[a-z.]+/] placeholder = "[EMAIL]" model = true }
test react {
  user "Refund my $42"
  model calls read_skill { id: "refunds" }
  model calls issue_refund { amount: 42 }
  model says "Done. Refund of $42 issued for [EMAIL]. You should see it within 3-5 business days."
  expect answer matches /issued for \\[EMAIL\\]/
  expect called issue_refund 1
}
"""


def test_ce05_an_instruction_reacts_to_a_tool_and_the_model_never_sees_the_address(tmp_path):
    run_blocks(tmp_path, REACT)
    agent, rec = make(REACT, [call("read_skill", id="refunds"), call("issue_refund", amount=42),
                              "done"])
    r = agent.run("Refund my $42")
    assert ["Confirm the refund" in q.system for q in rec.requests] == [False, False, True]
    assert tool_texts(rec.requests[2])[-1] == "refund of $42 issued for [EMAIL]"
    assert "maya@example.com" not in repr([e.payload for e in r.trace])


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
