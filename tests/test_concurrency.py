"""A host loads a program once and serves many requests at once (docs/embedding.md, tooling.md §6):
threads running agents of one program, asyncio tasks awaiting `arun`, `check` from several
threads. Each concurrent result must equal the sequential one (answers, traces), and no run's
redaction memory, skill cursor or check-in may reach another's. The interleavings that matter
are forced where they can be (a check started inside another); the stress tests are short."""
from __future__ import annotations

import asyncio
import re
import threading

import afp_dsl as afp
from afp_dsl import checks
from afp_dsl.analysis import Analysis
from afp_dsl.checks import schemas
from afp_dsl.loader import load as load_files
from afp_dsl.providers.base import Provider, Reply, ToolCall

THREADS = 8

# An invalid raw output schema: AFP301 alone, never an AFP304 for `result.zz` (no cascade).
BROKEN = """
agent a { tools = [t] graph = g policies = [p] }
tool t { description = "t" input { x: integer }
         output = { type: "object", properties: { a: 5 }, additionalProperties: false } }
skill s1 { description = "one" tools = [t] }
skill s2 { description = "two" }
graph g { entry s1 route s1 -> s2 on t when result.a == 1 and result.zz > 2 }
policy p { after t { deny when result.a == "x" because "no" } }
"""
CHECKED = [BROKEN, "agent a { tools = [lookup_ordr] }", "examples/support/support.afp",
           "examples/it_helpdesk/it_helpdesk.afp", """
agent b { tools = [t] graph = g }
tool t { description = "t" input { x: integer } output { a: integer } }
skill s1 { description = "one" tools = [t] }
skill s2 { description = "two" }
graph g { entry s1 route s1 -> s2 on t when result.zz > 2 }
"""]


def _in_threads(work, n: int = THREADS) -> list:
    """`work(i)` for i < n, each in its own thread, all released at once; the results in order.
    An exception in a thread is re-raised here."""
    gate, out, errors = threading.Barrier(n), [None] * n, []

    def body(i: int) -> None:
        gate.wait()
        try:
            out[i] = work(i)
        except Exception as e:  # noqa: BLE001 (re-raised in the test's thread)
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _shown(diags) -> list:
    return [(d.code, d.message, [(lab.span.start, lab.span.end) for lab in d.labels]) for d in diags]


# ---------------------------------------------------------------- check
def test_a_check_ending_inside_another_leaves_its_afp301_schemas_alone():
    """What another thread's check does when it ends between `check_schemas` and the expression
    rules (it used to clear the module-level set of AFP301 schemas, so `result.zz` became an
    AFP304 cascade): forced by a rule that runs a whole check at that point."""
    program = load_files(text=BROKEN, name="<text>").program

    def another_check(_analysis):
        assert afp.check("agent other { }") == []
        return ()
    rules = list(checks.CHECKS)
    rules.insert(rules.index(schemas.check_schemas) + 1, another_check)
    found = checks.run_checks(Analysis(program), tuple(rules))
    assert [d.code for d in found] == ["AFP301"]
    assert not schemas.is_broken(program.modules[0].decls[1].output)  # (dropped with its call)


def test_checks_in_threads_equal_the_sequential_ones():
    expected = [_shown(afp.check(t)) for t in CHECKED]
    assert [e[0][0] for e in expected[:2]] == ["AFP301", "AFP101"] and len(expected[0]) == 1
    rounds = 3
    got = _in_threads(lambda i: [_shown(afp.check(CHECKED[(i + k) % len(CHECKED)]))
                                 for k in range(rounds * len(CHECKED))])
    for i, seen in enumerate(got):
        for k, diags in enumerate(seen):
            assert diags == expected[(i + k) % len(CHECKED)], (i, k)


# ---------------------------------------------------------------- runs
REDACTING = """
agent desk {
  max_iterations = 4
  tools          = [lookup]
  policies       = [guard]
  redact         = [cards]
}
tool lookup {
  description = "Look a card up."
  input { card_number: string, amount: number }
}
redact cards { keys = ["card_number"] }
policy guard { before lookup { ask when args.amount > 100 because "big" } }
"""


class Echo(Provider):
    """Stateless, so one object serves every run at once: calls `lookup` with the user's card
    and amount ("card C amount N"), then answers with what the tool said."""

    def complete(self, request):
        user = next(m.content for m in request.messages if m.role == "user")
        tool = [m for m in request.messages if m.role == "tool"]
        if not tool:
            _, card, _, amount = user.split()
            args = {"card_number": card, "amount": int(amount)}
            return Reply(tool_calls=(ToolCall("c1", "lookup", args),), stop_reason="tool_use")
        return Reply(text=f"{user}: {tool[-1].content}")


def _lookup(card_number: str, amount: int) -> str:
    return f"card {card_number} holds {amount}"


