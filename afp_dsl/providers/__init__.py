"""Model providers: the interface (`base`), the deterministic `mock`, the vendor adapters
(`openai`, `anthropic`, `ollama`, over the official SDKs installed as extras) and the resilience
wrappers.

Role:       `afp.providers.mock(...)`, `afp.providers.openai(...)` ... for users; `by_name` for the CLI.
Invariants: importing this package never imports a vendor SDK; an adapter loads its SDK when built.
"""
from __future__ import annotations

from typing import Any

from ._errors import (AuthenticationError, BadRequestError, BadToolArgumentsError, EmptyReplyError,
                      MalformedReplyError, MissingKeyError, ModelNotFoundError, ProviderFailure,
                      ProviderTimeoutError, QuotaExceededError, RateLimitedError,
                      ReplyTooLargeError, ServerError, ServerUnreachableError)
from ._http import ProviderEvent
from .anthropic import anthropic
from .base import (Message, Provider, ProviderError, Reply, Request, SupportsComplete, ToolCall,
                   ToolSpec, Usage)
from .mock import MockProvider, mock
from .ollama import ollama
from .openai import openai
from .resilience import CircuitOpenError, with_circuit_breaker, with_fallback, with_retry

__all__ = ["AuthenticationError", "BadRequestError", "BadToolArgumentsError", "CircuitOpenError",
           "EmptyReplyError", "MalformedReplyError", "Message", "MissingKeyError", "MockProvider",
           "ModelNotFoundError", "Provider", "ProviderError", "ProviderEvent", "ProviderFailure",
           "ProviderTimeoutError", "QuotaExceededError", "RateLimitedError", "Reply",
           "ReplyTooLargeError", "Request", "ServerError", "ServerUnreachableError",
           "SupportsComplete", "ToolCall",
           "ToolSpec", "Usage", "anthropic", "by_name", "mock", "ollama", "openai",
           "with_circuit_breaker", "with_fallback", "with_retry"]


def by_name(name: str, model: str | None = None, script: list | None = None, **kw: Any) -> Provider:
    """The provider `--provider NAME[:MODEL]` selects; raises ProviderError naming the fix."""
    from .registry import make_provider
    return make_provider(name, model=model, script=script, **kw)
