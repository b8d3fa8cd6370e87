"""Conformance: the tool pipeline (§7) in order, and agents as tools."""
from __future__ import annotations

import asyncio

import pytest
from interp_support import call, make, payloads, tool_texts


from afp_dsl.envelopes import absent

SPEC = """
agent g { tools = [lookup, big, anything] }
tool lookup {
  description = "Look up an order."
  input {
    order_id: string(pattern: "^[A-Z]{2}-[0-9]+$")
    count: integer(min: 1)
  }
}
tool big { description = "big" max_result_chars = 10 impl = returns("0123456789ABCDEF") }
tool anything { description = "no schema" }
"""


def test_unknown_tool_lists_the_tools_and_is_invalid():
    agent, prov = make(SPEC, [call("nope"), "ok"])
    r = agent.run("hi")
    text = tool_texts(prov.requests[1])[0]
    assert "`nope`" in text and "lookup, big, anything" in text
    assert payloads(r, "tool.returned")[0]["status"] == "invalid"


def test_invalid_arguments_are_explained_without_echoing_values():
    ran = []
    agent, prov = make(SPEC, [call("lookup", order_id="secret-value-xyz", extra=1), "ok"],
                       tools={"lookup": lambda **kw: ran.append(kw)})
    r = agent.run("hi")
    text = tool_texts(prov.requests[1])[0]
    assert ran == []
    assert text.startswith("Invalid arguments for tool `lookup` — the call was not executed.")
    assert "- count: required but missing" in text
    assert "- order_id: expected a string matching /^[A-Z]{2}-[0-9]+$/" in text
    assert "- extra: not an allowed field" in text
    assert "secret-value-xyz" not in text
    assert text.endswith("call it again.")
    assert payloads(r, "tool.args_invalid")[0]["tool"] == "lookup"
    assert payloads(r, "tool.returned")[0]["status"] == "invalid"


RAW = """
agent g { tools = [t] }
tool t { description = "t"
  input = { type: "object", additionalProperties: false,
            properties: { a: { type: "string" }, z: false,
                          o: { type: "object", properties: { b: false } },
                          l: { type: "array", prefixItems: [{ type: "string" }], items: false } },
            patternProperties: { "^x": { type: "integer" } } }
}
"""


def test_problems_name_the_fields_a_raw_schema_refuses_and_only_those():
    """A field matched by `patternProperties` is allowed; a field whose schema is `false` is
    named (it ended the run when sorted beside another problem, or read `arguments: does not
    satisfy None`); `items: false` after `prefixItems` says how many items fit."""
    agent, prov = make(RAW, [call("t", a="ok", x1=3, y=1, z=2, o={"b": 1}, l=["a", "b"]), "ok"],
                       tools={"t": lambda **kw: "x"})
    r = agent.run("hi")
    (bad,) = payloads(r, "tool.args_invalid")
    assert sorted(bad["problems"]) == ["l: expected at most 1 item", "o.b: not an allowed field",
                                       "y: not an allowed field", "z: not an allowed field"]
    assert "x1" not in tool_texts(prov.requests[1])[0]


def test_counts_of_one_read_in_the_singular():
    """What the model reads: `expected at least 1 character`, not `1 characters` (an empty
    `skip_step` reason, minLength 1, met it on every blank skip); other counts keep the plural."""
    spec = """
    agent g { tools = [t] }
    tool t {
      description = "t"
      input { s: string(min_length: 1), m: string(max_length: 1), l: [string](max_items: 1),
              k: [string](min_items: 2) }
    }
    """
    agent, prov = make(spec, [call("t", s="", m="ab", l=["a", "b"], k=[]), "ok"],
                       tools={"t": lambda **kw: "x"})
    (bad,) = payloads(agent.run("hi"), "tool.args_invalid")
    assert bad["problems"] == ["s: expected at least 1 character", "m: expected at most 1 character",
                               "l: expected at most 1 item", "k: expected at least 2 items"]


def test_at_most_ten_problems():
    fields = "\n".join(f"  f{i}: string" for i in range(14))
    spec = f"agent g {{ tools = [t] }}\ntool t {{ description = \"t\"\n input {{\n{fields}\n }} }}"
    agent, prov = make(spec, [call("t"), "ok"], tools={"t": lambda **kw: "x"})
    agent.run("hi")
    assert tool_texts(prov.requests[1])[0].count("\n- ") == 10


def test_each_missing_field_is_listed_once():
    """jsonschema reports one `required` error per missing field, each carrying the whole
    `required` list: two missing fields were listed twice each."""
    agent, prov = make(SPEC, [call("lookup"), "ok"], tools={"lookup": lambda **kw: "x"})
    r = agent.run("hi")
    assert payloads(r, "tool.args_invalid")[0]["problems"] == [
        "order_id: required but missing", "count: required but missing"]


