"""The Python API under broken input: one documented error (or a diagnostic) naming the fix.

`load_ir` raises only `IRFormatError` for any document or file it cannot read (property-tested
on mutated and garbage documents); `check`/`load` report wrong argument types, folders and
empty text as diagnostics (AFP006; `load` raises `CompileError` with it); `providers.mock(...)` checks its script when
called; `program.agent(model=...)` checks the model; a damaged checkpoint is refused before the
tool runs; `resume` and `approve`/`decline` refuse what is not a checkpoint, run id or check-in
without echoing it; every public name is documented. Every test here failed before these checks
were added (robustness findings 10-12, 14; the API audit).
"""
from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import afp_dsl as afp
from afp_dsl.providers.base import Provider
from afp_dsl.serde import IRFormatError, ir_to_data, ir_to_json

SPEC = Path(__file__).resolve().parent.parent / "examples" / "support" / "support.afp"
PROGRAM = afp.load(SPEC)
DOC = ir_to_data(PROGRAM.ir)


# ---------------------------------------------------------------- load_ir (finding 10)
def _nodes(value, path=()):
    """Every (path, value) inside the JSON document."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from _nodes(v, path + (k,))


PATHS = [p for p, _ in _nodes(DOC) if p]
REPLACEMENTS = [None, 7, -1, True, 2.5, "zz", "", [], [None], {}, {"node": "Ref"}, {"node": "Nope"}]


def _mutated(path: tuple, replacement, delete: bool) -> dict:
    doc = copy.deepcopy(DOC)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(replacement)
    return doc


def _load_or_format_error(arg) -> None:
    try:
        afp.load_ir(arg)
    except IRFormatError as e:
        assert "afpc compile" in str(e)  # every message names how to get a good document


def _decl_path(kind: str) -> tuple:
    decls = DOC["program"]["modules"][0]["decls"]
    return ("program", "modules", 0, "decls", next(i for i, d in enumerate(decls) if d["node"] == kind))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), st.sampled_from(REPLACEMENTS), st.booleans(), st.booleans())
@example(_decl_path("Tool"), None, False, False)         # a null declaration: was AttributeError
@example(("program",), "x", False, False)                # was AttributeError in serde
@example(_decl_path("Tool") + ("name",), "zz", False, False)     # a fine edit still loads
def test_a_mutated_ir_document_loads_or_raises_only_IRFormatError(path, replacement, delete, as_text):
    doc = _mutated(path, replacement, delete)
    _load_or_format_error(json.dumps(doc) if as_text else doc)


def test_a_null_declaration_names_its_json_path():
    path = _decl_path("Tool")
    with pytest.raises(IRFormatError, match=r"got null @ \$\.program\.modules\[0\]\.decls\[\d+\]"):
        afp.load_ir(_mutated(path, None, False))


def test_a_string_where_a_list_belongs_is_refused_not_iterated():
    """cattrs turned `"abc"` into ('a', 'b', 'c'): silently accepted nonsense."""
    with pytest.raises(IRFormatError, match=r"expected a list, got \"abc\" @ \$\.program\.modules\[0\]\.decls"):
        afp.load_ir(_mutated(("program", "modules", 0, "decls"), "abc", False))


@pytest.mark.parametrize("path, value", [(("program", "root"), "zz"),
                                         (("program", "modules", 0, "key"), "")])
def test_a_root_that_names_no_module_is_IRFormatError(path, value):
    """Before: the document loaded, and `program.agent()` failed with a bare AssertionError."""
    with pytest.raises(IRFormatError, match=r"`root` .* names none of its modules .*afpc compile"):
        afp.load_ir(_mutated(path, value, False))


@pytest.mark.parametrize("value", [None, "zz", 3, [1]])
def test_a_tool_schema_that_is_not_an_object_is_IRFormatError(value):
    """Before: it loaded, and the run failed deep in `jsonschema` (`'str' object has no
    attribute 'get'`)."""
    path = _decl_path("Tool")
    tool = DOC["program"]["modules"][0]["decls"][path[-1]]
    assert tool["input"] is not None
    with pytest.raises(IRFormatError, match=r"a schema's `json` must be a JSON Schema object"):
        afp.load_ir(_mutated(path + ("input", "json"), value, False))


def test_a_step_calling_a_tool_the_document_no_longer_declares_is_named_at_agent():
    """Before: `agent.run` failed mid-run with a bare `KeyError: 'issue_refund'`."""
    decls = DOC["program"]["modules"][0]["decls"]
    i = next(i for i, d in enumerate(decls) if d.get("name") == "issue_refund")
    program = afp.load_ir(_mutated(("program", "modules", 0, "decls", i, "name"), "zz", False))
    with pytest.raises(ValueError, match=r"skill `refunds` has a step calling `issue_refund`.*"
                                         r"afpc compile"):
        program.agent()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=200, deadline=None, database=None)
@given(st.one_of(json_values.map(json.dumps), st.text(max_size=30),
                 json_values.map(lambda v: json.dumps({"afp_ir": 1, "program": v}))))
@example("")
@example("[]")
@example("5")
@example("null")
def test_garbage_text_raises_only_IRFormatError(text):
    with pytest.raises(IRFormatError):
        afp.load_ir(text)


@pytest.mark.parametrize("make, message", [
    (lambda tmp: str(tmp), "it is a folder"),
    (lambda tmp: str(tmp / "missing.ir.json"), "no such IR file"),
    (lambda tmp: _write(tmp / "bin.ir.json", b"\xff\xfe{}"), "not UTF-8"),
    (lambda tmp: _write(tmp / "list.ir.json", b"[1, 2]"), "the JSON is a list"),
    (lambda tmp: _write(tmp / "v99.ir.json", json.dumps({**DOC, "afp_ir": 99}).encode()), "`afp_ir` is 99"),
    (lambda tmp: _write(tmp / "vtrue.ir.json", json.dumps({**DOC, "afp_ir": True}).encode()), "`afp_ir` is true"),
])
def test_unreadable_ir_files_are_IRFormatError_naming_the_problem(tmp_path, make, message):
    with pytest.raises(IRFormatError, match=message):
        afp.load_ir(make(tmp_path))


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_load_ir_accepts_the_parsed_document_and_its_path(tmp_path):
    assert afp.load_ir(copy.deepcopy(DOC)).ir == PROGRAM.ir  # a dict was str()-ed: "not JSON"
    (tmp_path / "s.ir.json").write_text(ir_to_json(PROGRAM.ir), encoding="utf-8")
    assert afp.load_ir(tmp_path / "s.ir.json").ir == PROGRAM.ir


@pytest.mark.parametrize("arg, hint", [(None, "not None"), (5, "not an `int`"), (b"{}", "decode it first")])
def test_load_ir_wrong_argument_types_are_TypeError_naming_what_to_pass(arg, hint):
    with pytest.raises(TypeError, match=f"`load_ir` takes a path.*{hint}"):
        afp.load_ir(arg)


# ---------------------------------------------------------------- check and load (finding 11)
class _BytesPath:
    def __fspath__(self) -> bytes:
        return b"support.afp"


class _BrokenPath:
    def __fspath__(self) -> str:
        raise RuntimeError("no path today")


@pytest.mark.parametrize("arg, hint", [
    (None, "not None"), (5, "not an `int`"), (123, "not an `int`"), (1.5, "not a `float`"),
    (["a.afp"], "pass one at a time"), (b"agent a {}", "decode it first"),
    (bytearray(b"x"), "not a `bytearray`"), (_BytesPath(), "naming a `bytes`"),
    (_BrokenPath(), "`RuntimeError: no path today`")])
def test_check_and_load_report_wrong_types_as_AFP006_naming_what_is_accepted(arg, hint):
    """tooling.md §6: `check` never raises for bad input. Before, `check(None)`, `check(b"...")`
    and `check(123)` raised `TypeError` (and so did `load`, instead of `CompileError`)."""
    [d] = afp.check(arg)
    assert d.code == "AFP006" and d.is_error, d
    assert re.search(rf"`check` takes a path \(a `str` or `os.PathLike`.*\) or spec text.*{re.escape(hint)}",
                     d.message), d.message
    with pytest.raises(afp.CompileError) as info:
        afp.load(arg)
    [d] = info.value.diagnostics
    assert d.code == "AFP006" and d.message.startswith("`load` takes a path"), d.message


def test_a_folder_is_a_diagnostic_naming_the_fix_not_spec_text():
    folder = str(SPEC.parent)
    [d] = afp.check(folder)  # was AFP001 "unknown declaration kind" in `<text>`
    assert (d.code, d.message) == ("AFP006", f"cannot read `{folder}`: it is a folder")
    assert "afpc check" in d.help
    with pytest.raises(afp.CompileError):
        afp.load(folder)


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_text_is_nothing_to_check_or_load(text):
    [d] = afp.check(text)
    assert d.code == "AFP006" and "empty" in d.message
    with pytest.raises(afp.CompileError):  # was an empty `Program`
        afp.load(text)


# ---------------------------------------------------------------- mock scripts (finding 12)
def test_a_string_script_is_a_TypeError_saying_to_pass_a_list():
    with pytest.raises(TypeError, match=r"list of replies, not a `str`.*mock\(\['hello'\]\)"):
        afp.providers.mock("hello")  # was: the answer 'h', then 'e', ...


@pytest.mark.parametrize("script, error, message", [
    ([5], TypeError, r"item 0 .* is an `int`; a reply is a string"),
    (["ok", None], TypeError, r"item 1 \(the reply to LLM call #2\) is None"),
    ([{"text": 5}], TypeError, r"item 0 .*`text` must be a string"),
    ([{"text": "t", "calls": "x"}], TypeError, r"item 0 .*`calls` must be a list"),
    ([{}], ValueError, r"item 0 .* is an empty dict"),
    ([{"txt": "hi"}], ValueError, r"unknown keys `txt`"),
    ([[]], ValueError, r"item 0 .* is an empty list"),
    ([[5]], TypeError, r"item 0 .*, call 0 is an `int`; a call is"),
    ([[{"nam": "lookup_order"}]], ValueError, r"call 0 is not a call: it needs a string `name`"),
    ({"text": "a"}, TypeError, r"not a `dict` \(a dict is one reply\)"),
    (5, TypeError, r"must be a list of replies"),
])
def test_malformed_script_items_are_refused_at_mock_naming_the_index(script, error, message):
    with pytest.raises(error, match=message):
        afp.providers.mock(script)


def test_every_documented_script_form_is_still_accepted():
    from afp_dsl.providers.base import Reply, ToolCall
    script = ["hi", [("lookup_order", {"order_id": "A"})], {"text": "t", "calls": [("x", {})]},
              {"calls": [{"name": "x", "arguments": {}, "id": "c"}]}, Reply(text="r"),
              [ToolCall("c", "x", {})], [("x",)]]
    assert afp.providers.mock(iter(script)).script == script
    assert PROGRAM.agent(provider=afp.providers.mock(["hello"])).run("hi").answer == "hello"


# ---------------------------------------------------------------- agent(model=) (finding 14)
@pytest.mark.parametrize("model, error", [(5, TypeError), (b"gpt", TypeError), ("", ValueError), (" ", ValueError)])
def test_agent_model_must_be_a_model_name(model, error):
    with pytest.raises(error, match="`model=`"):
        PROGRAM.agent(model=model)


# ---------------------------------------------------------------- damaged checkpoints (finding 14)
def _paused(message: str = "Order CD-7 was charged twice, please refund it"):
    ran: list = []
    agent = PROGRAM.agent(
        provider=afp.providers.mock([[("lookup_order", {"order_id": "CD-7"})],
                                     [("issue_refund", {"order_id": "CD-7", "amount": 240})], "done"]),
        tools={"issue_refund": lambda order_id, amount: ran.append(amount) or "ok"})
    result = agent.run(message)
    assert result.paused
    return agent, result, ran


FIELDS = sorted(_paused()[1].checkpoint.data["state"])


@pytest.mark.parametrize("field", FIELDS)
def test_a_wrong_typed_checkpoint_field_is_refused_before_the_tool_runs(field):
    from afp_dsl.state import CheckpointError
    agent, result, ran = _paused()
    result.checkpoint.data["state"][field] = 2.5 if not field.startswith("tokens") else "2"
    with pytest.raises(CheckpointError, match=rf"damaged: `state\.{field}` is .*start a new run"):
        agent.resume(result.checkpoint, afp.approve(result.checkin, by="dana"))
    assert ran == []  # `executions = []` ran the refund, then crashed


def test_an_intact_checkpoint_still_resumes():
    agent, result, ran = _paused()
    done = agent.resume(result.checkpoint, afp.approve(result.checkin, by="dana"))
    assert (done.outcome, done.answer, ran) == ("answered", "done", [240])


@pytest.mark.parametrize("damage, match", [
    (lambda d: d.pop("state"), "not a checkpoint document"),
    (lambda d: d.update(version=99), "has version 99"),
    (lambda d: d.pop("version"), "has version None"),
])
def test_a_checkpoint_without_state_or_of_another_version_is_refused(damage, match):
    """A checkpoint without `state` raised KeyError; one of another version was resumed."""
    from afp_dsl.state import CheckpointError
    agent, result, ran = _paused()
    damage(result.checkpoint.data)
    with pytest.raises(CheckpointError, match=match):
        agent.resume(result.checkpoint, afp.approve(result.checkin, by="dana"))
    assert ran == []


def test_the_documents_errors_are_public_names():
    from afp_dsl.serde import IRFormatError
    from afp_dsl.state import CheckpointError
    assert afp.IRFormatError is IRFormatError and afp.CheckpointError is CheckpointError


def test_a_message_with_a_lone_surrogate_is_refused_before_anything_runs():
    """It was run and stored, and broke every UTF-8 export of the run later."""
    with pytest.raises(ValueError, match="lone surrogate at position 3"):
        PROGRAM.agent(provider=afp.providers.mock(["ok"])).run("hi \udcff")


# ---------------------------------------------------------------- resume's arguments (API audit)
SECRET = "sk-" + "A1" * 12  # matches the spec's `secrets` pattern: redacted everywhere but the checkpoint


def _paused_with_secret():
    agent, result, ran = _paused(f"Order CD-7 was charged twice, refund it; my key is {SECRET}")
    assert result.paused and SECRET in json.dumps(result.checkpoint.data)  # (raw, by design)
    return agent, result, ran


@pytest.mark.parametrize("given, error, hint", [
    (lambda r: {"state": {}}, afp.CheckpointError, r"names no run"),
    (lambda r: "{" + SECRET, afp.CheckpointError, r"not JSON \(line 1, column 2\)"),
    (lambda r: r, TypeError, r"not a `RunResult`; pass `result\.checkpoint`"),
    (lambda r: r.checkin, TypeError, r"not a `CheckIn`; pass `checkin\.run_id`"),
    (lambda r: None, TypeError, r"not None$"),
    (lambda r: 7, TypeError, r"not an `int`$"),
])
def test_resume_takes_a_checkpoint_or_a_run_id_and_never_echoes_anything_else(given, error, hint):
    """Anything else was read as a run id with `str()`: the checkpoint's raw data (or its JSON)
    came back, unredacted, inside the `ResumeDecisionError` (semantics §9: no error message
    holds a raw value)."""
    agent, result, ran = _paused_with_secret()
    with pytest.raises(error, match=hint) as caught:
        agent.resume(given(result), afp.approve(result.checkin, by="dana"))
    assert SECRET not in str(caught.value) and "run `" not in str(caught.value)
    assert ran == []
    done = agent.resume(result.run_id, afp.approve(result.checkin, by="dana"))  # still pending
    assert (done.outcome, ran) == ("answered", [240])


@pytest.mark.parametrize("form", [lambda d: d, json.dumps])
def test_a_checkpoint_kept_as_json_resumes_as_it_is(form):
    """Semantics §10: the checkpoint is JSON; its data (a dict, or the text `json.dumps` wrote)
    resumes the run. Before: a `TypeError` (`ValueError` for the text) saying to wrap it."""
    agent, result, ran = _paused_with_secret()
    data = json.loads(json.dumps(result.checkpoint.data))
    done = agent.resume(form(data), afp.approve(result.checkin, by="dana"))
    assert (done.outcome, ran) == ("answered", [240])


def test_a_checkpoint_saved_as_json_resumes_wrapped_as_the_error_says():
    agent, result, ran = _paused_with_secret()
    data = json.loads(json.dumps(result.checkpoint.data))
    done = agent.resume(afp.Checkpoint(data["state"]["run_id"], data=data),
                        afp.approve(result.checkin, by="dana"))
    assert (done.outcome, ran) == ("answered", [240])


@pytest.mark.parametrize("make", [afp.approve, afp.decline])
@pytest.mark.parametrize("checkin, hint", [
    (None, r"not None \(`result\.checkin` is None unless `result\.paused`\)"),
    (5, r"not an `int`$"),
    ({"id": "x"}, r"not a `dict`$"),
])
def test_a_decision_names_its_check_in_by_a_checkin_or_its_id(make, checkin, hint):
    """`approve(None)` made a decision for check-in `"None"` (semantics §10: a decision names
    the check-in it answers)."""
    with pytest.raises(TypeError, match=rf"takes the check-in it answers.*{hint}"):
        make(checkin, by="dana")


@pytest.mark.parametrize("keyword", ["by", "note"])
def test_a_decision_s_by_and_note_are_text(keyword):
    with pytest.raises(TypeError, match=rf"`approve\(\.\.\., {keyword}=\.\.\.\)` takes text"):
        afp.approve("run-1:1:call-1", **{keyword: 5})
    assert afp.decline("run-1:1:call-1", by="dana", note="no").checkin == "run-1:1:call-1"


def test_a_paused_result_s_checkin_still_makes_a_decision():
    _, result, _ = _paused()
    assert afp.approve(result.checkin).checkin == afp.approve(result.checkin.id).checkin


def _documented(obj) -> bool:
    return bool(inspect.getdoc(obj))


def _public_members():
    """Every public name (tooling.md §6: "few, typed, documented"), the `__all__` of its public
    modules, and the methods and properties each public class defines."""
    for name in afp.__all__:
        obj = getattr(afp, name)
        if inspect.ismodule(obj):
            yield from ((f"{name}.{n}", getattr(obj, n)) for n in obj.__all__)
            continue
        yield name, obj
        if inspect.isclass(obj):
            for n, m in vars(obj).items():
                fn = m.fget if isinstance(m, property) else m
                if not n.startswith("_") and inspect.isfunction(fn):
                    yield f"{name}.{n}", fn


def test_every_public_name_and_method_is_documented():
    undocumented = [n for n, obj in _public_members()
                    if (inspect.isfunction(obj) or inspect.isclass(obj)) and not _documented(obj)]
    assert undocumented == []


def test_the_types_the_api_returns_and_raises_are_public():
    """A host can annotate with what `approve` and `agent.conversation()` return, and catch what
    `program.agent(name)` raises, without importing internal modules."""
    program = afp.load('agent a { system = "x" }\n')
    assert isinstance(afp.approve("ci-1"), afp.Decision)
    assert isinstance(program.agent(provider=afp.providers.mock(["hi"])).conversation(),
                      afp.Conversation)
    with pytest.raises(afp.AgentNotFound):
        program.agent("nope")


def test_agents_sharing_effects_never_give_two_conversations_one_id():
    """Conversation ids come from the Effects (`conversation_ids`), as run ids do: two agents of
    one Effects (one store, one OpenTelemetry `gen_ai.conversation.id` space) do not collide, and
    `Effects.live()` makes them unique across processes."""
    from afp_dsl.effects import Effects, counter_ids
    program = afp.load('agent a { system = "x" }\nagent b { system = "y" }\n')
    effects = Effects(provider=afp.providers.mock(["one", "two"]), run_ids=counter_ids("r"))
    a, b = program.agent("a", effects=effects), program.agent("b", effects=effects)
    ca, cb = a.conversation(), b.conversation()
    ra, rb = ca.run("hi"), cb.run("hi")
    ids = [e.payload["conversation"] for r in (ra, rb) for e in r.trace if e.kind == "run.started"]
    assert ids == ["conv-1", "conv-2"]
    live = {Effects.live().new_conversation_id() for _ in range(3)}
    assert len(live) == 3 and all(c.startswith("conv-") for c in live)
    bad = Effects(conversation_ids=lambda: 7)
    with pytest.raises(TypeError, match="conversation_ids"):
        program.agent("a", effects=bad).conversation()
    for field in ("run_ids", "conversation_ids"):
        with pytest.raises(TypeError, match=re.escape(f"`Effects({field}=...)` must be a function")):
            program.agent("a", effects=Effects(**{field: "conv-1"}))


def test_an_agent_named_by_no_text_or_blank_text_says_so():
    program = afp.load('agent a { system = "x" }\n')
    with pytest.raises(TypeError, match="named by a `str`"):
        program.agent(5)
    for blank in ("", "  "):
        with pytest.raises(afp.AgentNotFound, match="the agent name is blank; .*`a`"):
            program.agent(blank)


# ------------------------------------------------- host campaign: providers, effects, stores
HOST_SPEC = """
agent g { tools = [lookup] }
tool lookup { description = "look" input { id: string } }
"""


class _Replies(Provider):
    def __init__(self, reply):
        self.reply = reply

    def complete(self, request):
        return self.reply


def _host_agent(**kw):
    from afp_dsl.effects import Effects, counter_ids
    kw.setdefault("effects", Effects(run_ids=counter_ids("r")))
    return afp.load(HOST_SPEC).agent(tools={"lookup": lambda id: id}, **kw)


@pytest.mark.parametrize("fields, says", [
    ({"usage": "10 tokens"}, "its `usage` is a `str`"),
    ({"usage": afp.providers.Usage("1", 2)}, "its `usage` holds '1'"),
    ({"usage": afp.providers.Usage(float("nan"), 2)}, "its `usage` holds nan"),
    ({"usage": afp.providers.Usage(1, -5)}, "its `usage` holds -5"),
    ({"stop_reason": {"stop"}}, "its `stop_reason` is a `set`"),
    ({"text": 5}, "its `text` is an `int`"),
    ({"tool_calls": None}, "its `tool_calls` is a `NoneType`"),
])
def test_a_reply_with_a_wrong_typed_field_is_a_provider_error_naming_it(fields, says):
    """Before: a `usage` that is not a `Usage` of ints crashed the run with an AttributeError or
    TypeError (kept as `interrupted`); a set `stop_reason` went into the trace; a wrong `text` was
    'returned a `Reply`, not a `Reply`'."""
    store = afp.stores.memory()
    r = _host_agent(provider=_Replies(afp.providers.Reply(**{"text": "hi", **fields})),
                    store=store).run("hi")
    assert r.outcome == "error" and "AFP502" in r.error and says in r.error
    assert store.run(r.run_id)["status"] == "finished"


def test_a_reply_with_no_usage_or_stop_reason_reads_as_the_defaults():
    r = _host_agent(provider=_Replies(afp.providers.Reply(text="hi", usage=None,
                                                          stop_reason=None))).run("hi")
    assert (r.outcome, r.answer) == ("answered", "hi")
    (replied,) = [e.payload for e in r.trace if e.kind == "llm.replied"]
    assert (replied["stop"], replied["usage"]) == ("stop", [0, 0])


def test_an_async_complete_is_a_provider_error_saying_to_use_acomplete():
    class Async:
        async def complete(self, request):
            return afp.providers.Reply(text="hi")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (closed, never "never awaited")
        r = _host_agent(provider=Async()).run("hi")
    assert r.outcome == "error" and "async def acomplete" in r.error


def test_a_provider_with_complete_only_also_runs_under_arun():
    """Before: `arun` ended in AFP502 "'Duck' object has no attribute 'acomplete'"."""
    import asyncio

    class Duck:
        def complete(self, request):
            return afp.providers.Reply(text="hi")
    r = asyncio.run(_host_agent(provider=Duck()).arun("hi"))
    assert (r.outcome, r.answer) == ("answered", "hi")


@pytest.mark.parametrize("made, error, says", [
    (None, TypeError, "not None"), (5, TypeError, "not an `int`"), ("", TypeError, "blank text"),
    ("a\x00b", ValueError, "NUL"), ("a\udcffb", ValueError, "lone surrogate"),
    ("tenant/1", ValueError, "holding `/`, which names the inner runs"),
])
def test_a_run_id_that_is_not_storable_text_is_refused_before_anything_runs(made, error, says):
    """Before: a None or int id ran, was saved under that id, then crashed in a TypeError."""
    from afp_dsl.effects import Effects
    store = afp.stores.memory()
    agent = _host_agent(provider=afp.providers.mock(["hi"]), store=store,
                        effects=Effects(run_ids=lambda: made))
    with pytest.raises(error, match=re.escape(says)):
        agent.run("hi")
    assert store.runs() == []


def test_a_store_missing_methods_a_run_calls_is_refused_naming_them():
    """Before: accepted, then an AttributeError for `delete_checkpoint` after the run."""
    class Partial:
        def save_run(self, *a, **k): ...
        def run(self, run_id): ...
        def events(self, run_id): return []
    with pytest.raises(TypeError, match="`checkpoint`, `put_checkpoint`, `delete_checkpoint`"):
        _host_agent(provider=afp.providers.mock(["hi"]), store=Partial())


class _Breaks:
    def __init__(self, start):
        self.t = start

    def now(self):
        self.t += 1
        if self.t > 3:
            raise RuntimeError("clock broke")
        return self.t


@pytest.mark.parametrize("factory, says", [
    (_Breaks, "the Effects clock's `now()` raised RuntimeError"),
    (lambda start: None, "made a `NoneType`, which has no `now()`"),
])
def test_a_clock_that_raises_or_is_none_is_a_clock_error_and_the_trace_is_kept(factory, says):
    """Before: the clock's own RuntimeError came out of `run()`; a factory returning None was
    silently replaced by the recorder's own ticks."""
    from afp_dsl.effects import ClockError, Effects, counter_ids
    store = afp.stores.memory()
    agent = _host_agent(provider=afp.providers.mock(["hi"]), store=store,
                        effects=Effects(run_ids=counter_ids("r"), clock_factory=factory))
    with pytest.raises(ClockError, match=re.escape(says)):
        agent.run("hi")
    if factory is _Breaks:  # (the run had begun: its events so far are kept)
        assert store.run("r-1")["status"] == "interrupted" and len(store.events("r-1")) == 3


