"""One refund-desk spec run under the mock and under each vendor's local fake: identical traces
(but for streaming's chunk count); each provider error through `afpc run` (message, exit code)."""
from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

import afp_dsl
from afp_dsl.effects import Effects
from afp_dsl.providers.base import Reply, ToolCall, Usage
from afp_dsl.providers.mock import mock
from afp_dsl.providers.registry import make_provider
from afp_dsl.runner import Agent
from tests.fakes.clients import KEY, env_for, make
from tests.fakes.server import FakeServer, Hang, Response, free_port
from tests.fakes.vendors import REPLY_MODEL, VENDORS, Turn, scripted

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("ollama")
pytestmark = pytest.mark.timeout(120)

SPEC = """
agent desk {
  system = "You are a refund desk. Be brief."
  model  = "desk-model"
  tools  = [lookup_order, refund]
}
tool lookup_order {
  description = "Look up an order."
  input { order_id: string }
  impl = returns({ status: "found", amount: 20 })
}
tool refund {
  description = "Refund an amount on an order."
  input { order_id: string amount: number }
  impl = returns("refunded")
}
"""
LOOKUP = {"order_id": "AB-12"}
REFUND = {"order_id": "AB-12", "amount": 20}
ANSWER = "Refunded 20 on AB-12."
TURNS = [Turn("", (("call-1-1", "lookup_order", LOOKUP),)),
         Turn("", (("call-2-1", "refund", REFUND),)), Turn(ANSWER)]


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("desk") / "desk.afp"
    path.write_text(textwrap.dedent(SPEC))
    return path


def mock_script() -> list:
    u = Usage(*Turn().usage)
    return [Reply("", (ToolCall("call-1-1", "lookup_order", LOOKUP),), u, "tool_use"),
            Reply("", (ToolCall("call-2-1", "refund", REFUND),), u, "tool_use"),
            Reply(ANSWER, (), u, "stop")]


def run(spec_file, provider):
    result = Agent(afp_dsl.load(spec_file), provider=provider, effects=Effects()).run(
        "refund AB-12 please")
    return result, [e.to_dict() for e in result.trace.events]


def without_provider_fields(events: list) -> list:
    out = []
    for e in events:
        payload = dict(e["payload"]) if isinstance(e["payload"], dict) else e["payload"]
        if e["kind"] == "llm.replied":  # (and what the vendor's reply says of itself)
            for key in ("chunks", "response_id", "response_model"):
                payload.pop(key, None)
        if e["kind"] == "run.started":  # names the provider that ran (and must: see below)
            payload.pop("provider", None)
        out.append(dict(e, payload=payload))
    return out


@pytest.mark.parametrize("vendor", list(VENDORS))
@pytest.mark.parametrize("stream", [False, True])
def test_the_same_spec_gives_the_same_trace_under_mock_and_each_vendor(spec_file, vendor,
                                                                        stream):
    expected, expected_trace = run(spec_file, mock(mock_script()))
    assert expected.outcome == "answered" and expected.answer == ANSWER
    with FakeServer(scripted(VENDORS[vendor], TURNS)) as srv:
        result, trace = run(spec_file, make(vendor, srv.url, model=None, stream=stream))
    assert (result.outcome, result.answer) == ("answered", ANSWER)
    assert without_provider_fields(trace) == without_provider_fields(expected_trace)
    assert trace[0]["payload"]["provider"] == vendor and expected_trace[0]["payload"]["provider"] == "mock"
    assert [b["model"] for b in srv.bodies] == ["desk-model"] * 3  # the spec's model
    replied = [e["payload"] for e in trace if e["kind"] == "llm.replied"]
    assert {p.get("response_model") for p in replied} == {REPLY_MODEL}  # the model that answered
    assert all("response_id" in p for p in replied) == (vendor != "ollama")  # (Ollama has none)
    tools = srv.bodies[0]["tools"]
    assert len(tools) == 2
    if stream:
        replied = [e for e in trace if e["kind"] == "llm.replied"]
        assert replied[-1]["payload"].get("chunks", 0) > 0


# ---------------------------------------------------------------- errors through `afpc run`
def afpc_run(spec_file, tmp_path, monkeypatch, provider: str, env: dict, timeout: float = 5.0):
    import afp_dsl.providers as providers
    from afp_dsl.cli import main

    def by_name(name, model=None, script=None, **kw):
        return make_provider(name, model=model, script=script, env=env, timeout=timeout, **kw)
    monkeypatch.setattr(providers, "by_name", by_name)
    res = CliRunner().invoke(main, ["run", str(spec_file), "-m", "refund AB-12", "--provider",
                                    provider, "--store", str(tmp_path / "runs.db"), "--json"])
    assert KEY not in res.output
    assert "Traceback" not in res.output
    return res


