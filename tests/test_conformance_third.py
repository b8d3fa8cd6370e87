"""Conformance, third pass (semantics §4, §5, §7, §9, §10, §11): what a runtime audit against the
spec found after the first two.

Each test pins a deviation; each failed before its fix.
"""
from __future__ import annotations

import afp_dsl as afp
from interp_support import call, make, payloads, tool_texts


# ---------------------------------------------------------------- §7, §10: check_in after an ask
GATED = """
agent g { tools = [pay] policies = [gate] }
tool pay { description = "pay" input { amount: number } check_in = true impl = returns("paid") }
policy gate { before pay { ask when args.amount > 1 because "big payment?" } }
"""


def test_approving_a_policy_ask_goes_on_to_the_tools_own_check_in():
    agent, _ = make(GATED, [call("pay", amount=5), "ok"])
    first = agent.run("hi")
    assert first.outcome == "paused" and first.checkin.source == "policy"
    second = agent.resume(first.checkpoint, afp.approve(first.checkin, by="me"))
    assert second.outcome == "paused" and second.checkin.source == "tool"
    assert second.checkin.id == first.checkin.id + ":tool"
    assert not [p for p in payloads(second, "tool.returned") if p["executed"]]
    done = agent.resume(second.checkpoint, afp.approve(second.checkin, by="me"))
    assert done.outcome == "answered"
    assert [p["status"] for p in payloads(done, "tool.returned")] == ["success"]
    assert [p["checkin"] for p in payloads(done, "checkin.decided")] == [first.checkin.id, second.checkin.id]


def test_declining_the_tools_own_check_in_after_an_approved_ask_runs_nothing():
    agent, _ = make(GATED, [call("pay", amount=5), "ok"])
    first = agent.run("hi")
    second = agent.resume(first.checkpoint, afp.approve(first.checkin, by="me"))
    done = agent.resume(second.checkpoint, afp.decline(second.checkin, by="me", note="no"))
    assert [(p["status"], p["executed"]) for p in payloads(done, "tool.returned")] == [("denied", False)]


# ---------------------------------------------------------------- §9: the question is redacted
def ask_card(ctx):
    if ctx.get("moment") == "before":
        return ("ask", f"charge card {ctx['args'].get('card')}?")
    return None


def test_a_check_in_question_quoting_a_secret_is_redacted_in_the_result():
    spec = """
agent g { tools = [pay] redact = [secrets] policies = [asker] }
tool pay { description = "pay" input { card: string } impl = returns("ok") }
redact secrets { keys = ["card"] }
policy asker { impl = python("test_conformance_third:ask_card") }
"""
    agent, _ = make(spec, [call("pay", card="4111-SECRET-CARD"), "done"])
    result = agent.run("hi")
    assert result.outcome == "paused"
    assert "SECRET" not in result.checkin.question and "[REDACTED]" in result.checkin.question
    assert "SECRET" not in result.trace.to_json()


# ---------------------------------------------------------------- §4: every refused edge
EDGES = """
agent g { graph = flow }
tool t1 { description = "t1" impl = returns("r1") }
tool t2 { description = "t2" output { kind: string } impl = returns({kind: "bug"}) }
skill a { description = "A" body = "A" tools = [t1, t2] }
skill b { description = "B" body = "B" }
graph flow {
  entry a
  route a -> b on t2 when result.kind == "bug"
}
"""


def test_an_edge_whose_on_names_another_tool_is_recorded_as_refused():
    agent, _ = make(EDGES, [call("t1"), "done"])
    result = agent.run("hi")
    (ev,) = payloads(result, "route.evaluated")
    assert ev["fired"] is False and ev["tool"] == "t1"
    assert ev["conditions"] == [{"text": "on t2", "actual": "t1", "passed": False}]
    assert "`t1`, not `t2`" in ev["reason"]
    moved = payloads(result, "cursor.moved")[-1]
    assert moved["cause"] == "stay"


# ---------------------------------------------------------------- §2: body order
BASES = """
agent g { graph = flow system = "SYS" }
tool t1 { description = "t1" impl = returns("r1") }
skill a { description = "A" body = "BODY-A" tools = [t1] }
skill b { description = "B" body = "BODY-B" }
skill c { description = "C" body = "BODY-C" }
graph flow {
  entry a
  entry b
  route a -> c on t1
}
"""


def test_persistent_bases_keep_their_order_when_one_of_them_is_the_cursor():
    agent, provider = make(BASES, [call("t1"), "done"])
    agent.run("hi")
    systems = [r.system for r in provider.requests]
    assert systems == ["SYS\n\nBODY-A\n\nBODY-B", "SYS\n\nBODY-A\n\nBODY-B\n\nBODY-C"]


# ---------------------------------------------------------------- §7.1: unknown built-ins
def test_built_ins_an_agent_does_not_have_read_as_unknown_tools_listing_its_tools():
    spec = 'agent g { tools = [t1] }\ntool t1 { description = "t1" impl = returns("r1") }\n'
    agent, provider = make(spec, [[("read_skill", {"id": "x"}), ("skip_step", {"reason": "r"})], "done"])
    result = agent.run("hi")
    texts = tool_texts(provider.requests[1])
    assert texts == ["Unknown tool `read_skill`: this agent has no skills. Your tools are: t1.",
                     "Unknown tool `skip_step`: this agent has no procedure. Your tools are: t1."]
    assert [p["status"] for p in payloads(result, "tool.returned")] == ["invalid", "invalid"]


