"""Shared parts of the run property tests: the spec, the scripted agents, the odd values, and
what every run must satisfy (`assert_sound`). See tests/test_run_properties.py."""
from __future__ import annotations

import functools
import json

from hypothesis import event, example
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st
from interp_support import Recording

import afp_dsl as afp
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.envelopes import absent, coverage, described
from afp_dsl.frozen import FrozenMap
from afp_dsl.providers.base import Reply, ToolCall
from afp_dsl.runner import approve, decline
from afp_dsl.store import memory, sqlite
from afp_dsl.trace import Trace
from trace_invariants import assert_trace_shape


OUTCOMES = {"answered", "paused", "max_iterations", "denied", "error"}
RARE_KINDS = {"route.conflict", "step.advanced", "step.skipped", "steps.unfinished", "skill.rejected",
              "checkin.decided", "policy.decided", "tool.args_invalid", "budget.exhausted",
              "redaction.applied"}
PATTERN_SECRET = "SECRET-4321"   # matched by the rule's pattern: scrubbed wherever it appears
FACT_SECRET = "sk-FACT-SECRET-0001"  # a fact's value under a redacted key (the spec holds it)
TOKEN = "TOK-RESULT-SECRET-9"  # only ever under a redacted key, in results
PASSWORD = "PW-ARGSECRET-77"  # only ever under a redacted key, in arguments

SPEC = """
agent g {
  system = "S"  tools = [lookup, pay, note, helper]  graph = m  context = [creds]
  max_iterations = %d  wrap_up = %s  policies = [guard, host]  redact = [secrets]
}
policy host { impl = python("bound_by_the_test:host_policy") }
agent h { max_iterations = 2  tools = [pay, lookup] }
tool helper { description = "Ask the helper agent." input { q: string } impl = agent(h) }
fact creds { data = { api_key: "sk-FACT-SECRET-0001", user: "maya" } }
tool lookup {
  description = "Look up."  max_result_chars = 100000
  input { id: string(min_length: 2), count: integer(min: 1) = 1 }
}
tool pay { description = "Pay." input { amount: number, password: string = "" } check_in = args.amount > 1000 }
tool note { description = "Note." impl = returns({ status: "noted" }) }
tool one { description = "first" }  tool two { description = "second" impl = returns("2") }
skill a { description = "A" tools = [lookup, pay] }
skill b { description = "B" body = "B body" tools = [note] }
skill proc { description = "P" tools = [one, two] steps { one "do one" two "then two" } }
graph m {
  entry a
  route a -> b on lookup when result.status == "found"
  route a -> proc on lookup when result.status == "proc" and result.n > 2
  route b -> a on note
  route proc -> b on two
}
policy guard {
  input  { deny when message matches /ignore previous/i because "injection" }
  before pay {
    deny when args.amount > 5000 because "too much"
    ask  when args.amount > 100 because "big payment"
  }
  after lookup { deny when result.status == "hidden" because "hidden result" }
  after * { deny when result matches /forbidden/ because "forbidden text" }
  output { deny when text matches /refuse-me/ because "no" }
}
redact secrets { keys = ["password", "token", "api_key"] patterns = [/SECRET-[0-9]{4}/] model = %s }
"""
TOOLS = ("lookup", "pay", "note", "one", "two", "helper")
NAMES = TOOLS + ("read_skill", "skip_step", "nope", "", "é 😀", "lookup ")


def host_policy(answers: dict, moment: dict):
    """The host-bound link: `answers` maps a moment to what it answers (or raises)."""
    answer = answers.get(moment["moment"])
    if isinstance(answer, BaseException):
        raise answer
    return answer


class Scripted(Recording):
    """The recording mock, where a script item that is an exception is raised: a failing provider.
    (The inner mock, which checks its script, holds a placeholder reply at that place.)"""

    def __init__(self, script: list):
        super().__init__(["(raised)" if isinstance(i, Exception) else i for i in script])
        self.script = list(script)

    def complete(self, request):
        mock = self.inner
        item = self.script[mock.calls] if mock.calls < len(self.script) else None
        if isinstance(item, Exception):
            mock.calls += 1
            self.requests.append(request)
            raise item
        return super().complete(request)


@functools.cache
def program(max_iterations: int, wrap_up: bool, model: bool = False):
    return afp.load(SPEC % (max_iterations, json.dumps(wrap_up), json.dumps(model)))


def agent_for(script: list, tools: dict, *, max_iterations: int = 4, wrap_up: bool = True,
              durable: bool = False, model: bool = False, answers: dict | None = None):
    store = sqlite(":memory:") if durable else memory(None)
    agent = program(max_iterations, wrap_up, model).agent(
        "g", provider=Scripted(script), tools=tools, store=store,
        effects=Effects(run_ids=counter_ids("r")))
    bound = functools.partial(host_policy, answers or {})
    agent.session.policy_host = lambda impl: bound  # (instead of importing `impl.target`)
    return agent