def test_a_conversation_goes_on_only_with_an_agent_of_its_declaration() -> None:
    """Another agent's run took the conversation's history (and cursor) as its own; another
    `Agent` of the same declaration (a host building one per request) still may go on with it."""
    import asyncio

    import afp_dsl as afp
    program = afp.load('agent a {\n  system = "x"\n}\nagent b {\n  system = "y"\n}\n')
    first = program.agent("a", provider=afp.providers.mock(["hi"]))
    conv = first.conversation()
    assert conv.run("one").answer == "hi"
    other = program.agent("b", provider=afp.providers.mock(["no"]))
    for go in (lambda: other.run("two", conversation=conv),
               lambda: asyncio.run(other.arun("two", conversation=conv))):
        with pytest.raises(ValueError, match="belongs to agent `a`, not `b`"):
            go()
    again = program.agent("a", provider=afp.providers.mock(["second"]))
    result = again.run("three", conversation=conv)
    assert result.answer == "second" and len(conv.runs) == 2


# ------------------------------------------- arguments of the wrong kind name the fix (§6)
@pytest.mark.parametrize("url", [None, "", 5])
def test_postgres_takes_a_url(url) -> None:
    with pytest.raises(TypeError, match="postgres\\(\\) takes the server's URL"):
        afp.stores.postgres(url)


