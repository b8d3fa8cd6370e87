"""A tool call's policy walk settled from its program (`toolcall_policy._settled`) records
exactly what the full walk (`policy.walk_steps`) records.

Rule-only chains are walked by running their compiled checks over a program settled once per
steps tuple, and record their rows from cached heads; anything but plain True/False answers and
allowing rules falls back to the full walk. These tests run the same scripted runs with the
program and with every walk in full, and compare the traces: quiet links, rules that hold,
denials, asks, an unsure check (an evaluation error), a host link, a secret in a call id, and a
redaction rule that selects a ledger row's key.
"""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import afp_dsl as afp
from afp_dsl import toolcall_policy
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.evaluate import parse_result
from afp_dsl.policy import ALLOWED
from afp_dsl.providers import mock

SPEC = """
agent a {
  max_iterations = 8
  tools = [echo, other]
  policies = [screen_args, screen_any, screen_results, screen_other]%s
}
tool echo {
  description = "Echo a word."
  input { word: string }
}
tool other {
  description = "Another."
  input { word: string }
}
redact secrets {
  keys = [%s]
  patterns = [/sk-[A-Za-z0-9]{12,}/]
}
policy screen_args {
  before echo {
    deny when args.word == "forbidden" because "That word is not allowed."
    ask when args.word == "maybe" because "Sure?"
    allow when args.word matches /^w[0-9]+$/
  }
}
policy screen_any {
  before * {
    deny when args.word matches /drop\\s+table/i because "No SQL in arguments."
    allow when args.word > 3
  }
}
policy screen_other {
  before other {
    deny when message == "stop" because "Stopped."
    allow when args.word != "zz"
  }
}
policy screen_results {
  after echo {
    deny when result mentions "secret-leak" because "The result leaks a secret."
  }
}
"""
HOST = """
policy host_link { impl = python("test_policy_settled:host_link") }
"""
WORDS = ["w1", "w2", "forbidden", "maybe", "drop  TABLE x", "secret-leak here", "plain",
         "sk-abcdefghijklmnop", "w3"]


def host_link(ctx: dict):
    return "deny" if ctx.get("args", {}).get("word") == "plain" else None


def _script(words: list) -> list:
    calls = [[("echo", {"word": w}), ("other", {"word": w})] for w in words]
    return calls[:6] + ["done"]


def _run(words: list, settled: bool, monkeypatch: pytest.MonkeyPatch, *, redact: str = "",
         keys: str = '"password"', host: bool = False, message: str = "go") -> list:
    if not settled:
        monkeypatch.setattr(toolcall_policy, "_links", lambda found, moment, tool: None)
    spec = SPEC % (redact, keys)
    if host:
        spec = spec.replace("policies = [", "policies = [host_link, ") + HOST
    program = afp.load(spec)
    tools = {"echo": lambda word: word, "other": lambda word: word}
    agent = program.agent(provider=mock(_script(words)), tools=tools,
                          effects=Effects(run_ids=counter_ids("s")))
    result = agent.run(message)
    monkeypatch.undo()
    return [(e.kind, e.caused_by, e.source, e.payload, e.seq, e.id, e.time, e.iteration)
            for e in result.trace]


# (values that are not strings: read by the checks' closures, not inline)
ODD = [5, None, {"word": "w1"}, ["w1"], True, "zz"]
CASES = [WORDS[:3], WORDS[2:5], WORDS[4:], ["w1", "plain", "w2"], ["maybe", "w1"], ODD[:3],
         ODD[3:]]


@pytest.mark.parametrize("words", CASES)
@pytest.mark.parametrize("redact", ["", "\n  redact = [secrets]"])
def test_a_settled_walk_records_what_the_full_walk_records(words, redact, monkeypatch) -> None:
    assert _run(words, True, monkeypatch, redact=redact) == \
        _run(words, False, monkeypatch, redact=redact)


def test_a_rule_on_a_root_settles_as_the_full_walk(monkeypatch) -> None:
    for message in ("stop", "go"):
        assert _run(["w1"], True, monkeypatch, message=message) == \
            _run(["w1"], False, monkeypatch, message=message)


@pytest.mark.parametrize("words", CASES)
def test_a_host_link_walks_in_full_and_records_the_same(words, monkeypatch) -> None:
    assert _run(words, True, monkeypatch, host=True) == _run(words, False, monkeypatch, host=True)


@pytest.mark.parametrize("keys", ['"call_id"', '"policy"', '"iteration"', '"outcome"', '"rule"',
                                  '"moment"'])
