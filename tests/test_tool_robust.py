"""Host tool bodies that end the process or return values with no JSON form (docs/embedding.md,
"Tool bodies"): both are the tool's `failure`, which the model reads; never a silent exit, never
a repr. Each test here failed before the fix: `sys.exit` in a tool body ended `run()` / `afpc`
with SystemExit (`afpc test` exited 0 with no report), and a set, a generator or an object was
sent to the model as its repr (a memory address, a hash-seeded order: traces differed run to run).
"""
from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import textwrap

import pytest
from interp_support import call, make, payloads, tool_texts

from afp_dsl import described
from afp_dsl.stores import memory

SPEC = """
agent g { tools = [lookup] }
tool lookup { description = "look" input { id: string } }
"""

NESTED = """
agent outer { tools = [delegate] }
agent helper { tools = [lookup] }
tool delegate { description = "d" input { q: string } impl = agent(helper) }
tool lookup { description = "look" input { id: string } }
"""


def _returned(r) -> dict:
    (ret,) = payloads(r, "tool.returned")
    return ret


def _exit(code):
    def body(id):
        sys.exit(code)
    return body


# ---------------------------------------------------------------- finding 3: sys.exit in a tool body
@pytest.mark.parametrize("code, says", [(0, "sys.exit(0)"), (3, "sys.exit(3)"),
                                        ("bad config", "sys.exit('bad config')"), (None, "sys.exit()")])
def test_sys_exit_in_a_tool_is_a_failure_the_model_reads(code, says) -> None:
    store = memory()
    agent, prov = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": _exit(code)},
                       store=store)
    r = agent.run("hi")  # (before: SystemExit out of `run()`)
    ret = _returned(r)
    assert ret["status"] == "failure" and ret["executed"] is True
    assert f"`lookup` called {says}" in ret["result"]["error"]
    assert f"`lookup` called {says}" in tool_texts(prov.requests[-1])[0]  # what the model read
    assert (r.outcome, r.answer) == ("answered", "done")
    assert store.run(r.run_id)["status"] == "finished"  # (before: `interrupted`)


@pytest.mark.parametrize("kind", ["sync-arun", "async-arun", "async-run"])
def test_sys_exit_is_a_failure_under_both_drivers(kind) -> None:
    async def exits(id):
        await asyncio.sleep(0)
        sys.exit(0)
    body = _exit(0) if kind == "sync-arun" else exits
    agent, _ = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": body})
    r = asyncio.run(agent.arun("hi")) if kind.endswith("arun") else agent.run("hi")
    assert _returned(r)["status"] == "failure" and r.outcome == "answered"
    assert "`lookup` called sys.exit(0)" in _returned(r)["result"]["error"]


def test_sys_exit_in_a_tool_of_an_inner_agent_is_that_tool_failing() -> None:
    script = [call("delegate", q="find A"), call("lookup", id="A"), "inner: lookup failed", "outer done"]
    agent, prov = make(NESTED, script, name="outer", tools={"lookup": _exit(0)})
    r = agent.run("hi")
    assert (r.outcome, r.answer) == ("answered", "outer done")
    inner = r.inner["delegate"].get(_returned(r)["call_id"])
    (ret,) = [e.payload for e in inner if e.kind == "tool.returned"]
    assert ret["status"] == "failure" and "`lookup` called sys.exit(0)" in ret["result"]["error"]


def test_an_envelope_whose_to_model_calls_sys_exit_is_a_failure() -> None:
    class Quits:
        status = "success"

        def to_model(self):
            sys.exit(0)
    agent, _ = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: Quits()})
    r = agent.run("hi")
    assert _returned(r)["status"] == "failure"
    assert "envelope raised SystemExit" in _returned(r)["read"]


