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
    """The provider `--provider NAME[:MODEL]` selects; raises ProviderError naming the fix."""
    from .registry import make_provider
    return make_provider(name, model=model, script=script)