def test_a_rule_selecting_a_row_key_is_applied_as_by_the_full_walk(keys, monkeypatch) -> None:
    redact = "\n  redact = [secrets]"
    settled = _run(WORDS[:2], True, monkeypatch, redact=redact, keys=keys)
    assert settled == _run(WORDS[:2], False, monkeypatch, redact=redact, keys=keys)
    rows = [p for kind, _, _, p, *_ in settled if kind == "policy.decided"]
    # a key rule selects keys of the data, never a field of the trace (`redaction_events`)
    assert rows and all(p[keys.strip('"')] != "[REDACTED]" for p in rows)


def test_a_secret_remembered_after_the_rows_were_found_clean_is_scrubbed(monkeypatch) -> None:
    """A row's shapes are known clean after the first call; a secret learned later (here the
    call ids' text, planted through a result under a redacted key) must still be scrubbed."""
    spec = SPEC % ("\n  redact = [secrets]", '"password"')
    program = afp.load(spec)
    tools = {"echo": lambda word: word,
             "other": lambda word: {"password": "call-3-1"} if word == "w2" else word}
    agent = program.agent(provider=mock(_script(["w1", "w2", "w1"])), tools=tools,
                          effects=Effects(run_ids=counter_ids("s")))
    rows = [e.payload for e in agent.run("go").trace if e.kind == "policy.decided"]
    assert any(p["call_id"] == "call-1-1" for p in rows)
    later = [p for p in rows if p["iteration"] == 3 and p["tool"] == "echo"]
    assert later and all(p["call_id"] == "[REDACTED]" for p in later)


def test_the_settled_walk_is_taken(monkeypatch) -> None:
    """(The comparisons above compare something: a plain allowing walk is settled.)"""
    calls = []
    monkeypatch.setattr(toolcall_policy, "walk", lambda *a: calls.append(a) or ALLOWED)
    trace = _run(["w1"], True, monkeypatch)
    assert not calls and any(kind == "policy.decided" for kind, *_ in trace)


def test_a_secret_remembered_by_an_earlier_row_of_the_walk_is_scrubbed_from_the_later() -> None:
    """`emit_rows` checks a walk's call id and iteration once; a row scrubbed on the way may
    remember a secret (a value under a redacted key), and a later row of the same walk whose
    shape was known clean must then be checked again."""
    from afp_dsl import ir
    from afp_dsl.recorder import Recorder
    from afp_dsl.redaction import Redactor
    from afp_dsl.trace import Trace
    rec = Recorder(Trace("r"), Redactor([ir.Redact(name="secrets", keys=("password",))]))
    clean = ({"policy": "p", "reason": "hunter22", "call_id": None, "iteration": None},
             ("clean-shape",), None)
    dirty = ({"policy": "p", "password": "hunter22", "call_id": None, "iteration": None},
             ("dirty-shape",), None)
    rec.emit_rows([clean], "call-1-1", 1, "r:0")  # its shape is now known clean
    assert rec.trace[-1].payload["reason"] == "hunter22"
    rec.emit_rows([dirty, clean], "call-2-1", 2, "r:0")
    assert rec.trace[1].payload["password"] == "[REDACTED]"
    assert rec.trace[2].payload["reason"] == "[REDACTED]"


def test_a_walk_whose_later_row_must_be_scrubbed_keeps_its_rows_in_order() -> None:
    """`emit_rows` records rows whose shapes are known clean in its quick loop and hands the
    rest of the walk to the general one at the first row that is not: every row recorded once,
    in order, with consecutive seqs, ids and times."""
    from afp_dsl import ir
    from afp_dsl.recorder import Recorder
    from afp_dsl.redaction import Redactor
    from afp_dsl.trace import Trace
    rec = Recorder(Trace("r"), Redactor([ir.Redact(name="secrets", keys=("password",))]))
    clean = ({"policy": "p", "call_id": None, "iteration": None}, ("clean-shape",), None)
    other = ({"policy": "q", "call_id": None, "iteration": None}, ("other-shape",), None)
    dirty = ({"policy": "r", "password": "hunter22", "call_id": None, "iteration": None},
             ("dirty-shape",), None)
    rec.emit_rows([clean, other], "call-1-1", 1, "r:0")  # both shapes now known clean
    rec.emit_rows([clean, dirty, other], "call-2-1", 2, "r:0")
    events = list(rec.trace)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert [e.id for e in events] == [f"r:{k}" for k in range(1, 6)]
    assert [e.time for e in events] == [1, 2, 3, 4, 5] and rec.time == 5 and rec.seq == 5
    assert [e.payload["policy"] for e in events] == ["p", "q", "p", "r", "q"]
    assert events[3].payload["password"] == "[REDACTED]"
    assert all(e.payload["call_id"] == "call-2-1" and e.iteration == 2 for e in events[2:])


