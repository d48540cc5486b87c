"""The wire models of the envelope (CONTRACT §1), from which ``schema/envelope.schema.json`` is
generated. The projection itself builds plain dicts (fast); tests validate them against the schema.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from .envelope import CODE_MAX, RETRY_AFTER_MAX_MS

__all__ = ["AimuxNode", "CauseNode", "Envelope", "ErrorObject", "SourceNode"]

Truncated = Annotated[
    list[str],
    Field(
        description="What was cut on this node: 'message', 'error.<field>', 'cause', 'envelope'.",
    ),
]


class ErrorObject(BaseModel):
    """The typed payload: ``name`` plus the variant's fields (camelCase)."""

    model_config = ConfigDict(extra="allow")
    name: str


class SourceNode(BaseModel):
    """A snapshot of an external exception (socket, TLS, decoder, file system, validation)."""

    model_config = ConfigDict(extra="allow")
    message: str = Field(max_length=1024)
    type: str | None = None
    cause: CauseNode | None = None
    truncated: Truncated | None = None


class AimuxNode(BaseModel):
    """An aimux error inside a chain: the envelope without the root-only fields."""

    model_config = ConfigDict(extra="allow")
    kind: str = Field(description="aimux | recording | binding | protocol (others: newer cores)")
    code: int = Field(ge=0, le=CODE_MAX)
    message: str = Field(max_length=1024)
    error: ErrorObject
    cause: CauseNode | None = None
    truncated: Truncated | None = None


CauseNode = AimuxNode | SourceNode


class Envelope(BaseModel):
    """Every failure that leaves the core."""

    model_config = ConfigDict(extra="allow")
    kind: str
    code: int = Field(ge=1, le=CODE_MAX)
    message: str = Field(max_length=1024)
    error: ErrorObject
    cause: CauseNode | None = None
    retryable: bool
    retryAfterMs: int | None = Field(default=None, ge=0, le=RETRY_AFTER_MAX_MS)
    truncated: Truncated | None = None


SourceNode.model_rebuild()
AimuxNode.model_rebuild()
Envelope.model_rebuild()
