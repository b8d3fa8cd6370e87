"""Conformance: pause, check-in and resume (§10), including "once" across processes."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from interp_support import call, kinds, make, payloads, tool_texts

from afp_dsl.runner import ResumeDecisionError, approve, decline
from afp_dsl.store import sqlite
from afp_dsl.stores import memory

SPEC = """
agent g { tools = [refund] policies = [guard, later] }
tool refund {
  description = "refund"
  input { amount: number }
  check_in = args.amount > 1000
}
policy guard {
  before refund {
    deny when args.amount > 5000 because "too much"
    ask  when args.amount > 100 because "Refunds over $100 need a second pair of eyes."
  }
}
policy later { before refund { deny when args.amount == 777 because "later link says no" } }
"""


def paused(amount: float, *, store=None, script_tail=("done",)):
    ran: list = []
    agent, prov = make(SPEC, [call("refund", amount=amount), *script_tail],
                       tools={"refund": lambda amount: ran.append(amount) or f"refunded {amount}"},
                       store=store)
    r = agent.run("refund please")
    return agent, prov, r, ran


def test_policy_ask_pauses_before_the_tool_runs():
    agent, prov, r, ran = paused(200)
    assert r.paused and ran == []
    assert r.checkin.tool == "refund" and r.checkin.policy == "guard"
    assert r.checkin.question.startswith("Refunds over $100")
    assert r.checkin.args == {"amount": 200}
    assert kinds(r)[-2:] == ["checkin.requested", "run.paused"]


def test_approve_continues_the_chain_after_the_asking_link_then_runs():
    agent, prov, r, ran = paused(200)
    r2 = agent.resume(r.checkpoint, approve(r.checkin, by="maya", note="fine"))
    assert r2.outcome == "answered" and ran == [200]
    rows = payloads(r2, "policy.decided")
    # the person's answer is the asking link's row (the original's ledger: `four-eyes allow …
    # approved by dana@ops`); `later` has a rule for the moment and none held: the link allows,
    # and that is a decision
    assert [(x["policy"], x["outcome"], x["rule"]) for x in rows] == [
        ("guard", "ask", rows[0]["rule"]), ("guard", "allow", rows[0]["rule"]),
        ("later", "allow", None)]
    assert rows[0]["rule"] is not None and rows[1]["reason"] == "approved by maya"
    (dec,) = payloads(r2, "checkin.decided")
    assert dec["decision"] == "approve" and dec["by"] == "maya"
    assert r2.run_id == r.run_id and "run.resumed" in kinds(r2)
    assert kinds(r2)[0] == "run.started"  # the resumed trace continues the paused one


def test_approve_then_a_later_link_can_still_deny():
    agent, prov, r, ran = paused(777)
    r2 = agent.resume(r.checkpoint, approve(r.checkin))
    assert ran == [] and "later link says no" in tool_texts(prov.requests[-1])[0]
    assert [(x["policy"], x["outcome"]) for x in payloads(r2, "policy.decided")] == [
        ("guard", "ask"), ("guard", "allow"), ("later", "deny")]
    assert payloads(r2, "policy.decided")[1]["reason"] == "approved by a person"


def test_decline_does_not_run_and_the_model_reads_the_note():
    agent, prov, r, ran = paused(200)
    r2 = agent.resume(r.checkpoint, decline(r.checkin, by="maya", note="not today"))
    assert ran == [] and r2.outcome == "answered"
    assert tool_texts(prov.requests[-1]) == ["Not executed: declined by human: not today."]
    rows = payloads(r2, "policy.decided")
    assert [(x["policy"], x["outcome"], x["reason"]) for x in rows] == [
        ("guard", "ask", rows[0]["reason"]), ("guard", "deny", "declined by maya")]


@pytest.mark.parametrize("note", ["   ", "\n", ""])
def test_a_blank_decline_note_reads_as_no_note(note):
    agent, prov, r, ran = paused(200)
    agent.resume(r.checkpoint, decline(r.checkin, note=note))
    assert tool_texts(prov.requests[-1]) == ["Not executed: declined by human."]


def test_tool_check_in_pauses_when_its_expression_holds():
    spec = SPEC.replace("policies = [guard, later]", "")
    ran = []
    agent, _ = make(spec, [call("refund", amount=2000), "done"],
                    tools={"refund": lambda amount: ran.append(amount) or "ok"})
    r = agent.run("hi")
    assert r.paused and r.checkin.source == "tool" and ran == []
    assert agent.resume(r.checkpoint, approve(r.checkin)).outcome == "answered"
    assert ran == [2000]


def test_a_second_resume_with_the_same_decision_raises():
    agent, prov, r, ran = paused(200)
    d = approve(r.checkin)
    agent.resume(r.checkpoint, d)
    with pytest.raises(ResumeDecisionError):
        agent.resume(r.checkpoint, d)
    assert ran == [200]


def test_a_decision_for_another_checkin_raises():
    agent, prov, r, ran = paused(200)
    with pytest.raises(ResumeDecisionError, match="waits on"):
        agent.resume(r.checkpoint, approve("some-other-checkin"))
    assert ran == []


def test_anything_that_is_not_a_decision_raises():
    agent, prov, r, ran = paused(200)
    for bad in (None, "yes", True, {"approved": True}):
        with pytest.raises(ResumeDecisionError):
            agent.resume(r.checkpoint, bad)
    assert ran == []


def test_a_checkpoint_whose_call_changed_raises_and_nothing_runs():
    agent, prov, r, ran = paused(200)
    data = json.loads(json.dumps(r.checkpoint.data))
    data["state"]["pending"]["calls"][0]["arguments"]["amount"] = 20000
    from afp_dsl.runner import Checkpoint
    with pytest.raises(ResumeDecisionError, match="changed"):
        agent.resume(Checkpoint(r.run_id, r.checkin.id, data), approve(r.checkin))
    assert ran == []
    agent.resume(r.checkpoint, approve(r.checkin))  # the real call can still be decided once
    assert ran == [200]


def test_checkpoint_is_deleted_when_the_run_ends():
    agent, prov, r, ran = paused(200)
    assert agent.store.checkpoint(r.run_id) is not None
    agent.resume(r.checkpoint, approve(r.checkin))
    assert agent.store.checkpoint(r.run_id) is None


def test_provider_failure_after_an_iteration_is_resumable():
    spec = "agent g { tools = [t] }\ntool t { description = \"t\" impl = returns(\"T\") }"
    agent, prov = make(spec, [call("t"), "recovered"], fail_at=2)
    r = agent.run("hi")
    assert r.outcome == "error" and "unreachable" in r.error and r.checkpoint is not None
    prov.fail_at = None
    r2 = agent.resume(r.checkpoint)
    assert r2.outcome == "answered" and r2.answer == "recovered"


def test_an_error_run_whose_checkpoint_another_process_took_is_not_resumed_twice():
    """Two processes resuming one `error` run both read its checkpoint; only the one whose
    `delete_checkpoint` took it goes on. Here the other process wins the race: this resume is
    refused before anything runs (before: it ran the iteration again, tools included)."""
    spec = "agent g { tools = [t] }\ntool t { description = \"t\" impl = returns(\"T\") }"
    agent, prov = make(spec, [call("t"), "recovered"], fail_at=2)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is not None
    prov.fail_at = None
    store = agent.store
    taken = store.delete_checkpoint  # the other process deletes it between our read and claim

    def raced(run_id):
        taken(run_id)
        return False
    store.delete_checkpoint = raced
    before = len(store.events(r.run_id))
    with pytest.raises(ResumeDecisionError, match="resumed by another process"):
        agent.resume(r.checkpoint)
    assert len(store.events(r.run_id)) == before and len(prov.requests) == 2


def test_an_interrupted_resume_of_an_error_run_puts_its_claimed_checkpoint_back():
    spec = "agent g { tools = [t] }\ntool t { description = \"t\" impl = returns(\"T\") }"
    agent, prov = make(spec, [call("t"), "recovered"], fail_at=2)
    r = agent.run("hi")
    inner = prov.inner

    class Stop:
        def complete(self, request):
            raise KeyboardInterrupt
    prov.inner, prov.fail_at = Stop(), None
    with pytest.raises(KeyboardInterrupt):
        agent.resume(r.run_id)
    assert agent.store.checkpoint(r.run_id) is not None  # resumable again
    prov.inner = inner
    assert agent.resume(r.run_id).answer == "recovered"


def test_provider_failure_on_the_first_call_has_no_checkpoint():
    agent, _ = make("agent g { }", ["x"], fail_at=1)
    r = agent.run("hi")
    assert r.outcome == "error" and r.checkpoint is None


_CHILD = textwrap.dedent("""
    import sys, json
    sys.path[:0] = [{tests!r}, {root!r}]
    from interp_support import make
    from afp_dsl.runner import approve, ResumeDecisionError
    from afp_dsl.store import sqlite
    spec = open({spec!r}).read()
    agent, _ = make(spec, ["done"], tools={{"refund": lambda amount: "ok"}},
                    store=sqlite({db!r}))
    try:
        r = agent.resume({run!r}, approve({checkin!r}, by=sys.argv[1]))
        print(json.dumps({{"ok": r.outcome}}))
    except ResumeDecisionError as e:
        print(json.dumps({{"refused": str(e)}}))
