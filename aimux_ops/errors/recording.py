"""The recording domain (codes 100–199): record / replay failures, OS / parse error as the cause."""

from __future__ import annotations

from ._base import AimuxError, ErrorPayload

__all__ = [
    "RecordingCorruptError",
    "RecordingError",
    "RecordingNoMatchError",
    "RecordingOpenFileError",
    "RecordingUnsupportedSchemaError",
    "RecordingWriteError",
]


class RecordingError(AimuxError):
    """Base of the recording domain."""

    kind = "recording"


class _PathPayload(ErrorPayload):
    path: str | None = None


class RecordingOpenFileError(RecordingError):
    """The recording file could not be opened."""

    code = 101
    constant = "OPEN_FILE"
    error_name = "RecordingOpenFileError"
    Payload = _PathPayload


class _NoMatchPayload(ErrorPayload):
    method: str | None = None
    path: str | None = None


class RecordingNoMatchError(RecordingError):
    """Replay found no recorded exchange for this request (method + path + body)."""

    code = 102
    constant = "NO_MATCH"
    error_name = "RecordingNoMatchError"
    Payload = _NoMatchPayload


class _LinePayload(ErrorPayload):
    path: str | None = None
    line: int | None = None


class RecordingCorruptError(RecordingError):
    """A line of the recording file is not a valid record."""

    code = 103
    constant = "CORRUPT"
    error_name = "RecordingCorruptError"
    Payload = _LinePayload


class _SchemaPayload(ErrorPayload):
    path: str | None = None
    line: int | None = None
    schema_version: int | None = None


class RecordingUnsupportedSchemaError(RecordingError):
    """A record has a schema version this core cannot read."""

    code = 104
    constant = "UNSUPPORTED_SCHEMA"
    error_name = "RecordingUnsupportedSchemaError"
    Payload = _SchemaPayload


class RecordingWriteError(RecordingError):
    """Appending to the recording file failed."""

    code = 105
    constant = "WRITE"
    error_name = "RecordingWriteError"
    Payload = _PathPayload