def test_problems_follow_the_items_in_number_order():
    """Item indices sort as numbers: `l[10]` came before `l[2]`, and the cap of 10 then
    dropped `l[9]` for it."""
    spec = 'agent g { tools = [t] }\ntool t { description = "t" input { l: [string] } }'
    agent, prov = make(spec, [call("t", l=list(range(12))), "ok"], tools={"t": lambda **kw: "x"})
    r = agent.run("hi")
    assert payloads(r, "tool.args_invalid")[0]["problems"] == [
        f"l[{i}]: expected string" for i in range(10)]


def test_validator_is_cached_per_tool():
    agent, _ = make(SPEC, ["ok"])
    info = agent.plan.tools["lookup"]
    assert info.validator is info.validator


def test_a_raising_tool_is_a_failure_the_model_reads():
    def boom(**kw):
        raise ValueError("warehouse offline")
    agent, prov = make(SPEC, [call("anything"), "ok"], tools={"anything": boom})
    r = agent.run("hi")
    assert tool_texts(prov.requests[1]) == ["warehouse offline"]
    assert payloads(r, "tool.returned")[0]["status"] == "failure"


def test_non_string_results_are_compact_json():
    agent, prov = make(SPEC, [call("anything"), "ok"],
                       tools={"anything": lambda: {"a": [1, 2], "b": "é"}})
    agent.run("hi")
    assert tool_texts(prov.requests[1]) == ['{"a":[1,2],"b":"é"}']


def test_max_result_chars_refuses_with_a_teaching_message():
    agent, prov = make(SPEC, [call("big"), "ok"])
    r = agent.run("hi")
    text = tool_texts(prov.requests[1])[0]
    assert text.startswith("Result too large: `big` returned 16 characters") and "Narrow" in text
    assert "0123456789" not in text
    assert payloads(r, "tool.returned")[0]["status"] == "invalid"


def test_absent_envelope_is_an_answer_with_status_absent():
    agent, prov = make(SPEC, [call("anything"), "ok"],
                       tools={"anything": lambda: absent("no order AB-9", searched="orders")})
    r = agent.run("hi")
    assert payloads(r, "tool.returned")[0]["status"] == "absent"
    assert '"absent":true' in tool_texts(prov.requests[1])[0]


def test_missing_binding_is_a_clear_afp501_error():
    agent, _ = make(SPEC, [call("anything"), "ok"])
    r = agent.run("hi")
    assert r.outcome == "error" and r.error.startswith("AFP501 tool `anything` is not bound")


def test_python_impl_is_resolved_lazily():
    spec = """
    agent g { tools = [e, broken] }
    tool e { description = "e" input { text: string } impl = python("interp_host:echo") }
    tool broken { description = "b" impl = python("no_such_module_zz:fn") }
    """
    agent, prov = make(spec, [call("e", text="hi"), "ok"])
    r = agent.run("hi")
    assert tool_texts(prov.requests[1]) == ["echo:hi"]
    agent2, _ = make(spec, [call("broken"), "ok"])
    r2 = agent2.run("hi")
    assert r.outcome == "answered" and r2.outcome == "error" and "AFP501" in r2.error


def test_async_host_tool_under_arun():
    async def slow(**kw):
        await asyncio.sleep(0)
        return "async result"
    agent, prov = make(SPEC, [call("anything"), "ok"], tools={"anything": slow})
    r = asyncio.run(agent.arun("hi"))
    assert r.outcome == "answered" and tool_texts(prov.requests[1]) == ["async result"]


def test_async_host_tool_under_sync_run():
    async def slow(**kw):
        return "still fine"
    agent, prov = make(SPEC, [call("anything"), "ok"], tools={"anything": slow})
    assert agent.run("hi").outcome == "answered"
    assert tool_texts(prov.requests[1]) == ["still fine"]


def test_tools_run_in_call_order():
    seen = []
    agent, _ = make(SPEC, [[("anything", {}), ("big", {}), ("anything", {})], "ok"],
                    tools={"anything": lambda: seen.append("a") or "a"})
    r = agent.run("hi")
    assert [p["tool"] for p in payloads(r, "tool.returned")] == ["anything", "big", "anything"]


NESTED = """
agent outer { tools = [ask_researcher] redact = [outer_rule] }
agent researcher { tools = [search] }
tool ask_researcher {
  description = "Ask the researcher."
  input { question: string }
  impl = agent(researcher)
  keep_runs = 1
}
tool search { description = "search" input { q: string } impl = returns({ hit: "x", token: "tok-12345" }) }
redact outer_rule { keys = ["token"] }
"""


