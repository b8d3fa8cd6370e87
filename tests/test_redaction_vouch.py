"""A `tool.called` (and the name and id of a `tool.returned`) vouched for by its reply's clean
`llm.replied` records exactly what the full clean check records.

`Recorder.emit(..., vouch=...)` lets a tool call's `tool.called` (its name, id and arguments,
all in the reply just found clean) skip its own walk until a secret is remembered. These tests
run the same scripted runs with vouching and with every payload checked in full, and compare the
traces: secrets in arguments, a secret learned from one call's result before the next call of the same
reply, a reply that was scrubbed, keys a rule selects. They also check the cache itself.
"""
from __future__ import annotations

import pytest

import afp_dsl as afp
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers import mock
from afp_dsl.redaction import Redactor
from afp_dsl.toolcall import CALLED_KEYS, READ_KEYS, RETURNED_KEYS

SPEC = """
agent a {
  max_iterations = 6
  tools = [echo, login]
  redact = [secrets]
}
tool echo {
  description = "Echo a word."
  input { word: string }
}
tool login {
  description = "Log in."
  input { user: string }
}
redact secrets {
  keys = ["password"]
  patterns = [/sk-[A-Za-z0-9]{12,}/]
}
"""

SCRIPTS = {
    "clean": [[("echo", {"word": "w1"}), ("echo", {"word": "w2"})], "done"],
    "pattern in args": [[("echo", {"word": "sk-abcdefghijklmnop"}), ("echo", {"word": "w"})],
                        "done"],
    # the first call's result holds a password: the second call of the same reply repeats it
    "learned mid-batch": [[("login", {"user": "bob"}), ("echo", {"word": "hunter22"})],
                          [("echo", {"word": "xhunter22x"})], "done"],
    # results: a pattern in one (echoed), a dict read as JSON text (`read`), an unknown tool
    "results": [[("echo", {"word": "a sk-abcdefghijklmnop b"}), ("login", {"user": "sk-"}),
                 ("nope", {"x": 1}), ("echo", {"word": "w"})], "done"],
}
KEY_RULES = ('"password", "status"', '"password", "read"', '"password", "duration"',
             '"password", "result"', '"password", "executed"')


def _run(script: list, vouching: bool, monkeypatch: pytest.MonkeyPatch,
         keys: str = '"password"', pattern: str = "", password: str = "hunter22") -> list:
    if not vouching:
        monkeypatch.setattr(Redactor, "vouch", lambda self, token, keys: None)
    program = afp.load(SPEC.replace('"password"', keys).replace("{12,}/", "{12,}/" + pattern))
    tools = {"echo": lambda word: word, "login": lambda user: {"user": user, "password": password}}
    agent = program.agent(provider=mock(script), tools=tools,
                          effects=Effects(run_ids=counter_ids("v")))
    result = agent.run("go")
    monkeypatch.undo()
    return [(e.kind, e.caused_by, e.payload) for e in result.trace]


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_vouched_tool_called_records_what_the_full_check_records(name, monkeypatch) -> None:
    script = SCRIPTS[name]
    assert _run(script, True, monkeypatch) == _run(script, False, monkeypatch)


@pytest.mark.parametrize("keys", KEY_RULES)
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_rule_selecting_a_returned_key_is_applied_as_by_the_full_check(name, keys,
                                                                           monkeypatch) -> None:
    script = SCRIPTS[name]
    vouched = _run(script, True, monkeypatch, keys)
    assert vouched == _run(script, False, monkeypatch, keys)
    selected = keys.split(", ")[1].strip('"')
    returned = [p for kind, _, p in vouched if kind == "tool.returned"]
    # a key rule selects keys of the data, never a field of the trace (`redaction_events`)
    # (a result or what the model read is data: its content may be scrubbed, not the field)
    if selected in ("status", "duration", "executed"):
        assert all(p[selected] != "[REDACTED]" for p in returned if selected in p)
    else:
        assert any(p[selected] != "[REDACTED]" for p in returned if selected in p) or not any(
            selected in p for p in returned)
    assert any(selected in p for p in returned) or name != "results"
    assert all(p["result"]["password"] == "[REDACTED]" for p in returned
               if isinstance(p.get("result"), dict) and "password" in p["result"])


