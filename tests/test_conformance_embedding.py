"""The embedding API as a host program sees it (tooling.md §6: "Public names are few, typed,
documented, and stable"): a type checker reads the real types of the public names, not `Any`.
Each test here failed before the fix it pins (the embedding-API audit).
"""
from __future__ import annotations

import ast
import inspect
import asyncio
import pickle
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import afp_dsl as afp

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "support" / "support.afp"


# ---------------------------------------------------------------- typing (tooling.md §6)
def _type_checked_names() -> set[str]:
    """The names `afp_dsl/__init__.py` imports under `if TYPE_CHECKING:`."""
    tree = ast.parse((ROOT / "afp_dsl" / "__init__.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in ast.walk(node):
                if isinstance(imp, ast.ImportFrom):
                    names.update(a.asname or a.name for a in imp.names)
    return names


def test_every_lazily_imported_public_name_is_visible_to_type_checkers():
    """The package imports its names on first use (a module `__getattr__` typed `-> Any`); a
    type checker sees only what is imported under `TYPE_CHECKING`, so every public name is."""
    lazy = set(afp.__dict__["_LAZY"])
    assert lazy - _type_checked_names() == set()
    assert lazy | {"Span", "__version__"} == set(afp.__all__)


def _mypy(source: str, tmp_path: Path) -> str:
    pytest.importorskip("mypy")
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "cache"), "--no-error-summary",
                           str(script)], capture_output=True, text=True, cwd=tmp_path, env=env)
    return done.stdout


def test_a_host_script_is_type_checked_against_the_real_signatures(tmp_path):
    """Before: every public name read as `Any` (no error for `agent.run(5)`, no types on
    results), and `Diagnostic(...)`/`Label(...)` took no arguments for a type checker."""
    out = _mypy(f"""
        import afp_dsl as afp
        program = afp.load({str(SPEC)!r})
        reveal_type(program)
        agent = program.agent("support", provider=afp.providers.mock(["hi"]),
                              store=afp.stores.sqlite("runs.db"))
        result = agent.run("hello")
        reveal_type(result)
        reveal_type(result.answer)
        reveal_type(result.why())
        label = afp.Label(afp.Span("f.afp", 0, 1), "here", True)
        d = afp.Diagnostic("AFP101", afp.Severity.ERROR, "unknown", (label,), ("n",), "help")
        d2 = afp.Diagnostic(code="AFP101", severity=afp.Severity.ERROR, message="m")
        reveal_type(d.labels[0].span.start)
        agent.run(5)
        """, tmp_path)
    lines = out.splitlines()
    assert any('Revealed type is "afp_dsl.api.Program"' in x for x in lines), out
    assert any('Revealed type is "afp_dsl.results.RunResult"' in x for x in lines), out
    assert any('Revealed type is "str | None"' in x for x in lines), out
    assert any('Revealed type is "int"' in x for x in lines), out
    errors = [x for x in lines if ": error:" in x]
    assert len(errors) == 1 and '"run" of "Agent" has incompatible type "int"' in errors[0], out


def test_resume_is_typed_to_take_a_checkpoint_kept_as_json(tmp_path):
    """`agent.resume` takes the `Checkpoint`, the run id or its `data` as a dict (embedding.md);
    the hint said `Checkpoint | str`, so a host resuming from JSON failed type checking."""
    out = _mypy(f"""
        import json
        from typing import Any
        import afp_dsl as afp
        agent = afp.load({str(SPEC)!r}).agent()
        kept: dict[str, Any] = json.loads("{{}}")
        agent.resume(kept, afp.approve("ci-1"))
        """, tmp_path)
    assert ": error:" not in out, out


# ---------------------------------------------------------------- what a host logs or ships
SECRET_SPEC = '''
agent a {
  system     = "x"
  tools      = [pay]
  redact     = [sec]
  continuity = "conversation"
}
tool pay {
  description = "pay"
  input { card_number: string, amount: number }
}
redact sec { keys = ["card_number", "token"] }
'''
CARD, TOKEN = "4111111111111111", "tok-SECRET-123"


