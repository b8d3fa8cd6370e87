"""A `context.composed` payload whose clean check is settled by its composition's shape
(`event_shapes.composed_shape`, `CleanCheck.is_clean_as`), and an `llm.replied` one settled by its
number of calls (`event_shapes.replied_shape`), record exactly what the full clean check records.

These tests run the same scripted runs with the shape and with every payload checked in full,
and compare the traces: plain compositions repeated at every iteration, skills opened (pieces
with causes), a `when` piece (evidence: always checked in full), a secret remembered after the
shape was found clean that equals a tool's name, an origin or a skill's name, and a pattern
matching a tool's name. They also check the cache itself.
"""
from __future__ import annotations

import pytest

import afp_dsl as afp
from afp_dsl import event_shapes
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock
from afp_dsl.redaction import Redactor

SPEC = """
agent a {
  system = "SYSTEM"
  max_iterations = 8
  context = [steer%s]
  tools = [echo, login]
  skills = [notes]
  redact = [secrets]
}
steering steer { prompt = "STEER" }
instruction cond { when = message matches /urgent/ prompt = "URGENT" }
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
  patterns = [/sk-[A-Za-z0-9]{12,}/%s]
}
"""
# `login` returns a password: remembered, it must be scrubbed from every later event
SCRIPTS = {
    "plain": [[("echo", {"word": "w1"})], [("echo", {"word": "w2"})], "done"],
    "skill opened": [[("read_skill", {"name": "notes"})], [("lookup", {"q": "x"})],
                     [("echo", {"word": "w"})], "done"],
    "tool name remembered": [[("echo", {"word": "w1"})], [("login", {"user": "echo"})],
                             [("echo", {"word": "w2"})], "done"],
    "origin remembered": [[("echo", {"word": "w1"})], [("login", {"user": "baseline"})],
                          [("echo", {"word": "w2"})], "done"],
    "skill remembered": [[("read_skill", {"name": "notes"})], [("login", {"user": "notes"})],
                         [("echo", {"word": "w"})], "done"],
    "prompt length remembered": [[("echo", {"word": "w1"})], [("login", {"user": "1234"})],
                                 "done"],
}


def _run(script: list, shaped: bool, monkeypatch: pytest.MonkeyPatch, *, message: str = "go",
         patterns: str = "", cond: bool = False) -> list:
    if not shaped:
        monkeypatch.setattr(event_shapes, "composed_shape", lambda comp: None)
    program = afp.load(SPEC % (", cond" if cond else "", patterns))
    tools = {"echo": lambda word: word, "lookup": lambda q: q,
             "login": lambda user: {"password": user}}
    agent = program.agent(provider=mock(script), tools=tools,
                          effects=Effects(run_ids=counter_ids("c")))
    result = agent.run(message)
    monkeypatch.undo()
    return [(e.kind, e.caused_by, e.payload) for e in result.trace]


@pytest.mark.parametrize("message,cond", [("go", False), ("go", True), ("urgent go", True)])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_shaped_composition_records_what_the_full_check_records(name, message, cond,
                                                                   monkeypatch) -> None:
    script = SCRIPTS[name]
    assert _run(script, True, monkeypatch, message=message, cond=cond) == \
        _run(script, False, monkeypatch, message=message, cond=cond)


@pytest.mark.parametrize("tool", ["echo", "lookup"])  # (`lookup` is offered once `notes` is open)
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_pattern_matching_a_tool_name_is_applied_as_by_the_full_check(name, tool,
                                                                        monkeypatch) -> None:
    """The pattern scrubs the run's data, never a declared name (`redaction_events`)."""
    patterns = f", /{tool[:-1]}[{tool[-1]}]/"
    shaped = _run(SCRIPTS[name], True, monkeypatch, patterns=patterns)
    assert shaped == _run(SCRIPTS[name], False, monkeypatch, patterns=patterns)
    composed = [p for kind, _, p in shaped if kind == "context.composed"]
    offered = {t["name"] for p in composed for t in p["tools"]}
    assert "echo" in offered and offered <= {"echo", "login", "lookup", "read_skill"}


def test_a_tool_name_remembered_after_the_shape_was_found_clean_is_kept_as_a_name(monkeypatch) -> None:
    """A secret equal to a tool's name is scrubbed from the data (the result it came in), not
    from where the trace names the tool."""
    events = _run(SCRIPTS["tool name remembered"], True, monkeypatch)
    composed = [p for kind, _, p in events if kind == "context.composed"]
    assert [t["name"] for t in composed[0]["tools"]][:2] == ["echo", "login"]
    assert [t["name"] for t in composed[-1]["tools"]][:2] == ["echo", "login"]
    returned = [p for kind, _, p in events if kind == "tool.returned" and p["tool"] == "login"]
    assert returned[0]["result"] == {"password": "[REDACTED]"}


def test_the_shape_is_taken(monkeypatch) -> None:
    """(The comparisons above compare something: a repeated composition is walked once.)"""
    full, walked = Redactor.is_clean, []

    def is_clean(self, value):
        walked.append(type(value) is dict and "system_chars" in value)
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    program = afp.load(SPEC % ("", ""))
    agent = program.agent(provider=mock(SCRIPTS["plain"]), tools={"echo": lambda word: word},
                          effects=Effects(run_ids=counter_ids("c")))
    agent.run("go")
    assert walked.count(True) == 1


