"""The base of every op model (params, results, events): camelCase aliases, unknown fields
refused, validators built on first use (cold start: a call never builds the other ops' models)."""

# No ``from __future__ import annotations``: pydantic evaluates annotation strings at class
# creation (cold start).

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["Model"]


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=False,
        defer_build=True,
    )