def test_a_conversation_s_repr_never_shows_its_raw_history():
    """semantics §9: raw values live only in memory, for the model. Before: `repr(chat)` (what a
    log line or a debugger prints) was the attrs repr, the whole history: the card number the
    model sent and the token the tool returned, both under redacted keys."""
    agent = afp.load(SECRET_SPEC).agent(
        provider=afp.providers.mock([[("pay", {"card_number": CARD, "amount": 3})], "done"]),
        tools={"pay": lambda card_number, amount: {"token": TOKEN}})
    chat = agent.conversation()
    result = chat.run("pay please")
    assert result.outcome == "answered"
    assert CARD in repr(chat.history) and TOKEN in repr(chat.history)  # (the live memory)
    shown = repr(chat)
    assert CARD not in shown and TOKEN not in shown
    assert chat.id in shown and result.run_id in shown and "4 messages" in shown


def test_public_objects_have_a_readable_repr():
    """An `Agent` and a `Trace` say what they are, not `<... object at 0x7f...>` (whose address
    differs from run to run)."""
    agent = afp.load('agent a { system = "x" }\n').agent(provider=afp.providers.mock(["hi"]))
    result = agent.run("hello")
    assert repr(agent) == "<afp Agent a of <text>>"
    assert repr(result.trace) == f"<Trace {result.run_id}: {len(result.trace)} events>"
    assert " at 0x" not in repr(result)


def test_a_compile_error_survives_pickling():
    """A `CompileError` raised in a worker process (multiprocessing, a process pool) is pickled
    back to the parent. Before: unpickling called `CompileError(<summary text>)`, which read the
    text as diagnostics and raised `AttributeError: 'str' object has no attribute 'is_error'`."""
    with pytest.raises(afp.CompileError) as caught:
        afp.load('agent a { tools = [lookup_ordr] }')
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is afp.CompileError
    assert again.diagnostics == caught.value.diagnostics and str(again) == str(caught.value)


def test_the_types_a_host_meets_are_concrete(tmp_path):
    """Where the type is plain, it is written: a provider of the host's own (any object with
    `complete`, as documented) is accepted by `program.agent` and `Effects`, a wrong one is not;
    the graph functions take a `Program`; `stores.from_url` gives a `Store`; `why`'s questions
    are keywords a checker knows. Before: `Effects(provider=5)`, `to_mermaid("x.afp")` and
    `result.why(skil="a")` passed, and a duck-typed provider was an error for `program.agent`."""
    out = _mypy(f"""
        import afp_dsl as afp
        from afp_dsl.providers import Reply, Request
        class Mine:
            def complete(self, request: Request) -> Reply:
                return Reply(text="hi")
        program = afp.load({str(SPEC)!r})
        agent = program.agent(provider=Mine())
        effects = afp.Effects(provider=Mine())
        reveal_type(afp.stores.from_url("memory:"))
        result = agent.run("hi")
        afp.Effects(provider=5)
        afp.to_mermaid("x.afp")
        result.why(skil="triage")
        """, tmp_path)
    assert 'Revealed type is "afp_dsl.store.Store"' in out, out
    errors = [x.split(": error: ")[1] for x in out.splitlines() if ": error:" in x]
    assert len(errors) == 3, out
    assert '"Effects" has incompatible type "int"' in errors[0]
    assert '"to_mermaid" has incompatible type "str"' in errors[1]
    assert 'Unexpected keyword argument "skil"' in errors[2]


# ---------------------------------------------------------------- sync and async
def test_a_provider_with_acomplete_only_runs_under_run_as_an_async_tool_does():
    """`Provider` says: implement `complete`, `acomplete` defaults to it. A subclass that wrote
    only `async def acomplete` ended every `run()` with `AFP502 ...: NotImplementedError`, naming
    no fix; it is awaited in a loop of its own, as an async host tool is under `run()`."""
    from afp_dsl.providers import Provider, Reply

    class AsyncOnly(Provider):
        async def acomplete(self, request):
            return Reply(text="async hi")

    class Neither(Provider):
        pass

    program = afp.load('agent a { system = "x" }\n')
    assert program.agent(provider=AsyncOnly()).run("go").answer == "async hi"
    assert asyncio.run(program.agent(provider=AsyncOnly()).arun("go")).answer == "async hi"

    async def inside_a_loop():
        return program.agent(provider=AsyncOnly()).run("go")

    stuck = asyncio.run(inside_a_loop())
    assert stuck.outcome == "error" and "await agent.arun(" in stuck.error
    empty = program.agent(provider=Neither()).run("go")
    assert empty.outcome == "error" and "implements neither `complete(request)`" in empty.error


