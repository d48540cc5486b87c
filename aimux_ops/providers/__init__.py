"""Provider lookup: a provider id (``model.provider``) → its implementation module.

Only ``openai`` (the Chat Completions wire format, also spoken by vLLM, Ollama, llama.cpp's
server, LM Studio and most gateways) exists; any other id is ``NoSuchProviderError``.
"""

from __future__ import annotations

from types import ModuleType

from ..errors import NoSuchProviderError
from . import openai

__all__ = ["available_providers", "get_provider", "openai"]

_PROVIDERS: dict[str, ModuleType] = {"openai": openai}


def available_providers() -> list[str]:
    return sorted(_PROVIDERS)


def get_provider(provider_id: str, model_id: str | None = None) -> ModuleType:
    """The provider module for ``provider_id``; ``NoSuchProviderError`` when unknown."""
    module = _PROVIDERS.get(provider_id)
    if module is None:
        raise NoSuchProviderError(
            f"No such provider: {provider_id[:100]}",
            provider_id=provider_id[:100],
            available_providers=available_providers(),
            model_id=model_id,
            model_type="languageModel",
        )
    return module