# ---------------------------------------------------------------- the generated settled walk
def _reference_settle(links: tuple, values: tuple, ctx) -> list | None:
    """The loop `toolcall_policy.settler` compiles (as `chain` ran it inline before)."""
    heads: list | None = []
    for quiet, rules in links:
        for k, seg, search, lit, equal, check, head, allows in rules:
            v = None if k is None else values[k]
            if seg is not None:
                v = v.get(seg) if type(v) is dict else None
            if type(v) is str:
                verdict = search(v) is not None if search is not None else (v == lit) is equal
            else:
                verdict = toolcall_policy._quick(check, values, ctx)
            if verdict is True:
                heads = heads if allows else None
                break
            if verdict is not False:
                heads = None
                break
        else:
            heads.append(quiet)
            continue
        if heads is None:
            break
        heads.append(head)
    return heads


def _check_answering(answer):
    def check(env):
        if answer == "raise":
            raise ValueError("unsure")
        return answer
    return check


_RULES = st.tuples(
    st.sampled_from([None, 0, 1, 2, 3, 4, 5, 6]),  # the root's position in the values, or none
    st.sampled_from([None, "word", "n"]),  # a field of it
    st.sampled_from([None, "^w[0-9]+$", "x"]),  # a regex searched in a str value
    st.sampled_from(["w1", "x", ""]), st.booleans(),  # else a literal: equal or not
    st.sampled_from([True, False, None, "raise", 1]),  # the closure's answer (not a str)
    st.booleans())  # whether the rule allows
_VALUE = st.sampled_from(["w1", "x", "zz", "", 5, None, True, {"word": "w1"},
                          {"word": "x", "n": 3}, {"n": "w7"}, ["w1"], '{"word": "w2"}', '"x"'])


@settings(derandomize=True, deadline=None, max_examples=500, database=None)
@given(st.lists(st.lists(_RULES, min_size=1, max_size=4), min_size=1, max_size=5),
       st.tuples(*[_VALUE] * 7))
def test_the_generated_settled_walk_answers_as_the_loop(link_specs, values) -> None:
    links = tuple(
        (("quiet", i), tuple(
            (k, seg, None if pattern is None else re.compile(pattern).search, lit, equal,
             _check_answering(answer), ("head", i, j), allows)
            for j, (k, seg, pattern, lit, equal, answer, allows) in enumerate(rules)))
        for i, rules in enumerate(link_specs))
    for after in (False, True):
        chain = links if after else tuple(  # (`before` has five roots: the rest read none)
            (quiet, tuple((None if r[0] is not None and r[0] > 4 else r[0],) + r[1:]
                          for r in rules)) for quiet, rules in links)
        raw = values if after else values[:5]
        roots = raw[:5] + (parse_result(raw[5]), raw[6]) if after else raw
        assert _settled(chain, raw, after) == _reference_settle(chain, roots, None)


def _settled(links: tuple, values: tuple, after: bool) -> list | None:
    """The generated walk's answer for these roots' values (the call's result as the tool gave
    it): the heads it records, or None (walk in full, nothing recorded)."""
    rows: list = []
    ctx = SimpleNamespace(rec=SimpleNamespace(emit_rows=lambda heads, *rest: rows.append(heads)))
    call = SimpleNamespace(name=values[0], id="call-1")
    st = SimpleNamespace(message=values[2], iteration=values[3], cursor=values[4])
    out = SimpleNamespace(result=values[5], status=values[6]) if after else None
    answer = toolcall_policy.settler(links, after)(ctx, call, values[1], st, out, "cause")
    assert answer is bool(rows) and len(rows) <= 1
    return list(rows[0]) if rows else None


def test_a_long_chain_compiles_to_one_settled_walk() -> None:
    search = re.compile("^w").search
    links = tuple((("quiet", i), tuple((1, "word", search, None, True, None, ("head", i, j),
                                        j == 9) for j in range(10))) for i in range(300))
    assert _settled(links, ("t", {"word": "zz"}, None, 1, None), False) == [
        ("quiet", i) for i in range(300)]
    assert _settled(links, ("t", {"word": "w1"}, None, 1, None), False) is None  # (a deny)