def test_agent_as_tool_runs_an_inner_run_kept_under_the_call_id():
    script = [call("ask_researcher", question="what is x?"), call("search", q="x"), "inner answer",
              call("ask_researcher", question="again"), "inner 2", "outer answer"]
    agent, prov = make(NESTED, script, name="outer")
    r = agent.run("hi")
    assert r.outcome == "answered" and r.answer == "outer answer"
    assert prov.requests[1].messages[0].content == "what is x?"
    assert tool_texts(prov.requests[3]) == ["inner answer"]
    runs = r.inner["ask_researcher"]
    assert list(runs.runs) == ["call-4-1"] and runs.dropped == 1
    inner_json = runs.get("call-4-1").to_json()
    assert "run.finished" in inner_json
    assert "inner run" in r.why()


def test_outer_redaction_covers_the_inner_run():
    script = [call("ask_researcher", question="q"), call("search", q="x"), "found tok-12345",
              call("ask_researcher", question="q2"), "nothing", "done"]
    agent, _ = make(NESTED.replace("keep_runs = 1", "keep_runs = 5"), script, name="outer")
    r = agent.run("hi")
    for t in r.inner["ask_researcher"].runs.values():
        assert "tok-12345" not in t.to_json()
    assert "tok-12345" not in r.trace.to_json()


@pytest.mark.parametrize("missing", ["lookup"])
def test_tool_without_body_names_the_fix(missing):
    agent, _ = make(SPEC, [call(missing, order_id="AB-1", count=1), "ok"])
    r = agent.run("hi")
    assert "stub it in a test" in r.error
    assert "impl = python(" in r.error and "tools={'lookup': fn}" in r.error  # CLI and Python


PAUSING = """
agent outer { tools = [delegate] }
agent worker { tools = [pay] }
tool delegate { description = "d" input { task: string } impl = agent(worker) }
tool pay { description = "pay" input { amount: number } check_in = true }
"""


def test_a_pause_inside_an_inner_agent_surfaces_as_an_outer_pause_and_resumes():
    from afp_dsl.runner import approve
    paid = []
    script = [call("delegate", task="pay 5"), call("pay", amount=5), "inner done", "outer done"]
    agent, prov = make(PAUSING, script, name="outer",
                       tools={"pay": lambda amount: paid.append(amount) or "paid"})
    r = agent.run("please pay")
    assert r.paused and r.checkin.tool == "pay" and r.checkin.args == {"amount": 5}
    assert paid == []
    r2 = agent.resume(r.checkpoint, approve(r.checkin))
    assert r2.outcome == "answered" and r2.answer == "outer done" and paid == [5]
    assert tool_texts(prov.requests[-1]) == ["inner done"]
    inner = r2.inner["delegate"].get("call-1-1")
    assert [e.kind for e in inner][-1] == "run.finished"
    assert "checkin.decided" in [e.kind for e in inner]


REFUSING = """
agent outer { tools = [delegate] graph = flow }
agent worker { policies = [screen] }
tool delegate { description = "d" input { task: string } impl = agent(worker) }
policy screen { output { deny when text matches /secret/ because "no secrets" } }
skill desk { description = "desk" tools = [delegate] }
skill refused { description = "refused" }
graph flow { entry desk  route desk -> refused on delegate status denied }
"""


def test_an_inner_run_its_own_policy_refused_is_a_denied_call():
    # the inner agent's `denied` outcome is the call's status (a policy refused), so routes,
    # `after` rules and steps see a refusal; the model reads the refusal, the call did run
    agent, prov = make(REFUSING, [call("delegate", task="t"), "the secret is x", "sorry"],
                       name="outer")
    r = agent.run("hi")
    (ret,) = payloads(r, "tool.returned")
    assert (ret["status"], ret["executed"]) == ("denied", True)
    assert tool_texts(prov.requests[-1]) == ["I can't give that answer: no secrets"]
    assert r.trace.events[-1].payload["cursor"] == "refused"
    agent, _ = make(REFUSING, [call("delegate", task="t"), "fine", "ok"], name="outer")
    assert payloads(agent.run("hi"), "tool.returned")[0]["status"] == "success"


def test_keep_runs_zero_keeps_none_and_counts_the_drop():
    spec = NESTED.replace("keep_runs = 1", "keep_runs = 0")
    agent, _ = make(spec, [call("ask_researcher", question="q"), "inner", "outer"], name="outer")
    r = agent.run("hi")
    runs = r.inner["ask_researcher"]
    assert list(runs.runs) == [] and runs.dropped == 1


