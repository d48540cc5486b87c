"""The errors' pydantic models: the payload base and ``Violation``, imported on first use (an
error's ``Payload``, a params violation, the schemas), never by a call that succeeds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ErrorPayload", "Violation"]


class ErrorPayload(BaseModel):
    """Base of every payload model: camelCase on the wire, unknown members kept when decoding."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
        validate_assignment=False,
    )


class Violation(BaseModel):
    """One params violation: where (a JSON path like ``model.modelId``) and why."""

    path: str
    reason: str
