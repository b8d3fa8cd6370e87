"""Wrong arguments to `program.agent(...)` and `run(...)` fail at once, naming the fix, instead of
being accepted silently (a binding that is not a function, a tool name with a typo, a message that
is not text) or failing deep inside a run (a path given as the store, a string as the provider)."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import afp_dsl as afp
from afp_dsl.runtime import Stub, Stubs

SPEC = """
agent desk { tools = [lookup_order] }
tool lookup_order { description = "Find an order." input { id: string } }
"""


@pytest.fixture(scope="module")
def program():
    return afp.load(SPEC)


@pytest.mark.parametrize("kw, error, words", [
    ({"tools": {"lookup_order": 42}}, TypeError, "binding of tool `lookup_order` must be a function"),
    ({"tools": {"lookup_ordr": print}}, ValueError, "did you mean `lookup_order`?"),
    ({"tools": [print]}, TypeError, "`tools` must map tool names to functions"),
    ({"provider": 42}, TypeError, "`provider` must be a model provider"),  # (a name: a provider)
    ({"store": "runs.db"}, TypeError, "pass `afp.stores.sqlite(path)`"),
    ({"store": object()}, TypeError, "not an `object`"),
    ({"effects": afp.Effects(tools={"lookup_order": 42})}, TypeError,
     "binding of tool `lookup_order` must be a function"),
    ({"effects": afp.Effects(tools={"lookup_ordr": print})}, ValueError,
     "`Effects(tools=...)` binds `lookup_ordr`, but the spec declares no tool of that name"),
    ({"effects": afp.Effects(tools=[print])}, TypeError, "`Effects(tools=...)` must map tool names"),
    ({"effects": afp.Effects(provider="mock")}, TypeError,
     "`Effects(provider=...)` must be a model provider"),
    ({"effects": {"tools": {}}}, TypeError, "`effects` must be an `afp_dsl.effects.Effects`"),
    ({"stubs": 5}, TypeError, "`stubs=` must be an `afp_dsl.runtime.Stubs`"),
    ({"stubs": {"lookup_order": "x"}}, TypeError, "not a `dict`"),
    ({"spec": ["a"]}, TypeError, "`spec=` must be the path of the spec file"),
    ({"spec": b"x"}, TypeError, "not a `bytes`"),
    ({"spec": Path("desk.afp")}, TypeError, "pass `str(path)`"),
])
def test_a_wrong_argument_to_agent_names_the_fix(program, kw, error, words):
    with pytest.raises(error, match=None) as caught:
        program.agent(**kw)
    assert words in str(caught.value)


@pytest.mark.parametrize("message", [None, 42, b"bytes", ["hi"]])
def test_a_message_that_is_not_text_is_refused_before_the_run(program, message):
    agent = program.agent(provider=afp.providers.mock(["hi"]))
    with pytest.raises(TypeError, match="the message must be text"):
        agent.run(message)
    with pytest.raises(TypeError, match="the message must be text"):
        asyncio.run(agent.arun(message))
    assert agent.store.runs() == []  # nothing was started


@pytest.mark.parametrize("conversation", [5, "conv-1", object()])
def test_a_conversation_that_is_not_one_is_refused_before_the_run(program, conversation):
    agent = program.agent(provider=afp.providers.mock(["hi"]))
    with pytest.raises(TypeError, match="`conversation=` must be a `Conversation`"):
        agent.run("hi", conversation=conversation)
    with pytest.raises(TypeError, match="`conversation=` must be a `Conversation`"):
        asyncio.run(agent.arun("hi", conversation=conversation))
    assert agent.store.runs() == []


def test_what_the_api_documents_is_accepted(program):
    class Minimal:  # a store written to the protocol's methods, without `path` or `durable`
        def __init__(self):
            self.inner = afp.stores.memory()

        def __getattr__(self, name):
            return getattr(self.inner, name)

    agent = program.agent(provider=afp.providers.mock([[("lookup_order", {"id": "A1"})], "ok"]),
                          tools={"lookup_order": lambda id: {"id": id}}, store=Minimal())
    assert agent.run("find A1").outcome == "answered"
    effects = afp.Effects(provider=afp.providers.mock([[("lookup_order", {"id": "A2"})], "ok"]),
                          tools={"lookup_order": lambda id: {"id": id}})
    stubs = Stubs()
    stubs.add("lookup_order", Stub(returns={"id": "stubbed"}))
    result = program.agent(effects=effects, stubs=stubs, spec="desk.afp").run("find A2")
    assert result.outcome == "answered"
    returned = [e.payload["result"] for e in result.trace if e.kind == "tool.returned"]
    assert returned == [{"id": "stubbed"}]