def test_a_host_tool_mutating_its_arguments_cannot_change_the_record():
    spec = 'agent g { tools = [t] }\ntool t { description = "t" input { items: [string] } }'

    def greedy(items):
        items.append("injected")
        return "ok"
    agent, prov = make(spec, [call("t", items=["a"]), "done"], tools={"t": greedy})
    r = agent.run("hi")
    assert payloads(r, "tool.called")[0]["args"] == {"items": ["a"]}
    assert [dict(c.arguments) for c in prov.requests[1].messages[1].tool_calls] == [{"items": ["a"]}]


NAN_SPEC = """
agent payer { tools = [pay] policies = [limits] }
tool pay {
  description = "Pay an amount."
  input { amount: number, note?: any }
  check_in = args.amount > 1000
}
policy limits { before pay { deny when args.amount > 500 because "Too much." } }
"""


@pytest.mark.parametrize("amount, first", [(float("nan"), "invalid"), (float("inf"), "denied"),
                                           (-float("inf"), "invalid")])
def test_nan_and_infinities_in_arguments_are_refused_before_any_guard_can_miss_them(amount, first):
    # every comparison with NaN is false: `> 500` and `> 1000` would both let it through
    # (+inf is caught by the policy, which runs before validation)
    ran = []
    agent, prov = make(NAN_SPEC, [call("pay", amount=amount), call("pay", amount=10, note=[1, amount]),
                                  "ok"], tools={"pay": lambda **kw: ran.append(kw) or "paid"})
    r = agent.run("pay")
    assert ran == [] and not r.paused
    texts = [tool_texts(req)[-1] for req in prov.requests[1:]]
    assert (first == "denied") or "amount: expected a finite number" in texts[0]
    assert "note[1]: expected a finite number" in texts[1]
    assert [p["status"] for p in payloads(r, "tool.returned")] == [first, "invalid"]
    assert len(payloads(r, "tool.args_invalid")) == 1 + (first == "invalid")


def test_a_later_run_with_the_same_call_ids_leaves_an_earlier_result_s_inner_runs_alone():
    """A provider that numbers each reply's calls from 0 gave both runs' inner runs the call id
    `call_0`: the second replaced the first in the first result, and its `why` lost the inner
    run."""
    ask = {"id": "call_0", "name": "ask_researcher", "arguments": {"question": "q"}}
    script = [{"calls": [ask]}, "inner A", "outer A", {"calls": [ask]}, "inner B", "outer B"]
    agent, _ = make(NESTED.replace("keep_runs = 1", "keep_runs = 5"), script, name="outer")
    conv = agent.conversation()
    r1 = conv.run("one")
    why_before = r1.why()
    r2 = conv.run("two")
    kept = r1.inner["ask_researcher"].get("call_0")
    assert kept.run_id == r1.run_id + "/call_0" and "inner A" in kept.to_json()
    assert r2.inner["ask_researcher"].get("call_0").run_id == r2.run_id + "/call_0"
    assert r1.why() == why_before


TYPED = """
agent outer { graph = flow }
agent finder { system = "Answer with JSON: {\\"status\\": \\"found\\" or \\"missing\\"}." }
tool consult {
  description = "Ask the finder."
  input { q: string }
  output { status: "found" | "missing" }
  impl = agent(finder)
}
skill desk { description = "desk" tools = [consult] }
skill found { description = "found" }
graph flow { entry desk  route desk -> found on consult when result.status == "found" }
"""


@pytest.mark.parametrize("answer,actual,moved", [
    ('{"status": "found"}', "found", True),  # JSON text: guards read it parsed
    ("It was found.", None, False),          # prose: no field, the path is null
    ('{"status": 5}', 5, False)])            # off the schema: read as it is
def test_an_agent_tools_output_schema_types_guards_but_does_not_judge_the_answer(answer, actual,
                                                                                  moved):
    """`output` declares the result's shape for the checker (language §5.2); the inner answer is
    the result as written, status `success`, whatever its shape; a guard's evidence shows what
    it read (docs/language.md, "Tool bodies")."""
    agent, prov = make(TYPED, [call("consult", q="x"), answer, "done"], name="outer")
    r = agent.run("hi")
    (ret,) = payloads(r, "tool.returned")
    assert (ret["status"], ret["result"]) == ("success", answer)
    assert tool_texts(prov.requests[-1]) == [answer]
    (route,) = payloads(r, "route.evaluated")
    assert [(c["actual"], c["passed"]) for c in route["conditions"]] == [("consult", True), (actual, moved)]
    assert route["fired"] is moved
