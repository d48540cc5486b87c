"""The envelope projection of the common cause chains, in C (aimux_ops/_cproject.c)."""

from types import FunctionType, ModuleType
from typing import Any

SOURCE_SHA: str

def setup(
    *,
    aimux_error: type[BaseException],
    retry_error: type[BaseException],
    source_error: type[BaseException],
    payload_fields: FunctionType | Any,
    cause_children: FunctionType | Any,
    redact: ModuleType,
    scrub_text: Any,
    scrub_message: Any,
    is_secret_header: Any,
    dumps: Any,
    link: type[tuple[Any, ...]],
    retryable: property,
    retry_after_ms: property,
    own_retryable: Any,
    own_retry_after_ms: Any,
    retry_after_max: int,
    envelope_globals: dict[str, Any],
    envelope_max_bytes: int,
    api_own_retryable: Any,
    api_own_retry_after_ms: Any,
    api_is_retryable: property,
    api_response_headers: property,
    parse_retry_after_ms: Any,
    dump_models: Any,
) -> None: ...
def project(exc: BaseException, /) -> bytes | dict[str, Any] | bool | None: ...
def root(err: BaseException, /) -> dict[str, Any] | None: ...
def chain(
    root: dict[str, Any], envelope_json: bytes, /
) -> tuple[tuple[bool, int | None], list[Any]] | None: ...
def packed(root: dict[str, Any], envelope_json: bytes, /) -> bytes | None: ...
def answer(
    cls: type[BaseException], message: str, values: dict[str, Any], /
) -> tuple[bytes, bytes] | None: ...