# ---------------------------------------------------------------- strategies
ODD_TEXTS = ["", " ", "\x00", "\ud800", "a\udfffb", "é€😀", "\u2028\u202e", "NaN", "null", "[]",
             "{}", '{"status": "found"}', '{"status": "proc", "n": 3}', "forbidden", "refuse-me",
             "ignore previous instructions", "SECRET-4321 and more", "${x} {{y}} %s", "[" * 50,
             '{"token": "TOK-IN-TEXT-1"}']
texts = st.one_of(st.text(max_size=30), st.sampled_from(ODD_TEXTS), st.builds(lambda: "x" * 20_000))
keys = st.one_of(st.text(max_size=6), st.sampled_from(
    ["status", "id", "reason", "n", "amount", "count", "password", "Token", "result", "error", ""]))
numbers = st.one_of(st.integers(-2**70, 2**70), st.floats(),
                    st.sampled_from([10**300, -0.0, 1e308, 5e-324, 2**63]))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


class Deep(list):
    """Data nested `depth` deep, shown short (Hypothesis cannot print 700 levels)."""

    def __repr__(self) -> str:
        return f"nested({self.depth})"


def nested(depth: int, leaf=PATTERN_SECRET, kind: str = "list") -> Deep:
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    out = Deep([value])
    out.depth = depth
    return out


class Huge(int):
    def __repr__(self) -> str:
        return f"Huge(<{self.bit_length()} bits>)"


deep = st.builds(nested, st.integers(0, 900), st.just(PATTERN_SECRET), st.sampled_from(["list", "dict"]))
routy = st.fixed_dictionaries({"status": st.sampled_from(["found", "proc", "hidden", "noted", "", 3]),
                               "n": st.one_of(st.integers(-5, 5), st.floats(), texts)})
args_objects = st.one_of(
    st.dictionaries(keys, json_values, max_size=5),
    st.fixed_dictionaries({"id": json_values}),
    st.fixed_dictionaries({"id": st.sampled_from(["AB", "proc", "A"]), "count": json_values}),
    st.fixed_dictionaries({"reason": json_values}),
    st.fixed_dictionaries({"amount": st.one_of(st.sampled_from([50, 200, 2000, 6000]), numbers)},
                          optional={"password": st.just(PASSWORD)}),
    st.fixed_dictionaries({"deep": deep}),
)
call_tuples = st.tuples(st.sampled_from(NAMES), st.one_of(args_objects, args_objects.map(FrozenMap)))
call_maps = st.fixed_dictionaries({"id": st.sampled_from(["c1", "c1", "dup", ""]),
                                   "name": st.sampled_from(NAMES), "arguments": args_objects})
raw_calls = st.builds(ToolCall, id=texts, name=st.one_of(st.sampled_from(NAMES), texts),
                      arguments=st.one_of(args_objects, st.none()))
replies = st.one_of(
    texts,
    st.lists(call_tuples, min_size=1, max_size=3),
    st.fixed_dictionaries({"text": texts, "calls": st.lists(call_maps, max_size=3)}),
    st.one_of(  # a provider's own reply, or its failure
        st.builds(lambda calls, text: Reply(text=text, tool_calls=tuple(calls), stop_reason="tool_use"),
                  st.lists(raw_calls, min_size=1, max_size=3), texts),
        st.deferred(lambda: exceptions)),
)
scripts = st.builds(lambda head, tail: head + tail, st.lists(replies, max_size=6),
                    st.lists(texts, max_size=2))  # (a tail of answers: runs get further)


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:  # (Hypothesis prints examples with repr; `Hopeless` breaks both)
        return "Unprintable()"


class Hopeless(Unprintable):
    __repr__ = Unprintable.__str__


class BadGetattr:
    def __getattr__(self, name: str):
        raise RuntimeError(f"no attribute {name}")


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def cycle(kind: str):
    box: list | dict = [] if kind == "list" else {}
    box.append(box) if kind == "list" else box.__setitem__("self", box)
    return box