# ---------------------------------------------------------------- results a host keeps
def _paused_refund():
    program = afp.load(SPEC)
    agent = program.agent(
        provider=afp.providers.mock([[("lookup_order", {"order_id": "CD-7"})],
                                     [("issue_refund", {"order_id": "CD-7", "amount": 240})],
                                     "done"]),
        tools={"issue_refund": lambda order_id, amount: "ok",
               "lookup_order": lambda order_id: {"status": "found", "amount": 240}})
    return program, agent, agent.run("order CD-7 charged twice")


def test_a_result_names_the_program_that_ran_as_afp_program():
    """embedding.md: `program` is the `Program` that ran (what `afp.load` returned). Before, it
    was the internal IR (`afp_dsl.ir.Program`), not an `afp.Program`."""
    program, _, result = _paused_refund()
    assert result.program is program and isinstance(result.program, afp.Program)
    assert afp.to_mermaid(result.program) == afp.to_mermaid(program)


def test_a_program_and_its_results_pickle_after_a_run():
    """A run fills the analysis's memo with compiled policy conditions (closures). Before, a
    `Program` that had run, and so every result naming it, failed to pickle (`Can't pickle
    local object '_compare.<locals>.compare_field'`): no result could cross to another process."""
    program, agent, result = _paused_refund()
    assert result.paused
    again = pickle.loads(pickle.dumps(result))
    assert again.why() == result.why() and again.checkin == result.checkin
    done = agent.resume(pickle.loads(pickle.dumps(result.checkpoint)),
                        afp.approve(pickle.loads(pickle.dumps(result.checkin)), by="maya"))
    assert done.outcome == "answered" and done.answer == "done"
    copy = pickle.loads(pickle.dumps(program))
    assert copy.agent(provider=afp.providers.mock(["hi"])).run("hello").answer == "hi"
    assert pickle.loads(pickle.dumps(done)).why() == done.why()


def test_a_clock_of_the_host_s_own_type_checks(tmp_path):
    """embedding.md: "a class whose `now()` counts up from `start` in steps of your own works
    too". Before, `clock_factory` was typed `Callable[[int], LogicalClock]`, so such a class was
    a type error."""
    out = _mypy("""
        import afp_dsl as afp
        class Tens:
            def __init__(self, start: int) -> None:
                self.t = start
            def now(self) -> int:
                self.t += 10
                return self.t
        afp.Effects(clock_factory=Tens)
        """, tmp_path)
    assert ": error:" not in out, out


# ---------------------------------------------------------------- documented (tooling.md §6)
def test_the_public_providers_and_stores_say_what_they_do():
    """`help(afp.stores.SqliteStore)` and `help(afp.providers.MockProvider)` document every
    method. Before, the stores' methods (documented only on the `Store` interface, which they do
    not subclass), `MockProvider.complete`/`.remaining` and `Provider.acomplete` had none."""
    undocumented = []
    for module in (afp.providers, afp.stores):
        for name in module.__all__:
            obj = getattr(module, name)
            if not inspect.isclass(obj):
                continue
            for attr, value in vars(obj).items():
                if attr.startswith("_") or not (inspect.isfunction(value) or isinstance(value, property)):
                    continue
                if not (inspect.getdoc(getattr(obj, attr)) or "").strip():
                    undocumented.append(f"{module.__name__}.{name}.{attr}")
    assert undocumented == []