# ---------------------------------------------------------------- llm.called
# A `context.composed` found clean vouches for the tool names of its `llm.called`: only the call
# number, the model and the message count are checked. The wrap-up call after the budget (no
# tools, its cause a `budget.exhausted`) is checked in full.
LLM_SCRIPTS = dict(SCRIPTS, budget=[[("echo", {"word": f"w{i}"})] for i in range(7)] + ["done"],
                   **{"tool name remembered": [[("echo", {"word": "w1"})],
                                               [("login", {"user": "bob"})],
                                               [("echo", {"word": "w2"})], "done"]})
LLM_RULES = [('"password", "tools"', ""), ('"password", "model"', ""),
             ('"password", "call"', ""), ('"password", "messages"', ""),
             ('"password"', ", /ech[o]/"), ('"password"', ", /logi[n]/"), ('"password"', ", /^3$/")]


@pytest.mark.parametrize("keys,pattern", LLM_RULES)
@pytest.mark.parametrize("name", sorted(LLM_SCRIPTS))
def test_a_vouched_llm_called_records_what_the_full_check_records(name, keys, pattern,
                                                                  monkeypatch) -> None:
    script = LLM_SCRIPTS[name]
    password = "echo" if name == "tool name remembered" else "hunter22"
    vouched = _run(script, True, monkeypatch, keys, pattern, password)
    assert vouched == _run(script, False, monkeypatch, keys, pattern, password)
    called = [p for kind, _, p in vouched if kind == "llm.called"]
    selected = keys.split(", ")[-1].strip('"')
    # neither a key rule nor a pattern rewrites the trace's fields, counts or tool names
    assert all(p[selected] != "[REDACTED]" for p in called if selected in p)
    assert all(set(p["tools"]) <= {"echo", "login", "read_skill"} for p in called)
    assert all(type(p["messages"]) is int for p in called)


def test_a_tool_name_remembered_is_kept_in_the_next_llm_called(monkeypatch) -> None:
    """The secret `echo` (a password) is scrubbed from the data, not from the tool's name."""
    events = _run(LLM_SCRIPTS["tool name remembered"], True, monkeypatch, password="echo")
    called = [p for kind, _, p in events if kind == "llm.called"]
    assert called[0]["tools"] == ["echo", "login"]
    assert called[-1]["tools"] == ["echo", "login"]
    returned = [p for kind, _, p in events if kind == "tool.returned" and p["tool"] == "login"]
    assert returned[0]["result"]["password"] == "[REDACTED]"


def test_a_clean_composition_vouches_for_its_llm_called(monkeypatch) -> None:
    """(The comparisons above compare something: only the wrap-up call is walked.)"""
    full, walked = Redactor.is_clean, []

    def is_clean(self, value):
        walked.append(type(value) is dict and "messages" in value)
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    _run(LLM_SCRIPTS["budget"], True, monkeypatch)
    assert walked.count(True) == 1


def test_a_secret_learned_before_the_next_call_of_the_reply_is_scrubbed(monkeypatch) -> None:
    events = _run(SCRIPTS["learned mid-batch"], True, monkeypatch)
    called = [p for kind, _, p in events if kind == "tool.called"]
    assert [c["args"] for c in called] == [{"user": "bob"}, {"word": "[REDACTED]"},
                                           {"word": "x[REDACTED]x"}]


def _redactor(keys: str = '"password"') -> Redactor:
    program = afp.load(SPEC.replace('"password"', keys))
    return Redactor(program.agent(provider=mock(["x"])).plan.redact)


def test_a_clean_reply_vouches_for_its_calls(monkeypatch) -> None:
    """(The comparisons above compare something: a clean reply's calls skip the walk.)"""
    full = Redactor.is_clean

    def is_clean(self, value):
        assert not (type(value) is dict and tuple(value) == CALLED_KEYS), "walked a tool.called"
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    _run(SCRIPTS["clean"], True, monkeypatch)