@pytest.mark.parametrize("kw, said", [
    ({"store": "SqliteStore"}, "`store` is the class `SqliteStore`, not a store"),
    ({"provider": "MockProvider"}, "`provider` is the class `MockProvider`, not a provider"),
])
def test_a_class_where_an_object_is_wanted_is_refused_at_once(kw, said) -> None:
    (key, name), = kw.items()
    cls = getattr(afp.stores if key == "store" else afp.providers, name)
    with pytest.raises(TypeError, match=said):
        afp.load('agent a { system = "x" }').agent(**{key: cls})


def test_to_mermaid_of_a_path_says_to_load_it_first() -> None:
    with pytest.raises(TypeError, match=r"load the spec first, `afp.to_mermaid\(afp.load\(path\)\)`"):
        afp.to_mermaid("support.afp")


def test_otel_export_takes_a_result_or_its_trace_and_names_the_fix_otherwise() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider

    from afp_dsl import otel
    r = afp.load('agent a { system = "x" }').agent(provider=afp.providers.mock(["hi"])).run("hello")
    assert [s.name for s in otel.spans(r)] == [s.name for s in otel.spans(r.trace)]
    with pytest.raises(TypeError, match="not a value of type `str`"):
        otel.export_run(r.run_id, TracerProvider())
    with pytest.raises(TypeError, match="needs an OpenTelemetry `TracerProvider`"):
        otel.export_run(r.trace, None)


