"""Provider events in the trace: each model call records its own, whoever shares the provider."""
from __future__ import annotations

import asyncio
import gc
import threading
import weakref

import pytest

import afp_dsl as afp
from afp_dsl.providers import _errors as h
from afp_dsl.providers._http import Observable
from afp_dsl.providers.base import Provider, Reply
from afp_dsl.providers.resilience import with_retry

pytestmark = pytest.mark.timeout(60)
SPEC = """
agent desk {
  system = "You are a desk."
  tools  = [lookup_order]
}
tool lookup_order {
  description = "Look up an order."
  input { order_id: string }
  impl = returns({ status: "found" })
}
"""


class Streamer(Observable, Provider):
    """Streams `pieces` chunks of a reply; fails first with each of `failures`; with `barrier`,
    waits there before streaming and again before replying (so concurrent calls overlap)."""

    name = "streamer"

    def __init__(self, pieces=3, failures=(), barrier=None):
        self._init_events()
        self.pieces, self.failures, self.barrier = pieces, list(failures), barrier

    def complete(self, request):
        if self.failures:
            raise self.failures.pop(0)
        if self.barrier is not None:
            self.barrier.wait(timeout=10)
        for i in range(self.pieces):
            self._emit("llm.chunk", text=f"piece {i} ")
        if self.barrier is not None:
            self.barrier.wait(timeout=10)
        return Reply(text="done")

    async def acomplete(self, request):
        for i in range(self.pieces):
            self._emit("llm.chunk", text=f"piece {i} ")
            await asyncio.sleep(0)  # (lets the other tasks' calls interleave with this one)
        return Reply(text="done")


def _llm(result):
    return [(e.kind, e.payload.get("chunks")) for e in result.trace if e.kind.startswith("llm.")]


def test_two_agents_on_one_provider_record_only_their_own_events():
    shared = with_retry(Streamer(5, [h.ServerError("boom")]), sleep=lambda d: None)
    program = afp.load(SPEC)
    a, b = program.agent(provider=shared), program.agent(provider=shared)
    ra, rb = a.run("hi"), b.run("hi")
    assert _llm(ra) == [("llm.called", None), ("llm.retry", None), ("llm.replied", 5)]
    assert _llm(rb) == [("llm.called", None), ("llm.replied", 5)]
    retry = next(e for e in ra.trace if e.kind == "llm.retry")
    called = next(e for e in ra.trace if e.kind == "llm.called")
    assert retry.caused_by == (called.id,)


def test_threads_sharing_one_streaming_agent_each_count_their_own_chunks():
    n = 4
    agent = afp.load(SPEC).agent(provider=Streamer(3, barrier=threading.Barrier(n)))
    counts: list = []

    def run():
        counts.append(_llm(agent.run("hi"))[-1])

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == [("llm.replied", 3)] * n


def test_async_tasks_sharing_one_streaming_agent_each_count_their_own_chunks():
    agent = afp.load(SPEC).agent(provider=Streamer(3))

    async def main():
        return await asyncio.gather(*(agent.arun("hi") for _ in range(4)))

    assert [_llm(r)[-1] for r in asyncio.run(main())] == [("llm.replied", 3)] * 4


def test_agents_dropped_leave_no_hook_on_the_provider():
    provider = Streamer(1)
    program = afp.load(SPEC)
    agent = program.agent(provider=provider)
    agent.run("hi")
    gone = weakref.ref(agent)
    for _ in range(50):
        program.agent(provider=provider).run("hi")
    del agent
    gc.collect()
    assert gone() is None
    assert provider._hooks == []


def test_a_hook_of_the_hosts_own_still_sees_every_event():
    provider = Streamer(2)
    seen: list = []
    provider.subscribe(seen.append)
    result = afp.load(SPEC).agent(provider=provider).run("hi")
    assert _llm(result)[-1] == ("llm.replied", 2) and len(seen) == 2


def test_who_publishes_events_as_providers_md_says():
    """docs/providers.md: each vendor adapter and wrapper has `subscribe(hook)` and `events`, the
    last 1000; the mock publishes none and has neither (a wrapper around it still has both)."""
    from afp_dsl.providers.anthropic import anthropic
    from afp_dsl.providers.ollama import ollama
    from afp_dsl.providers.openai import openai
    env = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "test"}
    for p in (openai(env=env), anthropic(env=env), ollama(), with_retry(afp.providers.mock())):
        assert callable(p.subscribe(lambda event: None)), type(p).__name__
        assert p.events.maxlen == 1000, type(p).__name__
    mock = afp.providers.mock()
    assert not hasattr(mock, "subscribe") and not hasattr(mock, "events")