def test_a_result_s_repr_shows_the_answer_as_recorded_not_the_raw_one():
    """The host holds the raw answer in `result.answer`; `repr(result)` (a log line) showed it
    too, secret and all, where the trace, the store and `afpc run` hold it redacted."""
    program = afp.load('agent a {\n  system = "x"\n  redact = [keys]\n}\n'
                       'redact keys { patterns = [/sk-[A-Za-z0-9]{20,}/] }\n')
    key = "sk-ABCDEFGHIJKLMNOPQRSTUVWX"
    result = program.agent(provider=afp.providers.mock([f"your key is {key}"])).run("my key?")
    assert result.answer == f"your key is {key}"
    assert key not in repr(result) and "answer='your key is [REDACTED]'" in repr(result)


def test_the_specs_own_embedding_example_type_checks(tmp_path):
    """tooling.md §6's code block, as written, under `mypy --strict`. Before: `result.checkpoint`
    and `result.checkin` are optional (None unless paused) and `resume`/`approve` did not take
    None, so `if result.paused: agent.resume(result.checkpoint, afp.approve(result.checkin,
    by="maya"))` was two type errors (None stays a `TypeError` at run time)."""
    out = _mypy(f"""
        import afp_dsl as afp

        def lookup(order_id: str) -> dict[str, object]:
            return {{"status": "found", "amount": 20}}

        program = afp.load({str(SPEC)!r})               # raises afp.CompileError(diagnostics) on errors
        diagnostics = afp.check({str(SPEC)!r})          # never raises for bad input
        agent = program.agent("support",
                              provider=afp.providers.mock(),
                              tools={{"lookup_order": lookup}},
                              store=afp.stores.sqlite("runs.db"))
        result = agent.run("I was charged twice for AB-12")
        result.outcome, result.answer, result.run_id, result.trace
        print(result.why())
        if result.paused:
            result = agent.resume(result.checkpoint, afp.approve(result.checkin, by="maya"))
        print(afp.to_mermaid(program, graph="desk"))

        async def main() -> None:
            await agent.arun("hello")
        """, tmp_path)
    assert ": error:" not in out, out


def test_none_from_an_unpaused_result_is_still_refused_naming_the_fix():
    agent = afp.load('agent a { system = "x" }\n').agent(provider=afp.providers.mock(["hi"]))
    result = agent.run("hi")
    with pytest.raises(TypeError, match="result.checkin` is None unless `result.paused"):
        afp.approve(result.checkin)
    with pytest.raises(TypeError, match="not None"):
        agent.resume(result.checkpoint, afp.approve("ci-1"))


def test_an_imported_agent_is_named_as_the_spec_refers_to_it(tmp_path):
    """language.md §3: a reference is `name` or `alias.name`. `program.agent("helper")` found an
    imported module's agent, but `program.agent("lib.helper")`, the way the spec writes it, was
    `AgentNotFound`."""
    (tmp_path / "lib.afp").write_text('agent helper {\n  system = "h"\n}\n', encoding="utf-8")
    (tmp_path / "root.afp").write_text('import "./lib.afp" as lib\nagent main {\n  system = "m"\n}\n',
                                       encoding="utf-8")
    program = afp.load(tmp_path / "root.afp")
    assert program.agent("lib.helper").name == program.agent("helper").name == "helper"
    assert program.agent("lib.helper", provider=afp.providers.mock(["hi"])).run("x").answer == "hi"
    for wrong in ("lib.main", "other.helper", "lib.nope"):
        with pytest.raises(afp.AgentNotFound):
            program.agent(wrong)


# ---------------------------------------------------------------- result envelopes (§7.6)
@pytest.mark.parametrize("searched, said", [
    (5, "not an `int`"), (b"orders", "not a `bytes`"), ([None], "it holds a `NoneType`"),
    (["orders", 3], "it holds an `int`"),
])
def test_absent_names_what_searched_was_given(searched, said):
    """Before: `absent("r", searched=5)` raised Python's own `'int' object is not iterable`,
    and `searched=b"orders"` a message that did not say it was bytes."""
    with pytest.raises(TypeError, match="`searched` must be a string or a list of strings") as e:
        afp.absent("nothing", searched=searched)
    assert said in str(e.value)
