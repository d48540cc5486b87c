"""The base of every aimux error: the class registry (the catalogue), payload models, source errors.

Every concrete error class declares its domain (``kind``), its stable ``code``, its wire
``error_name`` and a pydantic ``Payload`` model whose fields are the variant's fields (snake_case
in Python, camelCase on the wire). Declaring such a class registers it in the catalogue, which the
projection, the decoder, the manifest and ``schema/`` all read: one source of truth.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = [
    "AimuxError",
    "ErrorPayload",
    "SourceError",
    "catalogue",
    "lookup",
]


class ErrorPayload(BaseModel):
    """Base of every payload model: camelCase on the wire, unknown members kept when decoding."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
    )


class _EmptyPayload(ErrorPayload):
    pass


_BY_NAME: dict[tuple[str, str], type[AimuxError]] = {}
_BY_CODE: dict[tuple[str, int], type[AimuxError]] = {}
_ORDER: list[type[AimuxError]] = []


class AimuxError(Exception):
    """Root of every error that crosses the aimux boundary, in all four domains."""

    kind: str = "aimux"
    code: int = 1
    error_name: str = "AimuxError"
    constant: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Payload: ClassVar[type[ErrorPayload]] = _EmptyPayload

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("constant"):
            if not cls.__dict__.get("description"):
                cls.description = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
            key = (cls.kind, cls.error_name)
            if key in _BY_NAME:  # pragma: no cover - a programming error caught at import
                raise TypeError(f"duplicate error name {key}")
            _BY_NAME[key] = cls
            _BY_CODE.setdefault((cls.kind, cls.code), cls)
            _ORDER.append(cls)
        for hook in ("retryable", "retry_after_ms"):
            if hook in cls.__dict__:  # pragma: no cover - a programming error caught at import
                raise TypeError(
                    f"{cls.__name__} overrides {hook}: override _own_{hook} instead (a decoded "
                    "root reports the envelope's own value, CONTRACT §4)"
                )

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        self.payload: ErrorPayload = self.Payload(**fields)
        self.message: str = message if message is not None else self.default_message()
        #: The node this error was decoded from, when it came from JSON (else None).
        self.raw: dict[str, Any] | None = None
        #: A decoded root's own ``(retryable, retryAfterMs)`` as the envelope gave them (else None).
        self.wire_root: tuple[bool, int | None] | None = None
        super().__init__(self.message)

    def default_message(self) -> str:
        return self.description or self.error_name

    def __str__(self) -> str:
        return self.message

    # -- projection hooks -------------------------------------------------------------------
    @property
    def retryable(self) -> bool:
        """Whether retrying the same call could succeed. A decoded root reports its envelope's
        ``retryable`` as given (CONTRACT §4), never recomputed from the payload."""
        wire = getattr(self, "wire_root", None)
        return wire[0] if wire is not None else self._own_retryable()

    @property
    def retry_after_ms(self) -> int | None:
        """The server's retry hint in milliseconds, only when one was observed. A decoded root
        reports its envelope's ``retryAfterMs`` as given (CONTRACT §4)."""
        wire = getattr(self, "wire_root", None)
        return wire[1] if wire is not None else self._own_retry_after_ms()

    # Subclasses override these two (never ``retryable`` / ``retry_after_ms`` themselves).
    def _own_retryable(self) -> bool:
        return False

    def _own_retry_after_ms(self) -> int | None:
        return None

    def payload_fields(self) -> dict[str, Any]:
        """The payload as JSON-ready camelCase members (absent fields omitted)."""
        return self.payload.model_dump(mode="json", by_alias=True, exclude_none=True)

    def cause_children(self) -> list[BaseException]:
        """Nested errors carried inside the payload (RetryError's attempts)."""
        return []

    def native_next(self) -> BaseException | None:
        """The next link of the native chain (``__cause__``; RetryError: the last attempt)."""
        return self.__cause__

    @classmethod
    def is_instance(cls, value: object) -> bool:
        """Marker-based check, like the AI SDK's ``isInstance``: matches by (kind, name)
        so that an error from a second copy of the package is recognised too."""
        return (
            getattr(value, "kind", None) == cls.kind
            and getattr(value, "error_name", None) == cls.error_name
        ) or isinstance(value, cls)


class SourceError(Exception):
    """A decoded snapshot of an external exception (socket, decoder, file system, …)."""

    def __init__(self, message: str, type: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.message = message
        self.type = type
        self.raw: dict[str, Any] | None = None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"SourceError({self.message!r}, type={self.type!r})"


def catalogue() -> list[type[AimuxError]]:
    """Every catalogued error class, in declaration order."""
    return list(_ORDER)


def lookup(kind: str, name: str | None, code: int | None) -> type[AimuxError] | None:
    """The class for a wire node: by (kind, name) first, then by (kind, code)."""
    if name is not None:
        cls = _BY_NAME.get((kind, name))
        if cls is not None:
            return cls
    if code is not None:
        return _BY_CODE.get((kind, code))
    return None
