"""The gateway's config file (JSON) and what it names in the environment.

```json
{
  "clientKeysEnv": "AIMUX_GATEWAY_KEYS",
  "models": {
    "fast": {"provider": "openai", "modelId": "gpt-4o-mini", "apiKeyEnv": "OPENAI_API_KEY"},
    "claude": {"provider": "anthropic", "modelId": "claude-sonnet-4-5",
               "apiKeyEnv": "ANTHROPIC_API_KEY"}
  },
  "maxRetries": 0,
  "retry": {"initialDelayMs": 2000, "backoffFactor": 2},
  "timeoutMs": 600000,
  "limits": {"maxBodyBytes": 8388608, "maxHeaderBytes": 32768, "maxInFlight": 1024,
             "bodyTimeoutMs": 30000}
}
```

Each entry of ``models`` is a ``model`` object exactly as in the ops' params (``ModelSpec``);
``clientKeysEnv`` names the variable holding the accepted client keys, comma separated.
``limits`` hold per worker process (``maxInFlight``: requests in flight, a 503 past it). A bad
file, an empty key list or an upstream key variable that is unset is refused at startup, with
the field named and no value shown. ``maxRetries``, ``retry`` and ``timeoutMs`` are the ops' own
params, for every request (``maxRetries`` 0 by default: clients retry themselves).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import Field, ValidationError

from ..ops._model import Model
from ..ops.models import ModelSpec, RetrySpec
from ..wire.redact import remember_secret

__all__ = ["ConfigError", "GatewayConfig", "Limits", "load_config"]


class ConfigError(Exception):
    """The config cannot be used: the message names the file and the field."""


class Limits(Model):
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    max_header_bytes: int = Field(default=32 * 1024, ge=1024)
    max_in_flight: int = Field(default=1024, ge=1)
    body_timeout_ms: int = Field(default=30_000, ge=1)


class GatewayConfig(Model):
    client_keys_env: str = Field(min_length=1)
    models: dict[str, ModelSpec] = Field(min_length=1)
    max_retries: int = Field(default=0, ge=0, le=10)
    retry: RetrySpec | None = None
    timeout_ms: int | None = Field(default=None, ge=1)
    limits: Limits = Field(default_factory=Limits)


def _client_keys(cfg: GatewayConfig, where: str) -> frozenset[str]:
    raw = os.environ.get(cfg.client_keys_env, "")
    keys = frozenset(k.strip() for k in raw.split(",") if k.strip())
    if not keys:
        raise ConfigError(
            f"{where}: clientKeysEnv names {cfg.client_keys_env}, which holds no key: the "
            "gateway does not run open"
        )
    return keys


def load_config(path: str | Path) -> tuple[GatewayConfig, frozenset[str]]:
    """The config and the accepted client keys; every key (client and upstream) is remembered
    by the core's redaction, so no message or log line can carry one."""
    where = str(path)
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror})") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON ({exc})") from None
    try:
        cfg = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{where}: {problems}") from None
    keys = _client_keys(cfg, where)
    for name, spec in cfg.models.items():
        if spec.api_key is not None:
            raise ConfigError(f"{where}: models.{name}.apiKey: name the key's variable (apiKeyEnv)")
        env = spec.api_key_env
        if env is not None:
            if not os.environ.get(env):
                raise ConfigError(f"{where}: models.{name}.apiKeyEnv: {env} is not set")
            remember_secret(os.environ[env])
    for key in keys:
        remember_secret(key)
    return cfg, keys