""")


def test_once_holds_across_two_processes_sharing_the_store(tmp_path):
    db = tmp_path / "shared.db"
    agent, prov, r, ran = paused(200, store=sqlite(db), script_tail=())
    spec = tmp_path / "spec.afp"
    spec.write_text(textwrap.dedent(SPEC))
    here = Path(__file__).resolve().parent
    code = _CHILD.format(tests=str(here), root=str(here.parent), spec=str(spec), db=str(db),
                         run=r.run_id, checkin=r.checkin.id)
    procs = [subprocess.Popen([sys.executable, "-c", code, who], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for who in ("ann", "bob")]
    outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert sorted("ok" in o for o in outs) == [False, True], outs
    assert sqlite(db).checkin(r.checkin.id)["state"] == "decided"


def test_an_ask_during_a_resumed_dispatch_is_a_denial():
    spec = SPEC.replace("policy later { before refund { deny when args.amount == 777 "
                        "because \"later link says no\" } }",
                        "policy later { before refund { ask when args.amount > 50 "
                        "because \"a second question\" } }")
    ran = []
    agent, prov = make(spec, [call("refund", amount=200), "done"],
                       tools={"refund": lambda amount: ran.append(amount) or "ok"})
    r = agent.run("hi")
    r2 = agent.resume(r.checkpoint, approve(r.checkin))
    assert ran == [] and r2.outcome == "answered"
    row = payloads(r2, "policy.decided")[-1]
    assert row["policy"] == "later" and row["outcome"] == "deny" and "no pause here" in row["reason"]


def test_aresume_matches_resume():
    import asyncio
    agent, prov, r, ran = paused(200)
    r2 = asyncio.run(agent.aresume(r.checkpoint, approve(r.checkin)))
    assert r2.outcome == "answered" and ran == [200]


def test_default_effects_give_unique_run_ids_in_a_shared_store(tmp_path):
    from interp_support import load
    store = sqlite(tmp_path / "s.db")
    program = load("agent g { }")
    from afp_dsl.providers import mock
    ids = {program.agent(provider=mock(["a"]), store=store).run("hi").run_id for _ in range(3)}
    assert len(ids) == 3 and len(store.runs()) == 3


def test_a_fresh_agent_resuming_a_run_numbers_its_model_calls_after_the_run_s_own():
    """Another agent (another process) resumes: call numbers go on, and the tool-call ids a
    model derives from them stay unique within the run."""
    store = memory()
    first, _ = make(SPEC, [call("refund", amount=5), call("refund", amount=500), "unused"],
                    tools={"refund": lambda amount: "ok"}, store=store)
    r = first.run("refund twice")
    assert r.paused
    second, _ = make(SPEC, [call("refund", amount=7), "done"], tools={"refund": lambda amount: "ok"},
                     store=store)
    r2 = second.resume(r.run_id, approve(r.checkin, by="ops"))
    assert r2.outcome == "answered"
    numbers = [p["call"] for p in payloads(r2, "llm.called")]
    assert numbers == [1, 2, 3, 4]
    ids = [c["id"] for p in payloads(r2, "llm.replied") for c in p["tool_calls"]]
    assert len(ids) == len(set(ids)) == 3


def test_a_check_in_is_caused_by_the_call_it_asks_about_and_the_row_that_asked():
    """§12 `caused_by`: the check-in depends on the reply, its tool call and, for a policy's
    `ask`, that ledger row."""
    _, _, r, _ = paused(200)
    by_kind = {e.kind: e for e in r.trace}
    asked = by_kind["checkin.requested"]
    assert by_kind["tool.called"].id in asked.caused_by
    assert by_kind["policy.decided"].id in asked.caused_by
    assert by_kind["policy.decided"].payload["outcome"] == "ask"


def test_a_redacted_decision_note_is_reported_under_the_check_in_decision_path():
    spec = SPEC.replace("agent g { tools = [refund]", "agent g { redact = [keys] tools = [refund]")
    spec += 'redact keys { patterns = [/sk-[a-z]{8,}/] }\n'
    agent, _ = make(spec, [call("refund", amount=200), "done"],
                    tools={"refund": lambda amount: "ok"})
    r = agent.run("refund")
    r2 = agent.resume(r.checkpoint, approve(r.checkin, by="ops", note="key sk-abcdefghij"))
    paths = [p for x in payloads(r2, "redaction.applied") for p in x["paths"]]
    assert paths and all(not p.startswith("$") for p in paths), paths
    assert "sk-abcdefghij" not in r2.trace.to_json()


def test_a_fresh_agent_resuming_an_inner_pause_numbers_calls_after_the_inner_run_s():
    """The inner run's model calls share the session's numbering: a fresh agent that counted
    only the outer run's calls numbered the inner run's next call like an earlier one."""
    spec = """
    agent outer { tools = [ask_inner] }
    agent inner { tools = [leaf] }
    tool ask_inner { description = "ask" input { q: string } impl = agent(inner) }
    tool leaf { description = "leaf" input { x: integer } check_in = true impl = returns("L") }
    """
    store = memory()
    first, _ = make(spec, [call("ask_inner", q="go"), call("leaf", x=1)], name="outer",
                    store=store)
    r = first.run("go")
    assert r.paused
    second, _ = make(spec, ["inner done", "outer done"], name="outer", store=store)
    r2 = second.resume(r.run_id, approve(r.checkin, by="ops"))
    assert (r2.outcome, r2.answer) == ("answered", "outer done")
    (runs,) = r2.inner.values()
    (inner,) = runs.runs.values()
    numbers = [e.payload["call"] for e in inner if e.kind == "llm.called"]
    numbers += [p["call"] for p in payloads(r2, "llm.called")]
    assert sorted(numbers) == [1, 2, 3, 4]


def test_a_resumed_error_run_brings_its_answer_into_the_conversation():
    """§1: runs of a conversation share history; the answer of an `error` run resumed
    afterwards was missing from the next run's history."""
    spec = "agent g { tools = [t] }\ntool t { description = \"t\" impl = returns(\"T\") }"
    agent, prov = make(spec, [call("t"), "first done", "second done"], fail_at=2)
    conv = agent.conversation()
    r1 = conv.run("hello one")
    assert r1.outcome == "error" and r1.checkpoint is not None
    prov.fail_at = None
    assert agent.resume(r1.checkpoint).answer == "first done"
    conv.run("hello two")
    seen = [m.content for m in prov.requests[-1].messages]
    assert "first done" in seen and seen[-1] == "hello two"
    assert conv.runs.count(r1.run_id) == 1