def test_afpc_test_with_a_tool_calling_sys_exit_reports_its_failing_tests(tmp_path) -> None:
    """End to end: before, `afpc test` printed nothing, wrote no JUnit file and exited 0."""
    (tmp_path / "quitter.py").write_text("import sys\ndef ex0(**k):\n    sys.exit(0)\n",
                                         encoding="utf-8")
    (tmp_path / "s.afp").write_text(textwrap.dedent("""
        agent a { system = "s" tools = [t] }
        tool t { description = "d" input { q: string "q" } impl = python("quitter:ex0") }
        test first {
          user "hi"
          model calls t { q: "x" }
          model says "done"
          expect answer matches /nothing like this/
        }
        test second {
          user "hi"
          model says "done"
          expect answer matches /nothing like this/
        }
        """), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path),
                                                                     os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "afp_dsl.cli", "test", "s.afp", "--junit", "j.xml"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "s.afp::first FAILED" in out.stdout and "s.afp::second FAILED" in out.stdout
    assert "`t` called s" in out.stdout  # the failure the model read, in the test's last events
    assert (tmp_path / "j.xml").exists() and "Traceback" not in out.stderr


# ---------------------------------------------------------------- finding 7: results with no JSON form
def _gen():
    yield 1


class Point:
    def __init__(self):
        self.x = 1


@pytest.mark.parametrize("value, where", [
    (object(), "it is an `object`"),
    (_gen(), "it is a `generator`"),
    ({"status": "found", "tags": {"alpha", "beta", "gamma"}}, "`tags` is a `set`"),
    ({"rows": [{"tags": frozenset({"a", "b"})}]}, "`rows[0].tags` is a `frozenset`"),
    ([1, b"\xff"], "`[1]` is a `bytes`"),
    ({Point(): 1}, "it has a `Point` as a map key"),
    (described({"p": Point()}, description="d"), "`value.p` is a `Point`"),
])
def test_a_result_with_no_json_form_is_a_failure_naming_its_type_and_place(value, where) -> None:
    agent, prov = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: value})
    r = agent.run("hi")
    ret = _returned(r)
    assert ret["status"] == "failure" and ret["result"]["error"] == ret["read"]
    assert where in ret["read"], ret["read"]
    assert "return JSON-like data: dict, list, str, number, bool, None" in ret["read"]
    read = tool_texts(prov.requests[-1])[0]
    for leak in (" at 0x", "alpha", "{'", "b'\\xff'", "2026"):  # no repr reaches the model
        assert leak not in read, read


def test_dates_decimals_and_uuids_are_sent_as_their_text() -> None:
    """Their text is deterministic and means what the value means: written as `str()`, as before."""
    import decimal
    import uuid
    value = {"when": datetime.date(2026, 1, 2), "at": datetime.datetime(2026, 1, 2, 3, 4, 5),
             "price": decimal.Decimal("1.50"), "id": uuid.UUID(int=7)}
    agent, prov = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: value})
    ret = _returned(agent.run("hi"))
    assert ret["status"] == "success", ret
    assert ret["result"] == {"when": "2026-01-02", "at": "2026-01-02 03:04:05", "price": "1.50",
                             "id": "00000000-0000-0000-0000-000000000007"}


def test_an_envelope_whose_to_model_is_not_text_has_no_repr_either() -> None:
    class Odd:
        status = "success"

        def to_model(self):
            return {"x": object()}
    agent, _ = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: Odd()})
    r = agent.run("hi")
    assert _returned(r)["status"] == "failure" and "`x` is an `object`" in _returned(r)["read"]
    assert " at 0x" not in r.trace.to_json()


def test_equal_effects_give_identical_traces_whatever_the_tool_returns() -> None:
    def trace_of(value):
        agent, _ = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: value})
        return agent.run("hi").trace.to_json()
    assert trace_of(object()) == trace_of(object())  # (before: two addresses)


