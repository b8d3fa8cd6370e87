"""Model providers: the interface (`base`) and the deterministic `mock`.

Role:       `afp.providers.mock(...)` for users; vendor adapters land here as thin modules.
"""
from __future__ import annotations

from .base import (Message, Provider, ProviderError, Reply, Request, ToolCall, ToolSpec,
                   Usage)
from .mock import MockProvider, mock

__all__ = ["Message", "MockProvider", "Provider", "ProviderError", "Reply", "Request",
           "ToolCall", "ToolSpec", "Usage", "mock", "by_name"]


def by_name(name: str, model: str | None = None, script: list | None = None) -> Provider:
    """The provider `--provider NAME` selects; raises ProviderError for an unknown one."""
    if name == "mock":
        return mock(script)
    raise ProviderError(f"unknown provider `{name}`; available here: mock "
                        f"(openai, anthropic and ollama need their optional extras)")