def test_a_known_shape_skips_the_walk_until_a_secret_is_remembered(monkeypatch) -> None:
    red = Redactor(afp.load(SPEC % ("", "")).agent(provider=mock(["x"])).plan.redact)
    payload = {"pieces": [], "tools": [{"name": "echo", "origin": "baseline"}], "active": [],
               "system_chars": 12345}
    found = ("test", "echo", "baseline"), (12345,)
    assert red.is_clean_as(payload, lambda s: s, found)  # walked: the shape is remembered
    monkeypatch.setattr(Redactor, "is_clean", lambda self, value: pytest.fail("walked"))
    assert red.is_clean_as(payload, lambda s: s, found)
    monkeypatch.undo()
    assert not red.is_clean_as(payload, lambda s: s, (found[0], ("sk-abcdefghijklmnop",)))
    red.remember("baseline")  # a secret remembered: the shape is forgotten, the walk decides
    assert not red.is_clean_as(payload, lambda s: s, found)
    assert red.is_clean_as({"a": 1}, lambda s: 1 / 0, None)  # a shaper that fails: the walk


# ---------------------------------------------------------------- llm.replied (`replied_shape`)
REPLIES = {
    "plain": [[("echo", {"word": "w1"})], [("echo", {"word": "w2"})], "done"],
    "two calls": [[("echo", {"word": "w1"}), ("echo", {"word": "w2"})],
                  [("echo", {"word": "w3"})], "done"],
    # a pattern's match in the arguments after the shape was found clean
    "pattern later": [[("echo", {"word": "w1"})], [("echo", {"word": "sk-abcdefghijklmnop"})],
                      "done"],
    # a selected key in the arguments after the shape was found clean
    "key later": [[("echo", {"word": "w1"})], [("echo", {"password": "x", "word": "w"})],
                  "done"],
    # a secret remembered (the password `login` returns) that the next reply repeats
    "remembered later": [[("echo", {"word": "w1"})], [("login", {"user": "hunter22"})],
                         [("echo", {"word": "hunter22"})], "done"],
    "remembered tool name": [[("echo", {"word": "w1"})], [("login", {"user": "echo"})],
                             [("echo", {"word": "w2"})], "done"],
}


def _run_replies(script: list, shaped: bool, monkeypatch: pytest.MonkeyPatch) -> list:
    if not shaped:
        monkeypatch.setattr(event_shapes, "replied_shape", lambda out: None)
    events = _run(script, True, monkeypatch)
    monkeypatch.undo()
    return events


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_a_shaped_reply_records_what_the_full_check_records(name, monkeypatch) -> None:
    assert _run_replies(REPLIES[name], True, monkeypatch) == \
        _run_replies(REPLIES[name], False, monkeypatch)


def test_a_secret_in_a_reply_after_its_shape_was_found_clean_is_scrubbed(monkeypatch) -> None:
    replies = [p for kind, _, p in _run(REPLIES["remembered later"], True, monkeypatch)
               if kind == "llm.replied"]
    assert replies[0]["tool_calls"][0]["args"] == {"word": "w1"}
    assert replies[2]["tool_calls"][0]["args"] == {"word": "[REDACTED]"}
    replies = [p for kind, _, p in _run(REPLIES["pattern later"], True, monkeypatch)
               if kind == "llm.replied"]
    assert replies[1]["tool_calls"][0]["args"] == {"word": "[REDACTED]"}


def test_the_reply_shape_is_taken(monkeypatch) -> None:
    """(The comparisons above compare something: a reply of a known shape is not walked.)"""
    full, walked = Redactor.is_clean, []

    def is_clean(self, value):
        walked.append(type(value) is dict and "stop" in value)
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    _run(REPLIES["plain"], True, monkeypatch)
    assert walked.count(True) == 2  # (the first reply with a call, and the final one)


def test_equal_composition_shapes_mean_equal_payloads() -> None:
    """The shape is flat (fixed fields per piece and per tool): two compositions share a shape
    and values only when their payloads are equal, however their fields are split into pieces
    and tools; the shape holds no event id (those are values: the shape is shared by runs)."""
    import attrs

    from afp_dsl.context import Composition, Offered, Piece
    from afp_dsl.providers.base import ToolSpec
    from afp_dsl.source import Span

    def piece(name, reason="always", text="ab", cause=()):
        return Piece("fact", name, Span("<t>", 1, 3), reason, text, None, cause)

    def tool(name, origin="baseline", skill=None):
        return Offered(ToolSpec(name, "d", {}), origin, skill)
    variants = [((), ()), ((), (tool("a"),)), ((), (tool("a"), tool("b"))),
                ((), (tool("b"), tool("a"))), ((), (tool("a", "skill", "s"),)),
                ((piece("p"),), ()), ((piece("p"),), (tool("a"),)),
                ((piece("p"), piece("q")), (tool("a"),)), ((piece("q"), piece("p")), (tool("a"),)),
                ((piece("p", text="abc"),), (tool("a"),)), ((piece("p", "entry"),), (tool("a"),)),
                ((piece("p", cause=("r:1",)),), (tool("a"),)),
                ((piece("p", cause=("r:2", "r:1")),), (tool("a"),))]
    comps = [Composition("x" * len(p), p, (), t, ("s",) if t and t[0].skill else (), (),
                         frozenset()) for p, t in variants]
    for a in comps:
        for b in comps:
            same = event_shapes.composed_shape(a) == event_shapes.composed_shape(b)
            assert same == (event_shapes.composition_payload(a) == event_shapes.composition_payload(b))
    shapes = {event_shapes.composed_shape(c)[0] for c in comps[-3:]}
    assert len(shapes) == 2 and not any("r:1" in str(s) for s in shapes)  # (ids are values)
    with_evidence = attrs.evolve(comps[6], pieces=(attrs.evolve(comps[6].pieces[0],
                                                                detail=[{"x": 1}]),))
    assert event_shapes.composed_shape(with_evidence) is None  # (evidence: checked in full)
