"""The recording domain (codes 100–199): record / replay failures, OS / parse error as the cause."""

from __future__ import annotations

from ._base import AimuxError

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
    constant_prefix = "Recording"


class RecordingOpenFileError(RecordingError, code=101):
    """The recording file could not be opened."""

    path: str | None = None


class RecordingNoMatchError(RecordingError, code=102):
    """Replay found no recorded exchange for this request (method + path + body)."""

    method: str | None = None
    path: str | None = None


class RecordingCorruptError(RecordingError, code=103):
    """A line of the recording file is not a valid record."""

    path: str | None = None
    line: int | None = None


class RecordingUnsupportedSchemaError(RecordingError, code=104):
    """A record has a schema version this core cannot read."""

    path: str | None = None
    line: int | None = None
    schema_version: int | None = None


class RecordingWriteError(RecordingError, code=105):
    """Appending to the recording file failed."""

    path: str | None = None