# ---------------------------------------------------------------- §5: a budget cuts steps short
STEPS = """
agent g {{ graph = flow max_iterations = 2 {wrap} }}
tool s1 {{ description = "s1" impl = returns("one") }}
tool s2 {{ description = "s2" impl = returns("two") }}
tool s3 {{ description = "s3" impl = returns("three") }}
skill p {{ description = "P" body = "B" tools = [s1, s2, s3]
  steps {{ s1 "first" s2 "second" s3 "third" }} }}
graph flow {{ entry p }}
"""


def test_a_run_ending_on_its_budget_records_its_unfinished_procedure():
    for wrap in ("", "wrap_up = false"):
        agent, _ = make(STEPS.format(wrap=wrap), [call("s1"), call("s2"), "wrapped"])
        result = agent.run("hi")
        assert result.outcome == "max_iterations"
        unfinished = payloads(result, "steps.unfinished")
        assert unfinished == [{"skill": "p", "step": 2, "tool": "s2", "of": 3, "remaining": [
            {"step": 2, "tool": "s2", "note": "second"}, {"step": 3, "tool": "s3", "note": "third"}],
            "action": "cut-short"}], wrap


# ---------------------------------------------------------------- §11: demo mode
def test_demo_mode_calls_read_skill_when_it_is_the_only_tool_offered():
    spec = """
agent g { skills = [s] tool_scope = "active" }
tool t1 { description = "t1" impl = returns("r1") }
skill s { description = "S" body = "B" tools = [t1] }
"""
    agent = afp.load(spec).agent(provider=afp.providers.mock())
    result = agent.run("hi")
    (first, *_) = payloads(result, "llm.replied")
    assert [c["tool"] for c in first["tool_calls"]] == ["read_skill"]
    assert first["tool_calls"][0]["args"] == {"id": "s"}


# ---------------------------------------------------------------- a later audit (exports, order)
def test_an_absent_or_partial_result_is_not_an_error_in_the_opentelemetry_export():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from afp_dsl import otel
    spec = 'agent a { tools = [find, cov, bad] }\ntool find { description = "f" }\n' \
           'tool cov { description = "c" }\ntool bad { description = "b" }\n'

    def bad():
        raise RuntimeError("down")
    agent, _ = make(spec, [[("find", {}), ("cov", {}), ("bad", {})], "done"],
                    tools={"find": lambda: afp.absent("no such order"),
                           "cov": lambda: afp.coverage([{"a": 1}], total=3), "bad": bad})
    result = agent.run("hi")
    assert [p["status"] for p in payloads(result, "tool.returned")] == ["absent", "partial", "failure"]
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.export_run(result.trace, provider)
    tools = {s.name: s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")}
    assert [tools[f"execute_tool {n}"].status.status_code.name for n in ("find", "cov", "bad")] == [
        "UNSET", "UNSET", "ERROR"]
    assert "error.type" not in tools["execute_tool find"].attributes
    assert tools["execute_tool bad"].attributes["error.type"] == "failure"


def test_run_started_names_the_provider_and_the_export_reports_it():
    from afp_dsl import otel
    agent, _ = make('agent a { tools = [t] }\ntool t { description = "t" impl = returns("r") }\n',
                    [call("t"), "done"])
    result = agent.run("hi")
    assert payloads(result, "run.started")[0]["provider"] == "recording"  # (interp_support's mock)
    names = {s.name.split()[0]: s.attributes["gen_ai.provider.name"] for s in otel.spans(result.trace)
             if "gen_ai.provider.name" in s.attributes}
    assert names == {"invoke_agent": "recording", "chat": "recording"}


def test_skill_tools_are_offered_in_skill_declaration_order_whatever_the_graph_names_first():
    spec = """
agent a { graph = g skills = [o] }
tool tc { description = "c" impl = returns("c") }
tool td { description = "d" impl = returns("d") }
tool te { description = "e" impl = returns("e") }
skill o { description = "open" tools = [tc] }
skill s2 { description = "two" tools = [td] }
skill s1 { description = "one" tools = [te] }
graph g { entry s1 route s1 -> s2 }
"""
    agent, provider = make(spec, ["done"])
    agent.run("hi")
    tools = provider.requests[0].tools
    assert [t.name for t in tools] == ["tc", "td", "te", "read_skill"]
    assert tools[-1].schema["properties"]["id"]["enum"] == ["o", "s2", "s1"]


def test_demo_mode_calls_a_tool_again_in_a_later_run_of_a_conversation():
    program = afp.load('agent a { tools = [t] }\ntool t { description = "t" input { q: string } }')
    agent = program.agent(provider=afp.providers.mock(), tools={"t": lambda q: f"result for {q}"})
    conversation = agent.conversation()
    first = agent.run("first", conversation=conversation)
    second = agent.run("second", conversation=conversation)
    assert [len(payloads(r, "tool.called")) for r in (first, second)] == [1, 1]


def test_the_wrap_up_call_is_caused_by_the_spent_budget():
    agent, _ = make('agent a { tools = [t] max_iterations = 1 }\n'
                    'tool t { description = "t" impl = returns("r") }\n', [call("t"), "final"])
    result = agent.run("hi")
    spent = next(e for e in result.trace if e.kind == "budget.exhausted")
    wrap = [e for e in result.trace if e.kind == "llm.called"][-1]
    assert spent.id in wrap.caused_by and wrap.seq > spent.seq
