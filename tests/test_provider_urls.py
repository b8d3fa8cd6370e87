"""A server address that cannot be one is refused when the adapter is built, argument or
environment alike, and `afpc run --provider` says so as a usage error (exit 2), never an internal
error. The message does not quote the value (it may hold credentials)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from afp_dsl.providers.anthropic import anthropic
from afp_dsl.providers.openai import openai

ROOT = Path(__file__).resolve().parent.parent
BAD = ["notaurl", "ftp://host/v1", "http://", "http://[::1", "localhost:8080"]


@pytest.mark.parametrize("url", BAD)
@pytest.mark.parametrize("make, key", [(openai, "OPENAI"), (anthropic, "ANTHROPIC")])
def test_a_base_url_that_is_no_http_url_is_refused(make, key, url) -> None:
    with pytest.raises(ValueError, match="`base_url` is not an http\\(s\\) URL with a host"):
        make("m", base_url=url, env={f"{key}_API_KEY": "k"})
    with pytest.raises(ValueError, match=f"\\${key}_BASE_URL is not an http\\(s\\) URL"):
        make("m", env={f"{key}_API_KEY": "k", f"{key}_BASE_URL": "user:secret@" + url})


@pytest.mark.parametrize("host", ["ftp://x", " ", "x y", "file:///etc/passwd", "u:secret@ftp://h"])
def test_an_ollama_host_the_sdk_would_complete_into_no_http_address_is_refused(host) -> None:
    from afp_dsl.providers.ollama import OllamaProvider
    with pytest.raises(ValueError, match="`host` is not a server address") as e:
        OllamaProvider(host=host, env={})
    assert "secret" not in str(e.value)
    with pytest.raises(ValueError, match="\\$OLLAMA_HOST is not a server address"):
        OllamaProvider(env={"OLLAMA_HOST": host})
    for good in ("127.0.0.1:11434", "localhost", "https://h.example/api", "[::1]:11434"):
        assert OllamaProvider(host=good, env={}).host.startswith("http")


def test_good_urls_still_build() -> None:
    assert openai("m", base_url="http://127.0.0.1:8080/v1/", env={}).base_url == "http://127.0.0.1:8080/v1"
    assert anthropic("m", base_url="https://gw.example/a", env={"ANTHROPIC_API_KEY": "k"}).base_url


@pytest.mark.parametrize("provider, env", [
    ("openai", {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "localhost:8080"}),
    ("anthropic", {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "nope"}),
    ("ollama", {"OLLAMA_HOST": "u:secret@::::"}),  # (the SDK reads it when imported)
    ("ollama", {"OLLAMA_HOST": "ftp://u:secret@h"}),  # (the SDK takes it; the adapter does not)
])
def test_afpc_run_names_a_bad_server_address_as_a_usage_error(tmp_path: Path, provider, env) -> None:
    spec = tmp_path / "a.afp"
    spec.write_text('agent a {\n  system = "x"\n}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "afp_dsl.cli", "run", str(spec), "-m", "hi",
                           "--provider", provider, "--store", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"afpc: error: {provider}: $") and "internal error" not in proc.stderr
    assert "secret" not in proc.stderr
