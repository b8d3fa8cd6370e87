"""The clean shapes and vouched key tuples a run finds are shared by the runs of the same rules.

`CleanCheck._check_clean` hands a redactor its rule set's sets while nothing is remembered: a
second run of an agent starts knowing the payload shapes the first found clean (its ledger rows,
its replies, its compositions), and checks only their values. These tests check that such a run
records exactly what a run of a freshly loaded program records (nothing shared), that a secret
remembered in a later run is still scrubbed from shapes an earlier run found clean, that a run
with a secret neither uses nor grows the shared sets, and that no shape holding run data (a host
link's reason, an event id) reaches them.
"""
from __future__ import annotations

import pytest

import afp_dsl as afp
from afp_dsl import toolcall_policy
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock
from afp_dsl.redaction import Redactor, _RuleSet

SPEC = """
agent a {
  max_iterations = 8
  context = [steer]
  tools = [echo, login]
  skills = [notes]
  redact = [secrets]
  policies = [screen%s]
}
steering steer { prompt = "STEER" }
tool echo {
  description = "Echo a word."
  input { word: string }
}
tool login {
  description = "Log in."
  input { user: string }
}
tool lookup {
  description = "Look up."
  input { q: string }
}
skill notes { description = "open notes" body = "NOTES" tools = [lookup] }
redact secrets {
  keys = ["password"]
  patterns = [/sk-[A-Za-z0-9]{12,}/]
}
policy screen {
  before echo {
    deny when args.word == "forbidden" because "Not that word."
    allow when args.word matches /^w[0-9]+$/
  }
  after * {
    deny when result mentions "leak" because "It leaks."
  }
}
"""
HOST = '\npolicy host_link { impl = python("test_redaction_shared:host_link") }\n'
PLAIN = [[("echo", {"word": "w1"})], [("read_skill", {"id": "notes"})],
         [("lookup", {"q": "x"})], [("echo", {"word": "w2"})], "done"]
SECRET = [[("echo", {"word": "w1"})], [("login", {"user": "hunter22"})],
          [("echo", {"word": "hunter22"})], [("echo", {"word": "w3"})], "done"]


def host_link(ctx: dict):
    word = ctx.get("args", {}).get("word")
    return ("deny", f"saw {word}") if word in ("w9", "sk-abcdefghijklmnop") else None


GRAPH = """
skill more { description = "more notes" body = "MORE" tools = [echo] }
graph flow {
  entry notes
  route notes -> more on echo
}
"""


def _program(host: bool = False, graph: bool = False):
    spec = SPEC % (", host_link" if host else "") + (HOST if host else "")
    if graph:  # (a routed skill's piece has a cause: an event id)
        spec = spec.replace("skills = [notes]", "skills = [notes, more]\n  graph = flow") + GRAPH
    return afp.load(spec)


def _run(program, script: list) -> list:
    tools = {"echo": lambda word: word, "lookup": lambda q: q,
             "login": lambda user: {"password": user}}
    agent = program.agent(provider=mock(script), tools=tools,
                          effects=Effects(run_ids=counter_ids("r")))
    result = agent.run("go")
    return [(e.kind, e.caused_by, e.source, e.payload, e.seq, e.time) for e in result.trace]


def _shared(program) -> _RuleSet:
    return _RuleSet.of(tuple(program.agent(provider=mock(["x"])).plan.redact), False)


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("first,second", [(PLAIN, PLAIN), (PLAIN, SECRET), (SECRET, PLAIN),
                                          (SECRET, SECRET)])
def test_a_later_run_records_what_a_run_of_a_fresh_program_records(first, second, graph) -> None:
    program = _program(graph=graph)
    _run(program, first)
    assert _shared(program).clean_shapes  # (the second run has something to start from)
    assert _run(program, second) == _run(_program(graph=graph), second)


