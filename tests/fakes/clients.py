"""Adapters pointed at a fake server: `make(vendor, url, **kw)` with short timeouts, no env."""
from __future__ import annotations

from typing import Any

from afp_dsl.providers.anthropic import anthropic
from afp_dsl.providers.ollama import ollama
from afp_dsl.providers.openai import openai

KEY = "sk-canary-5f1e9d2c-never-print-me"


def make(vendor: str, url: str, *, timeout: float = 5.0, **kw: Any):
    if vendor == "openai":
        return openai(kw.pop("model", "m"), base_url=url + "/v1", api_key=KEY, timeout=timeout,
                      env={}, **kw)
    if vendor == "anthropic":
        return anthropic(kw.pop("model", "m"), base_url=url, api_key=KEY, timeout=timeout,
                         env={}, **kw)
    return ollama(kw.pop("model", "m"), host=url, timeout=timeout, env={}, **kw)


def env_for(vendor: str, url: str) -> dict:
    """Environment variables that point `make_provider(vendor)` at the fake server."""
    if vendor == "openai":
        return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url + "/v1"}
    if vendor == "anthropic":
        return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url}
    return {"OLLAMA_HOST": url}
