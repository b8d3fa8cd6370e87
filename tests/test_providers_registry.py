"""make_provider: names, NAME:MODEL, env vars, retries and fallback wiring."""
from __future__ import annotations

import pytest

from afp_dsl.providers import _errors as h
from afp_dsl.providers.base import Message, ProviderError, Request
from afp_dsl.providers.mock import MockProvider
from afp_dsl.providers.registry import make_provider, split_name
from afp_dsl.providers.resilience import FallbackProvider, RetryProvider

pytestmark = pytest.mark.timeout(60)


def _have(*mods: str) -> bool:
    import importlib
    try:
        for m in mods:
            importlib.import_module(m)
    except ImportError:
        return False
    return True


sdks = pytest.mark.skipif(not _have("openai", "anthropic", "ollama"),
                          reason="the provider SDKs (extras openai, anthropic, ollama) are missing")


def test_split_name():
    assert split_name("ollama:llama3.2") == ("ollama", "llama3.2")
    assert split_name("OpenAI") == ("openai", None)
    assert split_name("ollama:hf.co/x/y:Q4") == ("ollama", "hf.co/x/y:Q4")


def test_mock_takes_the_script():
    p = make_provider("mock", script=["hello"])
    assert isinstance(p, MockProvider)
    assert p.complete(Request("", [Message("user", "x")])).text == "hello"


def test_mock_named_with_a_model_records_that_model():
    """`--provider mock:MODEL` (docs/providers.md, "Which model is used"): the trace records the
    named model, as it does for an adapter's; without one, the spec's."""
    from afp_dsl import load
    from afp_dsl.effects import Effects, counter_ids
    from afp_dsl.providers.base import requested_model
    spec = 'agent a {\n  system = "s"\n  model = "spec-model"\n}\n'
    for provider, expected in [(make_provider("mock:zzz", script=["hi"]), "zzz"),
                               (make_provider("mock", model="yyy", script=["hi"]), "yyy"),
                               (make_provider("mock", script=["hi"]), "spec-model")]:
        run = load(spec).agent(provider=provider, effects=Effects(run_ids=counter_ids("r"))).run("x")
        called = [e.payload for e in run.trace if e.kind == "llm.called"]
        assert [c["model"] for c in called] == [expected]
        assert [e.payload["model"] for e in run.trace if e.kind == "run.started"] == [expected]
    assert requested_model(make_provider("mock:m"), Request("", [], model="other")) == "m"
    with pytest.raises(TypeError, match="takes a model name"):
        from afp_dsl.providers.mock import mock
        mock(["x"], model="  ")


@sdks
def test_keys_and_hosts_come_from_env():
    env = {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
           "ANTHROPIC_API_KEY": "sk-b", "OLLAMA_HOST": "http://127.0.0.1:2"}
    assert make_provider("openai", env=env).base_url == "http://127.0.0.1:1/v1"
    assert make_provider("anthropic", model="claude-x", env=env).model == "claude-x"
    assert make_provider("ollama", env=env).host == "http://127.0.0.1:2"


@sdks
def test_the_name_model_wins_over_model():
    p = make_provider("ollama:llama3.2", model="other", env={})
    assert p.model == "llama3.2"


@sdks
@pytest.mark.parametrize("name,var", [("openai", "OPENAI_API_KEY"),
                                      ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_missing_key(name, var):
    with pytest.raises(h.MissingKeyError, match=var):
        make_provider(name, env={})


def test_an_unknown_name_suggests_one():
    with pytest.raises(ProviderError, match="did you mean `openai`"):
        make_provider("opnai", env={})


@sdks
def test_retries_and_fallback_wrap_both_sides():
    p = make_provider("ollama:a", retries=2, fallback="mock", env={})
    assert isinstance(p, FallbackProvider)
    assert isinstance(p.primary, RetryProvider) and p.primary.max_attempts == 3
    assert isinstance(p.backup, RetryProvider)
    assert make_provider("mock", retries=0).__class__ is MockProvider


@sdks
def test_fallback_to_ollama_when_openai_is_down():
    from tests.fakes.server import FakeServer, free_port
    from tests.fakes.vendors import VENDORS, Turn, scripted
    with FakeServer(scripted(VENDORS["ollama"], [Turn("local answer")])) as srv:
        env = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
               "OLLAMA_HOST": srv.url}
        sleeps: list = []
        p = make_provider("openai", retries=1, fallback="ollama:llama3.2", env=env,
                          sleep=sleeps.append, timeout=5)
        assert p.complete(Request("", [Message("user", "x")], model="gpt-x")).text == \
            "local answer"
    assert srv.bodies[0]["model"] == "llama3.2"
    assert [e.kind for e in p.events] == ["llm.retry", "llm.fallback"] and sleeps == [0.5]


def test_negative_retries_is_an_error():
    with pytest.raises(ProviderError):
        make_provider("mock", retries=-1)


@pytest.mark.parametrize("name,env", [("openai", {"OPENAI_API_KEY": "sk-x"}),
                                      ("anthropic", {"ANTHROPIC_API_KEY": "sk-x"}),
                                      ("ollama", {})])
def test_a_missing_sdk_names_the_extra(monkeypatch, name, env):
    import sys
    monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ImportError
    with pytest.raises(ProviderError, match=rf'pip install "afp-dsl\[{name}\]"'):
        make_provider(name, env=env)


@pytest.mark.parametrize("call,said", [
    (lambda: make_provider(5), "provider name takes a `str`"),
    (lambda: make_provider("mock", model=5), "`model` takes a `str`"),
    (lambda: make_provider("mock", fallback=5), "`fallback` takes a `str`"),
    (lambda: make_provider("mock", env=5), "`env` takes a mapping"),
    (lambda: make_provider("mock", retries="2"), "`retries` takes a whole number"),
    (lambda: split_name(None), "provider name takes a `str`")])
def test_make_provider_refuses_a_bad_argument(call, said):
    with pytest.raises(TypeError, match=said):
        call()