def test_a_later_run_walks_no_payload_of_a_known_shape(monkeypatch) -> None:
    program = _program()
    _run(program, PLAIN)
    full, walked = Redactor.is_clean, []

    def is_clean(self, value):
        walked.append(type(value) is dict and ("stop" in value or "system_chars" in value
                                                or "policy" in value))
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    _run(program, PLAIN)
    assert walked.count(True) == 0
    walked.clear()
    _run(_program(), PLAIN)  # (a fresh program walks them: the count above means something)
    assert walked.count(True) > 3


def test_a_secret_remembered_later_is_scrubbed_from_a_shape_found_clean_before() -> None:
    program = _program()
    _run(program, PLAIN)
    events = _run(program, SECRET)
    replies = [p for kind, _, _, p, *_ in events if kind == "llm.replied"]
    assert replies[0]["tool_calls"][0]["args"] == {"word": "w1"}
    assert replies[2]["tool_calls"][0]["args"] == {"word": "[REDACTED]"}
    called = [p for kind, _, _, p, *_ in events if kind == "tool.called"]
    assert called[2]["args"] == {"word": "[REDACTED]"}


def test_a_run_with_a_secret_neither_uses_nor_grows_the_shared_sets(monkeypatch) -> None:
    program = _program()
    _run(program, PLAIN)
    shared = _shared(program)
    seen, at_secret = [], []
    check = Redactor._check_clean

    def spy(self):
        if self._memory.version and not at_secret:  # (the shared sets when it is remembered)
            at_secret.append((set(shared.clean_shapes), dict(shared.vouched_keys)))
        check(self)
        seen.append((self._memory.version, self._clean_shapes is shared.clean_shapes,
                     self._vouched_keys is shared.vouched_keys))
    monkeypatch.setattr(Redactor, "_check_clean", spy)
    _run(program, [[("login", {"user": "hunter22"})], [("echo", {"word": "w1"})],
                   [("echo", {"word": "w2"})], "done"])
    assert any(v > 0 for v, *_ in seen)
    assert all(uses == (v == 0) and keys == (v == 0) for v, uses, keys in seen)
    assert at_secret == [(shared.clean_shapes, shared.vouched_keys)]


def test_no_shared_shape_holds_run_data() -> None:
    program = _program(host=True, graph=True)
    events = _run(program, [[("echo", {"word": "w9"})], [("echo", {"word": "w1"})],
                            [("echo", {"word": "w2"})], "done"])
    assert any("event" in piece for kind, _, _, p, *_ in events if kind == "context.composed"
               for piece in p["pieces"])  # (pieces with causes were composed)
    shapes = _shared(program).clean_shapes
    assert "r-1:" not in repr(shapes)  # (event ids: a composition's causes are its values)
    assert any(s[0] == "context.composed" and "route" in s[1] for s in shapes)
    kept = [payload for payload, shape in toolcall_policy._HEADS.values() if shape in shapes]
    assert {p["policy"] for p in kept} == {"screen"}  # (a host link's reason: not kept)
    assert not any("w9" in repr(p) for p, _ in toolcall_policy._HEADS.values())


def test_a_host_reason_is_checked_at_every_run() -> None:
    program = _program(host=True)
    for _ in range(2):
        events = _run(program, [[("echo", {"word": "w9"})],
                                [("echo", {"word": "sk-abcdefghijklmnop"})], "done"])
        reasons = [p["reason"] for kind, _, _, p, *_ in events
                   if kind == "policy.decided" and p["policy"] == "host_link"]
        assert reasons == ["saw w9", "saw [REDACTED]"]


def test_runs_in_threads_record_what_runs_alone_record() -> None:
    """Runs of one program in threads, some remembering a secret, share the rule set's sets while
    they run: each records what it records alone (switching threads as often as CPython can)."""
    import sys
    from concurrent.futures import ThreadPoolExecutor
    scripts = [PLAIN, SECRET] * 6
    alone = {id(s): _run(_program(graph=True), s) for s in (PLAIN, SECRET)}
    program = _program(graph=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            traces = list(pool.map(lambda s: _run(program, s), scripts))
    finally:
        sys.setswitchinterval(interval)
    for script, trace in zip(scripts, traces):
        assert trace == alone[id(script)]