async def _alookup(card_number: str, amount: int) -> str:
    for _ in range(3):
        await asyncio.sleep(0)  # (hands the loop to the other runs mid-call)
    return f"card {card_number} holds {amount}"


def _message(i: int) -> str:
    return f"card SECRET{i:04d}X amount {50 + 40 * (i % 3)}"  # amounts 50, 90, 130: every third asks


def _numbered_once(results) -> None:
    """Every LLM call of the runs sharing an agent got its own number, 1 to their count."""
    calls = [c for r in results for c in _recorded_calls(r)]
    assert sorted(calls) == list(range(1, len(calls) + 1))


def _agent(program, tool=_lookup, effects=None):
    return program.agent(provider=Echo(), tools={"lookup": tool}, effects=effects or afp.Effects())


def _seen(result) -> tuple:
    """What a run shows, its run id and the session's LLM call numbers aside (an agent serving
    runs at once numbers their calls in the order they come)."""
    text = re.sub(r'"call":\d+', '"call":N', result.trace.to_json().replace(result.run_id, "RUN"))
    checkin = None if result.checkin is None else (result.checkin.tool, result.checkin.args)
    return result.outcome, result.answer, checkin, text


def test_runs_in_threads_equal_the_sequential_ones_and_keep_their_secrets():
    program = afp.load(REDACTING)
    expected = [_seen(_agent(program).run(_message(i))) for i in range(THREADS)]
    shared = _agent(program)  # one agent serving every request
    got = _in_threads(lambda i: shared.run(_message(i)))
    assert len({r.run_id for r in got}) == THREADS
    _numbered_once(got)
    for i, result in enumerate(got):
        assert _seen(result) == expected[i]
        after_start = expected[i][3].split('"kind":"context.composed"', 1)[1]  # (the message
        assert f"SECRET{i:04d}X" not in after_start and "[REDACTED]" in after_start  # is raw)
        assert result.paused == (i % 3 == 2)
        if result.paused:
            assert result.checkin.run_id == result.run_id
    for i, result in enumerate(got):  # the answer is recorded redacted, returned raw
        if not result.paused:
            assert result.answer.endswith(f"card SECRET{i:04d}X holds {50 + 40 * (i % 3)}")


def test_paused_runs_resumed_at_once_each_take_their_own_checkin():
    program = afp.load(REDACTING)
    store = afp.stores.memory()
    agent = program.agent(provider=Echo(), tools={"lookup": _lookup}, store=store)
    paused = [agent.run(f"card SECRET{i:04d}X amount 200") for i in range(THREADS)]
    assert all(r.paused for r in paused)
    got = _in_threads(lambda i: agent.resume(paused[i].checkpoint,
                                             afp.approve(paused[i].checkin, by=f"p{i}")))
    for i, result in enumerate(got):
        assert result.run_id == paused[i].run_id and result.outcome == "answered"
        assert result.answer.endswith(f"card SECRET{i:04d}X holds 200")
        decided = [e.payload for e in result.trace if e.kind == "checkin.decided"]
        assert decided and decided[-1].get("by") == f"p{i}", decided


def test_aruns_gathered_equal_the_sequential_ones():
    program = afp.load(REDACTING)
    n = 24
    expected = [_seen(_agent(program, _alookup).run(_message(i))) for i in range(n)]
    shared = _agent(program, _alookup)

    async def all_at_once():
        return await asyncio.gather(*(shared.arun(_message(i)) for i in range(n)))
    got = asyncio.run(all_at_once())
    assert len({r.run_id for r in got}) == n
    _numbered_once(got)
    assert [_seen(r) for r in got] == expected


HELPDESK = [
    [("verify_user", {"username": "ana.ruiz"})],
    "I sent a six-digit code to your phone. What is it?",
    [("reset_password", {"username": "ana.ruiz", "code": "482913"})],
    "Done: open the link to choose a new password.",
]


def _chat(program, k: int) -> tuple:
    chat = program.agent(provider=afp.providers.mock(HELPDESK), effects=afp.Effects()).conversation()
    first = chat.run("I forgot my password, my username is ana.ruiz")
    second = chat.run(f"the code is 48291{k % 10}" if k % 2 else "hello again")
    return first.answer, second.answer, chat.cursor, second.trace.to_json()


def test_conversations_in_threads_keep_their_own_cursor_and_history():
    program = afp.load("examples/it_helpdesk/it_helpdesk.afp")
    expected = [_chat(program, k) for k in range(THREADS)]
    assert expected[1][2] == "reset" and "482911" not in expected[1][3]
    assert _in_threads(lambda k: _chat(program, k)) == expected