@pytest.mark.parametrize("url, hidden", [
    ("postgresql://127.0.0.1:1/afp?password=PWsecret", "PWsecret"),
    ("postgresql://user:PW/secret@h/db", "PW/secret"),
    ("postgresql://user:PW@secret@h:5432/db?sslpassword=k3y&a=b", "k3y"),
])
def test_a_postgres_url_is_shown_without_its_password(url: str, hidden: str) -> None:
    from afp_dsl.store_postgres import safe_url
    shown = safe_url(url)
    assert hidden not in shown and "secret" not in shown and "***" in shown


@pytest.mark.parametrize("value", ["   ", "nope://x"])
def test_a_bad_store_from_the_environment_names_the_variable(monkeypatch, value: str) -> None:
    from afp_dsl.store import StoreError, from_url
    monkeypatch.setenv("AFP_STORE", value)
    with pytest.raises(StoreError, match="environment variable AFP_STORE; fix or unset it"):
        from_url(None)


@pytest.mark.parametrize("cause, said", [
    ("unable to open database file", "check that its folder exists and can be written"),
    ("[Errno 17] File exists: 'notes.txt'", "a part of the path is a file, not a folder"),
    ("[Errno 20] Not a directory: 'a/b'", "a part of the path is a file, not a folder"),
])
def test_a_store_that_cannot_be_opened_names_the_likely_fix(cause: str, said: str) -> None:
    from afp_dsl.store import failed
    assert said in str(failed("cannot open the run store `x`", cause))


