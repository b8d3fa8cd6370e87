"""Conformance: the original framework's example programs, ported to `.afp` (context, tools,
policies, check-ins, procedures).

Each scenario is one of `agentfootprint-behaviour.md` §14 (example programs, run there under its
mock provider), written as a spec with `test` blocks: the block must pass under `afpc test`'s
rules (checked first, then run against the scripted mock), with the answer, routing and counts
the reference reports. Where the model-visible text matters, the same script runs under the
recording mock of `interp_support` and the sentences are checked too. The graph scenarios are in
`test_conformance_reference_graph.py`; f/15 is `examples/sfp_diagnosis`, f/42 and f/67 are the
examples of docs/semantics.md §4 and §8 (run by test_docs.py).
"""
from __future__ import annotations

import textwrap

from interp_support import call, make, payloads, run_blocks, tool_texts


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


def test_a_scripted_reply_with_tool_calls_stops_for_tool_use():
    """The original mock: `stopReason` defaults to 'tool_use' when the reply calls tools."""
    from afp_dsl import load, providers
    from afp_dsl.providers.base import Reply, ToolCall
    spec = 'agent g { tools = [t] }\ntool t { description = "t" impl = returns("T") }'
    r = load(spec).agent(provider=providers.mock(
        [Reply(text="looking", tool_calls=(ToolCall("c1", "t", {}),)), Reply(text="done")])).run("hi")
    assert [p["stop"] for p in payloads(r, "llm.replied")] == ["tool_use", "stop"]
