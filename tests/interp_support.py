"""Shared helpers for the interpreter tests: load spec text, run it under a recording mock."""
from __future__ import annotations

import textwrap
from typing import Any

import afp_dsl as afp
from afp_dsl.effects import Effects, counter_ids
from afp_dsl.providers.base import Provider, Reply, Request
from afp_dsl.providers.mock import MockProvider


class Recording(Provider):
    """A mock that also keeps every request it was sent (what the model saw)."""

    name = "recording"

    def __init__(self, script: list | None = None, fail_at: int | None = None):
        self.inner = MockProvider(script)
        self.requests: list[Request] = []
        self.fail_at = fail_at

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        if self.fail_at is not None and len(self.requests) == self.fail_at:
            from afp_dsl.providers.base import ProviderError
            raise ProviderError("the server is unreachable")
        return self.inner.complete(request)


def load(spec: str) -> Any:
    return afp.load(textwrap.dedent(spec))


def make(spec: str, script: list | None = None, *, name: str | None = None,
         tools: dict | None = None, fail_at: int | None = None, **kw: Any):
    """(agent, recording provider) for spec text."""
    provider = Recording(script, fail_at)
    agent = load(spec).agent(name, provider=provider, tools=tools or {},
                             effects=Effects(run_ids=counter_ids("r")), **kw)
    return agent, provider


def kinds(result) -> list[str]:
    return [e.kind for e in result.trace]


def payloads(result, kind: str) -> list[dict]:
    return [e.payload for e in result.trace if e.kind == kind]


def moves(result) -> list[tuple]:
    return [(p["from"], p["to"], p["cause"]) for p in payloads(result, "cursor.moved")]


def call(tool: str, **args: Any) -> list:
    """A scripted reply calling one tool."""
    return [(tool, args)]


def tool_texts(request: Request) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


def run_blocks(tmp_path, spec: str, allowed: tuple[str, ...] = ()) -> dict:
    """Check `spec` (no errors; only the `allowed` warning codes), run its test blocks, each of
    which must pass; returns {test name: (TestResult, [RunResult, ...])}."""
    from afp_dsl.api import Program, analyse
    from afp_dsl.diagnostics import has_errors
    from afp_dsl.testing import collect, run_test
    f = tmp_path / "scenario.afp"
    f.write_text(textwrap.dedent(spec), encoding="utf-8")
    loaded, diags = analyse(f)
    assert loaded is not None and not has_errors(diags), [d.message for d in diags]
    assert {d.code for d in diags} <= set(allowed), [(d.code, d.message) for d in diags]
    program = Program(loaded, diags)
    out = {}
    for t in collect(program, str(f), None):
        runs: list = []
        out[t.name] = (run_test(program, t, str(f), observe=runs.append), runs)
    for name, (res, _) in out.items():
        assert res.passed, (name, res.failures)
    return out