def test_a_one_line_string_without_a_body_is_a_path():
    """`check("specs/support")` (a path without `.afp` that does not exist) said "unknown
    declaration kind `specs`"; every declaration has a `{ body }`, so it is a missing file."""
    import afp_dsl
    for path in ("support", "specs/support", "./specs/support", "my spec"):
        assert [d.code for d in afp_dsl.check(path)] == ["AFP109"], path
    assert [d.code for d in afp_dsl.check("agent a")] == ["AFP001"]  # (a declaration cut short)
    assert afp_dsl.check("# only a comment") == []


def test_a_resume_through_another_agent_s_store_keeps_the_whole_trace():
    """A checkpoint resumed by an agent whose own (memory) store never saw the run: the trace
    (and `why`) start from the user message. Before: from `run.resumed` on, so `why` never
    reached the message and the stored run lacked its first iteration."""
    agent, result, ran = _paused()
    other = PROGRAM.agent(provider=afp.providers.mock(["done"]),
                          tools={"issue_refund": lambda order_id, amount: ran.append(amount) or "ok"})
    done = other.resume(result.checkpoint, afp.approve(result.checkin, by="dana"))
    assert (done.outcome, ran) == ("answered", [240])
    seqs = [e.seq for e in done.trace]
    assert seqs == list(range(1, len(seqs) + 1)) and done.trace[0].kind == "run.started"
    assert "user message" in done.why()
    assert [e.seq for e in other.store.events(done.run_id)] == seqs