def test_a_conversation_takes_no_message_while_a_run_waits_on_a_check_in():
    """The next run went on without the paused run's messages, and the later resume overwrote
    the conversation's history with the paused run's."""
    agent, _ = make(SPEC, [call("refund", amount=200), "one done"],
                    tools={"refund": lambda amount: "ok"})
    conv = agent.conversation()
    r1 = conv.run("refund please")
    assert r1.paused
    with pytest.raises(ValueError, match="waiting on a check-in; answer it first"):
        conv.run("msg two")
    r2 = agent.resume(r1.checkpoint, approve(r1.checkin, by="ops"))
    assert r2.answer == "one done"
    assert [m.content for m in conv.history][0] == "refund please"
    assert conv.history[-1].content == "one done"


def test_a_conversation_whose_run_another_agent_resumed_says_so_not_to_answer_it():
    """The paused run was resumed by another agent sharing the store (§10: any process sharing
    the store may): the conversation kept telling to answer a check-in that no longer waited,
    which no call could do."""
    store = memory()
    agent, _ = make(SPEC, [call("refund", amount=200), "one done"],
                    tools={"refund": lambda amount: "ok"}, store=store)
    conv = agent.conversation()
    r1 = conv.run("refund please")
    other, _ = make(SPEC, ["done elsewhere"], tools={"refund": lambda amount: "ok"}, store=store)
    assert other.resume(r1.run_id, approve(r1.checkin, by="ops")).answer == "done elsewhere"
    with pytest.raises(ValueError, match=r"was resumed through another agent or process .*"
                                         r"start a new one with `agent\.conversation\(\)`"):
        conv.run("msg two")
    assert agent.conversation().run("a fresh start").outcome in ("answered", "paused")