def test_a_set_result_reads_the_same_under_any_hash_seed() -> None:
    code = textwrap.dedent("""
        import sys; sys.path.insert(0, sys.argv[1])
        from interp_support import call, make
        spec = 'agent g { tools = [lookup] }\\ntool lookup { description = "l" input { id: string } }'
        tags = {"alpha", "beta", "gamma", "delta", "epsilon"}
        agent, _ = make(spec, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: tags})
        print(agent.run("hi").trace.to_json())
        """)
    here = os.path.dirname(os.path.abspath(__file__))
    outs = {subprocess.run([sys.executable, "-c", code, here], capture_output=True, text=True,
                           check=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2", "3")}
    assert len(outs) == 1  # (before: the set's order, so the trace, changed with the seed)


# ---------------------------------------------------------------- sys.exit in a provider
class _QuittingProvider:
    """A host's own provider whose model call ends in `sys.exit`."""

    name = "quits"

    def __init__(self, code):
        self.code = code

    def complete(self, request):
        sys.exit(self.code)

    async def acomplete(self, request):
        await asyncio.sleep(0)
        sys.exit(self.code)


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_sys_exit_in_a_provider_is_a_provider_failure_not_the_end_of_the_host(driver) -> None:
    """Before: SystemExit came out of `run()` / `arun()` (the run kept as `interrupted`)."""
    from afp_dsl import load
    store = memory()
    agent = load(SPEC).agent(provider=_QuittingProvider(7), tools={"lookup": lambda id: id},
                             store=store)
    r = agent.run("hi") if driver == "run" else asyncio.run(agent.arun("hi"))
    assert r.outcome == "error" and "AFP502" in r.error
    assert "the provider called sys.exit(7)" in r.error
    assert store.run(r.run_id)["status"] == "finished"
    assert [e.kind for e in r.trace][-2:] == ["llm.called", "run.finished"]


# ---------------------------------------------------------- host campaign: tools, envelopes
@pytest.mark.parametrize("value", [{1: "a", "1": "b"}, {None: "a", "None": "b"},
                                   {"x": {1.5: 1, "1.5": 2}}])
def test_map_keys_that_write_as_the_same_text_are_a_failure_not_a_lost_value(value) -> None:
    """Before: `{1: "a", "1": "b"}` was recorded as `{"1": "b"}`, silently dropping a value."""
    agent, prov = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lambda id: value})
    ret = _returned(agent.run("hi"))
    assert ret["status"] == "failure" and "two map keys written as the same text" in ret["read"]
    assert "two map keys" in tool_texts(prov.requests[-1])[0]


class _Duck:
    """An envelope of the host's own (`status` and `to_model`)."""

    def __init__(self, status):
        self.status = status

    def to_model(self):
        return "text"


@pytest.mark.parametrize("status", ["weird", None, "denied", "pending"])
def test_an_envelope_with_a_status_no_result_has_is_a_failure(status) -> None:
    """Before: the run recorded status `weird` (or `denied`, `pending`: the pipeline's own) as the
    call's status, which no route can test and no reader expects."""
    agent, _ = make(SPEC, [call("lookup", id="A"), "done"],
                    tools={"lookup": lambda id: _Duck(status)})
    ret = _returned(agent.run("hi"))
    assert ret["status"] == "failure" and "`status` is" in ret["read"]


def test_an_envelope_s_own_statuses_are_still_read() -> None:
    agent, _ = make(SPEC, [call("lookup", id="A"), "done"],
                    tools={"lookup": lambda id: _Duck("partial")})
    assert _returned(agent.run("hi"))["status"] == "partial"


def test_absent_refuses_a_set_of_places_whose_order_changes_from_run_to_run() -> None:
    """Before: `searched={"a", "b"}` was recorded in the set's hash-seeded order."""
    from afp_dsl import absent
    with pytest.raises(TypeError, match=r"not a `set`.*sorted"):
        absent("none", searched={"orders", "archive"})
    assert absent("none", searched=sorted({"orders", "archive"})).searched == ("archive", "orders")


def _loop() -> dict:
    d: dict = {}
    d["self"] = d
    return d


def test_an_envelope_of_a_value_that_contains_itself_names_why() -> None:
    """Before: `maximum recursion depth exceeded in comparison`, which says nothing of the fix."""
    from afp_dsl import coverage
    with pytest.raises(ValueError, match="`value` cannot be read: it contains itself"):
        described(_loop(), description="d")
    with pytest.raises(ValueError, match="`rows` cannot be read: it contains itself"):
        coverage([_loop()])


def test_an_async_tool_under_run_inside_an_event_loop_says_to_use_arun() -> None:
    """Before: the model read asyncio's `asyncio.run() cannot be called from a running event loop`
    (and Python warned of a coroutine never awaited): no word of the fix."""
    async def lookup(id):
        return id

    async def host():
        agent, _ = make(SPEC, [call("lookup", id="A"), "done"], tools={"lookup": lookup})
        return agent.run("hi")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ret = _returned(asyncio.run(host()))
    assert ret["status"] == "failure" and "await agent.arun(...)" in ret["read"]
