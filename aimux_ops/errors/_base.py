"""The base of every aimux error: the declaration machinery, the catalogue, source errors.

Declaring an error takes a class, a code and its payload fields::

    class NoSuchModelError(AIError, code=9):
        \"\"\"The requested model does not exist.\"\"\"

        model_id: str | None = None
        model_type: str | None = None

The annotated class attributes become the variant's payload (snake_case in Python, camelCase on
the wire) and plain attributes of every instance (``err.model_id``). The constant
(``NO_SUCH_MODEL``) and the wire name (``AI_NoSuchModelError``) follow from the class name and its
domain; ``constant=`` and ``name=`` override them. Declaring such a class registers it in the
catalogue, which the projection, the decoder, the manifest, ``schema/`` and every binding's
generated code read: one source of truth.
"""

from __future__ import annotations

import inspect
import re
import threading
import typing
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.alias_generators import to_camel

__all__ = [
    "AimuxError",
    "ErrorPayload",
    "SourceError",
    "catalogue",
    "constant_of",
    "lookup",
]


class ErrorPayload(BaseModel):
    """Base of every payload model: camelCase on the wire, unknown members kept when decoding."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
        validate_assignment=False,
    )


_BY_NAME: dict[tuple[str, str], type[AimuxError]] = {}
_BY_CODE: dict[tuple[str, int], type[AimuxError]] = {}
_ORDER: list[type[AimuxError]] = []

_WORDS = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z]|$)|[A-Z][a-z0-9]*|[a-z0-9]+")


def constant_of(stem: str) -> str:
    """``APICall`` → ``API_CALL``, ``InvalidUTF8`` → ``INVALID_UTF8``, ``LoadAPIKey`` →
    ``LOAD_API_KEY``: the UPPER_SNAKE constant of a class-name stem."""
    return "_".join(w.upper() for w in _WORDS.findall(stem))


def _payload_property(name: str) -> property:
    """A payload field as an attribute of the error: ``err.status_code`` reads and sets
    ``err.payload.status_code`` (one state, whichever way it is used)."""

    def get(self: AimuxError) -> Any:
        return getattr(self.payload, name, None)

    def set_(self: AimuxError, value: Any) -> None:
        setattr(self.payload, name, value)

    return property(get, set_, doc=f"The payload field ``{name}`` (None when absent).")


def _own_fields(cls: type) -> dict[str, tuple[Any, Any]]:
    """The payload fields a class declares itself: annotated, non-ClassVar class attributes."""
    own = inspect.get_annotations(cls)
    if not own:
        return {}
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: dict[str, tuple[Any, Any]] = {}
    for name in own:
        hint = hints[name]
        if name.startswith("_") or typing.get_origin(hint) is ClassVar or hint is ClassVar:
            continue
        fields[name] = (hint, cls.__dict__.get(name, None))
    return fields


_payload_lock = threading.RLock()


class _LazyPayload:
    """An error class's ``Payload`` model, created (``create_model`` over the parent's
    ``Payload``) the first time the class attribute is read, then put in its place."""

    def __init__(self, cls: type, fields: dict[str, tuple[Any, Any]]) -> None:
        self.cls = cls
        self.fields = fields

    def __get__(self, obj: object, owner: type | None = None) -> type[ErrorPayload]:
        with _payload_lock:
            built: Any = self.cls.__dict__.get("Payload")
            if isinstance(built, type):
                return built
            base: Any = getattr(super(self.cls, self.cls), "Payload")  # noqa: B009
            model: Any = create_model(  # type: ignore[call-overload]
                f"{self.cls.__name__}Payload", __base__=base, **self.fields
            )
            type.__setattr__(self.cls, "Payload", model)
            return typing.cast("type[ErrorPayload]", model)


class AimuxError(Exception):
    """Root of every error that crosses the aimux boundary, in all four domains.

    Payload fields are attributes (``err.status_code``); ``err.payload`` is the same data as a
    pydantic model (kept for compatibility; camelCase aliases on the wire)."""

    kind: str = "aimux"
    code: int = 1
    error_name: str = "AimuxError"
    constant: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Payload: ClassVar[type[ErrorPayload]] = ErrorPayload
    #: Prefix of the wire name in this domain (the aimux domain: ``AI_``).
    name_prefix: ClassVar[str] = ""
    #: Class-name prefix left out of the constant (recording: ``Recording``).
    constant_prefix: ClassVar[str] = ""
    _field_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(
        cls,
        *,
        code: int | None = None,
        constant: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        fields = _own_fields(cls)
        for field in fields:  # read and written through the payload: one state
            setattr(cls, field, _payload_property(field))
        if fields:
            # built on first use (cold start: no pydantic model per error class at import)
            cls.Payload = _LazyPayload(cls, fields)  # type: ignore[assignment]
        inherited = cls._field_names  # the nearest ancestor's (pydantic's order: theirs, then new)
        cls._field_names = inherited + tuple(f for f in fields if f not in inherited)
        for hook in ("retryable", "retry_after_ms"):
            if hook in cls.__dict__:  # pragma: no cover - a programming error caught at import
                raise TypeError(
                    f"{cls.__name__} overrides {hook}: override _own_{hook} instead (a decoded "
                    "root reports the envelope's own value, CONTRACT §4)"
                )
        if code is None:
            return
        stem = cls.__name__.removesuffix("Error")
        cls.code = code
        cls.constant = constant or constant_of(stem.removeprefix(cls.constant_prefix))
        cls.error_name = name or f"{cls.name_prefix}{cls.__name__}"
        if not cls.__dict__.get("description"):
            cls.description = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        key = (cls.kind, cls.error_name)
        if key in _BY_NAME:  # pragma: no cover - a programming error caught at import
            raise TypeError(f"duplicate error name {key}")
        _BY_NAME[key] = cls
        _BY_CODE.setdefault((cls.kind, cls.code), cls)
        _ORDER.append(cls)

    def __init__(
        self, message: str | None = None, /, *, payload: ErrorPayload | None = None, **fields: Any
    ) -> None:
        """``fields`` are the payload fields (snake_case or camelCase), validated; ``payload``
        is an already-built payload (the decoder's path: what the wire carried, kept even when
        it does not validate)."""
        self.payload: ErrorPayload = payload if payload is not None else self.Payload(**fields)
        self.message: str = message if message is not None else self.default_message()
        #: The node this error was decoded from, when it came from JSON (else None).
        self.raw: dict[str, Any] | None = None
        #: A decoded root's own ``(retryable, retryAfterMs)`` as the envelope gave them (else None).
        self.wire_root: tuple[bool, int | None] | None = None
        super().__init__(self.message)

    def __getattr__(self, name: str) -> Any:
        # Members a newer core sent that this version does not declare (kept when decoding).
        extra = self.__dict__.get("payload")
        extras = getattr(extra, "__pydantic_extra__", None) or {}
        if name in extras:
            return extras[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def wire_payload(cls, members: dict[str, Any]) -> ErrorPayload:
        """The payload of a decoded node: validated, or (a newer or foreign core's shape) kept
        as sent."""
        try:
            return cls.Payload.model_validate(members)
        except ValueError:
            return cls.Payload.model_construct(**members)

    def default_message(self) -> str:
        return self.description or self.error_name

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f}={getattr(self, f)!r}" for f in self._field_names if getattr(self, f) is not None
        )
        return f"{type(self).__name__}({self.message!r}{', ' if shown else ''}{shown})"

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
        """The payload as JSON-ready camelCase members (absent fields omitted): ``model_dump``'s
        serializer called directly (the same dict, without its per-call Python wrapper; this is
        on every projection's path)."""
        payload = self.payload
        dumped: dict[str, Any] = payload.__pydantic_serializer__.to_python(
            payload, mode="json", by_alias=True, exclude_none=True
        )
        return dumped

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
