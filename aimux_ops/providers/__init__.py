"""Provider lookup: a provider id (``model.provider``) → its ``Provider`` (see ``base``).

- ``openai``: Chat Completions (also spoken by vLLM, Ollama, llama.cpp's server, LM Studio and
  most gateways), ``providers/openai.py``.
- ``anthropic``: the Messages API, ``providers/anthropic.py`` (its model table:
  ``providers/anthropic_models.py``).

Any other id is ``NoSuchProviderError``. Adding a provider: a module with a ``Provider`` subclass
and one line in ``_PROVIDERS``; nothing outside this package changes.
"""

from __future__ import annotations

from ..errors import NoSuchProviderError
from . import anthropic, openai
from .base import Provider

__all__ = ["Provider", "available_providers", "get_provider"]

_PROVIDERS: dict[str, Provider] = {
    anthropic.PROVIDER.id: anthropic.PROVIDER,
    openai.PROVIDER.id: openai.PROVIDER,
}


def available_providers() -> list[str]:
    return sorted(_PROVIDERS)


def get_provider(provider_id: str, model_id: str | None = None) -> Provider:
    """The provider for ``provider_id``; ``NoSuchProviderError`` when unknown."""
    provider = _PROVIDERS.get(provider_id)
    if provider is None:
        raise NoSuchProviderError(
            f"No such provider: {provider_id[:100]}",
            provider_id=provider_id[:100],
            available_providers=available_providers(),
            model_id=model_id,
            model_type="languageModel",
        )
    return provider