def test_a_clean_reply_vouches_for_the_name_and_id_of_its_results(monkeypatch) -> None:
    """(And for the `tool.returned` payloads: only their other values are checked.)"""
    full = Redactor.is_clean

    def is_clean(self, value):
        assert not (type(value) is dict and "executed" in value), "walked a tool.returned"
        return full(self, value)
    monkeypatch.setattr(Redactor, "is_clean", is_clean)
    _run(SCRIPTS["clean"], True, monkeypatch)


def test_a_vouched_result_still_checks_its_own_values() -> None:
    red = _redactor()
    assert red.is_clean({"tool": "echo", "call_id": "c1", "args": {}})
    red.vouch("r:1", CALLED_KEYS)
    payload = {"tool": "echo", "call_id": "c1", "status": "success", "executed": True,
               "result": "sk-abcdefghijklmnop", "duration": 3}
    values = ("success", True, "sk-abcdefghijklmnop", 3)
    assert not red.is_clean_vouched_plus(payload, "r:1", RETURNED_KEYS, values)
    clean = ("success", True, {"n": [1, 2.5, None]}, 3, "text")
    assert red.is_clean_vouched_plus({}, "r:1", READ_KEYS, clean)
    assert not red.is_clean_vouched_plus({"password": 1}, "r:2", READ_KEYS, clean)  # not vouched
    red.remember("text")
    assert not red.is_clean_vouched_plus({"read": "text"}, "r:1", READ_KEYS, clean)


def test_a_vouch_is_forgotten_when_a_secret_is_remembered() -> None:
    red = _redactor()
    payload = {"tool": "echo", "call_id": "c1", "args": {"word": "hunter22"}}
    assert red.is_clean(payload)  # (the reply, found clean)
    red.vouch("r:1", CALLED_KEYS)
    assert red.is_clean_vouched(payload, "r:1")
    red.remember("hunter22")
    assert not red.is_clean_vouched(payload, "r:1")


def test_nothing_is_vouched_for_after_a_secret_remembered_since_the_check() -> None:
    red = _redactor()
    payload = {"tool": "echo", "call_id": "c1", "args": {"word": "hunter22"}}
    assert red.is_clean(payload)
    red.remember("hunter22")
    red.vouch("r:1", CALLED_KEYS)
    assert not red.is_clean_vouched(payload, "r:1")


def test_a_vouch_with_a_selected_key_vouches_for_nothing() -> None:
    red = _redactor('"password", "call_id"')
    payload = {"tool": "echo", "call_id": "c1", "args": {}}
    assert red.is_clean({"tool": "echo"})
    red.vouch("r:1", CALLED_KEYS)  # `call_id` is a key the rule selects
    assert not red.is_clean_vouched(payload, "r:1")
    assert not red.is_clean_vouched({"password": 1}, "r:2")  # never vouched: checked in full


class Tagged(str):
    """A str subclass equal to a plain string (a key tuple vouched for must not vouch for it)."""


def test_keys_equal_to_a_vouched_tuple_are_checked_again() -> None:
    red = _redactor()
    assert red.is_clean({"tool": "echo"})
    red.vouch("r:1", CALLED_KEYS)
    tagged = tuple(Tagged(k) for k in CALLED_KEYS)
    assert tagged == CALLED_KEYS
    red.vouch("r:2", tagged)  # equal, but not exact strs: not vouched
    assert not red.is_clean_vouched({Tagged("tool"): "echo"}, "r:2")


def test_a_redactor_keeps_to_the_shared_key_limit() -> None:
    """CPython 3.11 shares an instance key table up to 30 attributes; past that every lookup on a
    redactor is slower (31 attributes cost the guarded loop ≈ 9,600 instructions an iteration)."""
    red = _redactor()
    red.is_clean({"tool": "echo"})
    red.vouch("r:1", CALLED_KEYS)
    red.scrub({"password": "hunter22", "n": "sk-abcdefghijklmnop"})
    red.report()
    assert red.for_model() is None
    assert len(vars(red)) <= 30


# ---------------------------------------------------------------- the recorder's inline checks
# `Recorder.emit` vouches inline and `emit_vouched_plus` checks inline when the redactor's caches
# answer; both must record what the redactor's own methods decide.
def _recorder(keys: str = '"password"'):
    from afp_dsl.recorder import Recorder
    from afp_dsl.trace import Trace
    red = _redactor(keys)
    return Recorder(Trace("r"), red), red