# ---------------------------------------------------------------- the session's LLM call numbers
class Numbers(Echo):
    """`Echo`, noting the call number each request carries, per user message; the run whose
    message starts with "fail" fails its first call, once `started` (another run's call) is set,
    so that the other run's call is numbered after it and before the failure is reported."""

    def __init__(self):
        self.seen: dict[str, list[int]] = {}
        self.started: asyncio.Event | None = None

    def complete(self, request):
        user = next(m.content for m in request.messages if m.role == "user")
        self.seen.setdefault(user, []).append(request.call_number)
        return super().complete(request)

    async def acomplete(self, request):
        user = next(m.content for m in request.messages if m.role == "user")
        if not user.startswith("fail"):
            self.started.set()
            return self.complete(request)
        self.seen.setdefault(user, []).append(request.call_number)
        await self.started.wait()
        raise RuntimeError("model down")


def _recorded_calls(result) -> list[int]:
    return [e.payload["call"] for e in result.trace if e.kind == "llm.called"]


def test_a_run_started_while_another_builds_its_request_leaves_its_call_number_alone(monkeypatch):
    """Another run (another thread) taking an LLM call number between a run's taking its own and
    building its request: the request and the `llm.called` event keep the run's own number
    (they used to read the shared counter again, both getting the other run's). Forced by
    starting the other run inside `model_view.sent`, which runs at that point."""
    from afp_dsl import interp
    program, provider = afp.load(REDACTING), Numbers()
    agent = program.agent(provider=provider, tools={"lookup": _lookup})
    sent, inner = interp.model_view.sent, []

    def sent_and_another_run(*args):
        if not inner:
            inner.append(None)
            inner[0] = agent.run("card INNER0001X amount 10")
        return sent(*args)
    monkeypatch.setattr(interp.model_view, "sent", sent_and_another_run)
    outer = agent.run("card OUTER0001X amount 10")
    assert _recorded_calls(outer) == provider.seen["card OUTER0001X amount 10"] == [1, 4]
    assert _recorded_calls(inner[0]) == provider.seen["card INNER0001X amount 10"] == [2, 3]


def test_a_failed_llm_call_names_its_own_number_while_other_aruns_go_on():
    program, provider = afp.load(REDACTING), Numbers()
    agent = program.agent(provider=provider, tools={"lookup": _alookup})

    async def both():
        provider.started = asyncio.Event()
        return await asyncio.gather(agent.arun("fail SECRET0009X amount 10"),
                                    agent.arun("card SECRET0001X amount 10"))
    failed, fine = asyncio.run(both())
    assert provider.seen["fail SECRET0009X amount 10"] == [1] and fine.outcome == "answered"
    assert failed.outcome == "error" and failed.error.startswith("AFP502 provider error on LLM call #1:")


# ---------------------------------------------------------------- one conversation, one message at a time
CHAT = 'agent c { tools = [wait] }\ntool wait { description = "w" input { s: string } }\n'


def test_a_second_message_to_a_conversation_answering_one_is_refused_not_lost():
    """Before: two `arun`s of one conversation gathered both answered, and the history kept only
    the second exchange (both started from the same history). Now the second is refused at
    once, the first's turn is kept, and the conversation takes the next message afterwards."""
    gate = asyncio.Event()

    async def wait(s: str) -> str:
        await gate.wait()
        return s

    agent = afp.load(CHAT).agent(provider=afp.providers.mock(
        [[("wait", {"s": "x"})], "first answer", "second answer"]), tools={"wait": wait})
    chat = agent.conversation()

    async def both():
        first = asyncio.ensure_future(chat.arun("one"))
        await asyncio.sleep(0)  # (the first run is waiting in its tool)
        try:
            await chat.arun("two")
            refused = None
        except ValueError as exc:
            refused = str(exc)
        gate.set()
        return await first, refused
    first, refused = asyncio.run(both())
    assert refused is not None and "still answering its last message" in refused
    assert first.answer == "first answer" and chat.busy is False
    assert chat.run("two").answer == "second answer"
    users = [m.content for m in chat.history if m.role == "user"]
    assert users == ["one", "two"]


def test_a_conversation_is_given_back_when_its_run_cannot_start_or_raises():
    from afp_dsl.effects import Effects
    ids = iter(["", "run-2"])  # (an empty run id: refused before anything runs)
    program = afp.load(CHAT)
    agent = program.agent(provider=afp.providers.mock(["fine"]), tools={"wait": lambda s: s},
                          effects=Effects(run_ids=lambda: next(ids)))
    chat = agent.conversation()
    try:
        chat.run("one")
    except Exception:  # noqa: BLE001 - what matters is that the conversation is free again
        pass
    assert chat.busy is False and chat.run("two").answer == "fine"

    def boom(s: str) -> str:
        raise KeyboardInterrupt  # (what the core does not handle: the run is cut short)
    other = program.agent(provider=afp.providers.mock([[("wait", {"s": "x"})], "never"]),
                          tools={"wait": boom})
    talk = other.conversation()
    try:
        talk.run("one")
    except KeyboardInterrupt:
        pass
    assert talk.busy is False
