"""Provider lookup: a provider id (``model.provider``) → its ``Provider`` (see ``base``).

- ``openai``: Chat Completions (also spoken by vLLM, Ollama, llama.cpp's server, LM Studio and
  most gateways), ``providers/openai.py``.
- ``anthropic``: the Messages API, ``providers/anthropic.py`` (its model table:
  ``providers/anthropic_models.py``).

Any other id is ``NoSuchProviderError``. Adding a provider: a module with a ``Provider`` subclass
(its instance as ``PROVIDER``) and one line in ``_MODULES``; nothing outside this package changes.
A provider's module is imported on its first call (cold start: a call to one provider never loads
another's wire module or model table).
"""

from __future__ import annotations

import importlib

from ..errors import NoSuchProviderError
from .base import Provider

__all__ = ["Provider", "available_providers", "get_provider"]

#: provider id -> the module whose ``PROVIDER`` serves it
_MODULES: dict[str, str] = {
    "anthropic": "aimux_ops.providers.anthropic",
    "openai": "aimux_ops.providers.openai",
}
#: the providers loaded so far
_PROVIDERS: dict[str, Provider] = {}


def available_providers() -> list[str]:
    return sorted(_MODULES)


def get_provider(provider_id: str, model_id: str | None = None) -> Provider:
    """The provider for ``provider_id``; ``NoSuchProviderError`` when unknown."""
    provider = _PROVIDERS.get(provider_id)
    if provider is not None:
        return provider
    module = _MODULES.get(provider_id)
    if module is None:
        raise NoSuchProviderError(
            f"No such provider: {provider_id[:100]}",
            provider_id=provider_id[:100],
            available_providers=available_providers(),
            model_id=model_id,
            model_type="languageModel",
        )
    loaded: Provider = importlib.import_module(module).PROVIDER  # the import system's locks
    return _PROVIDERS.setdefault(provider_id, loaded)