def _returned(rec, token: str, values: tuple) -> dict:
    payload = {"tool": "echo", "call_id": "c1", **dict(zip(RETURNED_KEYS, values))}
    rec.emit_vouched_plus("tool.returned", payload, token, RETURNED_KEYS, values, 1, None, ())
    return rec.trace[len(rec.trace) - 1].payload


def test_the_recorder_vouches_as_the_redactor_does() -> None:
    rec, red = _recorder()
    reply = {"tool": "echo", "call_id": "c1", "args": {"word": "w"}}
    first = rec.emit("llm.replied", reply, iteration=1, vouch=CALLED_KEYS)  # (keys checked here)
    second = rec.emit("llm.replied", reply, iteration=1, vouch=CALLED_KEYS)  # (inline)
    assert red._vouched == second != first
    assert _returned(rec, first, ("success", True, "w", 1))["result"] == "w"  # (walked in full)
    assert _returned(rec, second, ("success", True, "w", 1))["result"] == "w"
    assert _returned(rec, second, ("success", True, "sk-abcdefghijklmnop", 1))["result"] == (
        "[REDACTED]")
    def called(word):  # (a payload breaking the vouch's contract shows when it is taken)
        eid = rec.emit_vouched("tool.called", {"word": word}, second, 1, None, "")
        return rec.trace[rec.trace.index(eid)].payload["word"]
    assert called("sk-abcdefghijklmnop") == "sk-abcdefghijklmnop"  # (vouched: not walked)
    red.remember("hunter22")  # after the vouch: the vouched names are checked again
    assert called("hunter22") == "[REDACTED]"
    assert _returned(rec, second, ("success", True, "xhunter22x", 1))["result"] == (
        "x[REDACTED]x")
    rec.emit("llm.replied", {"tool": "hunter22", "call_id": "c2"}, iteration=1,
             vouch=CALLED_KEYS)  # scrubbed: vouches for nothing
    payload = {"tool": "hunter22", "call_id": "c2", "status": "success", "executed": True,
               "result": "w", "duration": 1}
    rec.emit_vouched_plus("tool.returned", payload, rec.trace[len(rec.trace) - 1].id,
                          RETURNED_KEYS, ("success", True, "w", 1), 1, None, ())
    assert rec.trace[len(rec.trace) - 1].payload["tool"] == "[REDACTED]"


@pytest.mark.parametrize("value", [Tagged("w"), 1.0, [["w"] * 3], {"password": "x"}, None, False])
def test_the_recorder_checks_vouched_values_as_the_redactor_does(value) -> None:
    rec, red = _recorder()
    rec.emit("llm.replied", {"tool": "echo"}, iteration=1, vouch=CALLED_KEYS)
    token = rec.emit("llm.replied", {"tool": "echo"}, iteration=1, vouch=CALLED_KEYS)
    values = ("success", True, value, 1)
    payload = {"tool": "echo", "call_id": "c1", **dict(zip(RETURNED_KEYS, values))}
    clean = red.is_clean_vouched_plus(payload, token, RETURNED_KEYS, values)
    assert clean == (type(value) is not Tagged and value != {"password": "x"})
    rec.emit_vouched_plus("tool.returned", payload, token, RETURNED_KEYS, values, 1, None, ())
    assert (rec.trace[len(rec.trace) - 1].payload is payload) == clean  # (kept as is: clean)


def test_a_value_too_deep_to_walk_is_scrubbed_by_the_recorder() -> None:
    rec, _ = _recorder()
    rec.emit("llm.replied", {"tool": "echo"}, iteration=1, vouch=CALLED_KEYS)
    token = rec.emit("llm.replied", {"tool": "echo"}, iteration=1, vouch=CALLED_KEYS)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    values = ("success", True, deep, 1)
    payload = {"tool": "echo", "call_id": "c1", **dict(zip(RETURNED_KEYS, values))}
    rec.emit_vouched_plus("tool.returned", payload, token, RETURNED_KEYS, values, 1, None, ())
    assert rec.trace[len(rec.trace) - 1].payload is not payload