def run_error(spec_file, tmp_path, monkeypatch, vendor, item, timeout=5.0):
    with FakeServer(scripted(VENDORS[vendor], [item])) as srv:
        res = afpc_run(spec_file, tmp_path, monkeypatch, vendor, env_for(vendor, srv.url),
                       timeout)
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["outcome"] == "error"
    assert out["error"].startswith("AFP502 provider error on LLM call #1: ")
    return out["error"]


@pytest.mark.parametrize("vendor,var", [("openai", "OPENAI_API_KEY"),
                                        ("anthropic", "ANTHROPIC_API_KEY")])
def test_run_without_a_key_exits_2_naming_the_variable(spec_file, tmp_path, monkeypatch, vendor,
                                                       var):
    res = afpc_run(spec_file, tmp_path, monkeypatch, vendor, {})
    assert res.exit_code == 2 and f"set {var}" in res.output


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_run_against_a_server_not_listening(spec_file, tmp_path, monkeypatch, vendor):
    env = env_for(vendor, f"http://127.0.0.1:{free_port()}")
    res = afpc_run(spec_file, tmp_path, monkeypatch, vendor, env)
    assert res.exit_code == 1
    error = json.loads(res.stdout.strip().splitlines()[-1])["error"]
    assert "cannot connect" in error
    if vendor == "ollama":
        assert "start it with `ollama serve`" in error


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_run_with_an_unknown_model(spec_file, tmp_path, monkeypatch, vendor):
    error = run_error(spec_file, tmp_path, monkeypatch, vendor,
                      VENDORS[vendor].error(404, "model not found"))
    assert "model `desk-model`" in error
    if vendor == "ollama":
        assert "run `ollama pull desk-model`" in error


@pytest.mark.parametrize("vendor", list(VENDORS))
@pytest.mark.parametrize("item,expected", [
    (lambda w: w.error(429, "slow down", (("retry-after", "3"),)), "rate limited (429"),
    (lambda w: w.error(502, "bad gateway"), "server error 502"),
    (lambda w: Response(200, "<html>captive portal</html>", content_type="text/html"),
     "check that the URL points at the right API"),
    (lambda w: Turn(""), "neither text nor tool calls"),
], ids=["429", "5xx", "malformed", "empty"])
def test_run_errors_name_the_fix(spec_file, tmp_path, monkeypatch, vendor, item, expected):
    error = run_error(spec_file, tmp_path, monkeypatch, vendor, item(VENDORS[vendor]))
    assert expected in error


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_arguments_that_are_not_json_are_answered_as_invalid_and_the_model_calls_again(
        spec_file, vendor):
    """Before: the run ended with BadToolArgumentsError (quoting the arguments). Now the call is
    not executed, the model reads why (never the arguments), and its next call goes through."""
    turns = [Turn("", (("call-1-1", "lookup_order", '{"order_id": "AB-'),)),
             Turn("", (("call-2-1", "lookup_order", '{"order_id": "AB-12"}'),)),
             Turn("", (("call-3-1", "refund", json.dumps(REFUND)),)), Turn(ANSWER)]
    with FakeServer(scripted(VENDORS[vendor], turns)) as srv:
        result, trace = run(spec_file, make(vendor, srv.url, model=None))
    assert (result.outcome, result.answer) == ("answered", ANSWER)
    (bad,) = [e["payload"] for e in trace if e["kind"] == "tool.args_invalid"]
    assert bad["problems"] == ["arguments: not a JSON object (17 characters that are not valid "
                               "JSON)"]
    returned = [e["payload"] for e in trace if e["kind"] == "tool.returned"]
    assert [r["status"] for r in returned] == ["invalid", "success", "success"]
    assert "the call was not executed" in returned[0]["read"]
    assert returned[0]["executed"] is False
    called = [e["payload"]["args"] for e in trace if e["kind"] == "tool.called"]
    assert called[0] == {}  # (the unread arguments are nowhere in the trace)
    history = {k: v for k, v in srv.bodies[1].items() if k != "tools"}
    assert "order_id" not in json.dumps(history)  # (the history sends the call back with `{}`)


@pytest.mark.parametrize("vendor", list(VENDORS))
def test_run_times_out_instead_of_hanging(spec_file, tmp_path, monkeypatch, vendor):
    error = run_error(spec_file, tmp_path, monkeypatch, vendor, Hang(), timeout=0.3)
    assert "within 0.3s" in error


def test_retry_and_fallback_events_reach_the_trace(spec_file):
    sleeps: list = []
    with FakeServer(scripted(VENDORS["ollama"], TURNS)) as srv:
        env = {"OPENAI_API_KEY": KEY,
               "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OLLAMA_HOST": srv.url}
        p = make_provider("openai", retries=1, fallback="ollama:llama3.2", env=env,
                          sleep=sleeps.append, timeout=5)
        result, trace = run(spec_file, p)
    assert result.answer == ANSWER
    kinds = [e["kind"] for e in trace]
    assert kinds.count("llm.retry") == 3 and kinds.count("llm.fallback") == 3
    assert all(KEY not in json.dumps(e) for e in trace)