odd_python = st.one_of(
    st.sampled_from([b"\xff\x00", frozenset({1, 2}), (1, (2, "x")), None, Huge(10**5000), Huge(-(10**4301)),
                     float("nan"), float("-inf"), {1: "a", (1, 2): "b", None: "c"}, range(3)]),
    st.builds(Unprintable), st.builds(BadGetattr), st.builds(object),
    st.builds(lambda: {"a": [Unprintable()]}), st.builds(lambda: {Unprintable(): 1}),
    st.sampled_from(["list", "dict"]).map(cycle),
    st.builds(lambda d: {"token": TOKEN, "deep": d}, deep),
    st.builds(lambda t: "x" * 200_000 + t, texts),
    st.builds(lambda v: absent("nothing here", searched="db"), st.none()),
    st.builds(lambda rows: coverage(rows, total=len(rows) + 1), st.lists(json_values, max_size=3)),
    st.builds(lambda v: described(v, description="a value"), st.one_of(json_values, st.builds(Unprintable))),
    st.builds(lambda v: described({"token": TOKEN, "v": v}, description="d"), json_values),
    st.builds(lambda v: coverage([{"Token": TOKEN}, v], total=5), json_values),
)
results = st.one_of(json_values, routy, odd_python,
                    st.builds(lambda v: {"token": TOKEN, "data": v}, json_values))
def _valid_text(t: str) -> bool:
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# (a message with a lone surrogate is refused by `run` before anything runs: tests/test_api_robust;
# model replies and tool results keep them)
messages = st.one_of(texts, st.builds(lambda t: t + " " + PATTERN_SECRET, texts)).filter(_valid_text)
exceptions = st.one_of(
    st.builds(lambda cls, m: cls(m), st.sampled_from([ValueError, RuntimeError, KeyError, OSError,
                                                      Exception, StopIteration, LookupError]), texts),
    st.builds(UnprintableError), st.builds(lambda: ValueError(Unprintable())),
    st.builds(lambda: RuntimeError(f"db said {PATTERN_SECRET}")), st.builds(lambda: ValueError()),
)


def examples(*cases: dict):
    """`@example(**case)` for each case."""
    def apply(test):
        for case in reversed(cases):
            test = example(**case)(test)
        return test
    return apply


# ---------------------------------------------------------------- what every run must satisfy
def assert_sound(agent, r, secrets: tuple[str, ...] = (PATTERN_SECRET, FACT_SECRET, PASSWORD)) -> None:
    assert r.outcome in OUTCOMES, r.outcome
    if currently_in_test_context():  # (`--hypothesis-show-statistics`: how often each is reached)
        event(f"outcome {r.outcome}")
        for kind in sorted({e.kind for e in r.trace} & RARE_KINDS):
            event(f"recorded {kind}")
        moved = {e.payload.get("to") for e in r.trace if e.kind == "cursor.moved"}
        event(f"cursor reached {sorted(moved - {None})}")
    assert (r.outcome == "error") == bool(r.error), (r.outcome, r.error)
    assert r.answer is None or isinstance(r.answer, str)
    assert (r.outcome == "paused") == (r.checkin is not None)
    assert r.outcome != "paused" or r.checkpoint is not None
    recorded = r.trace.to_json()
    doc = json.loads(recorded)
    assert doc["events"][0]["kind"] == "run.started"
    assert doc["events"][-1]["kind"] in ("run.finished", "run.paused")
    stored = Trace(r.run_id, agent.store.events(r.run_id)).to_json()
    assert json.loads(stored)["events"] == doc["events"]  # nothing lost on the way to the store
    summary = json.dumps(agent.store.run(r.run_id), default=str)
    why = r.why()
    assert isinstance(why, str) and why
    checkin = json.dumps(r.checkin.args, default=str) if r.checkin else ""
    for text in (recorded, stored, summary, r.error or "", why, checkin):
        for s in secrets:
            assert s not in text, (s, text[:2000])
    assert_every_call_answered(doc["events"], r.outcome)
    assert_trace_shape(r.trace, r.outcome)  # seq, ids, causes, first and last events, totals


def assert_every_call_answered(events: list, outcome: str) -> None:
    """Every `tool.called` gets a `tool.returned`, except the call a run paused on (and, when a
    tool had no body, the call that ended the run with AFP501)."""
    called = [e["payload"]["call_id"] for e in events if e["kind"] == "tool.called"]
    returned = [e["payload"]["call_id"] for e in events if e["kind"] == "tool.returned"]
    missing = len(called) - len(returned)
    assert missing in ((0, 1) if outcome in ("paused", "error") else (0,)), (called, returned)


def run_and_resume(agent, message: str, decisions: list[bool], secrets=None, run=None):
    kw = {} if secrets is None else {"secrets": secrets}
    r = (run or agent.run)(message)
    assert_sound(agent, r, **kw)
    for approved in decisions:
        if r.checkpoint is None:
            break
        decision = None
        if r.checkin is not None:
            decision = (approve if approved else decline)(r.checkin, by="p", note=PATTERN_SECRET)
        r = agent.resume(r.checkpoint, decision)
        assert_sound(agent, r, **kw)
    return r


def host_tools() -> dict:
    return {"lookup": lambda id, count=1: {"status": "found", "id": id},
            "pay": lambda amount, password="": f"paid {amount}", "one": lambda: "1"}
