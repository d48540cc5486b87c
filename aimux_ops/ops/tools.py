"""Tool and object validation, shared by every provider.

Tool calls are checked like the AI SDK v7 does: an unknown tool or an input that is not JSON or
fails the tool's input schema comes back marked ``invalid: true`` with its error envelope
(``NoSuchToolError`` / ``InvalidToolInputError`` caused by ``JSONParseError`` /
``TypeValidationError``). JSON Schemas (tool inputs, ``generate_object``'s ``schema``) are checked
before any network; their validators are cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import (
    AimuxError,
    InvalidArgumentError,
    InvalidToolInputError,
    JSONParseError,
    NoSuchToolError,
    TypeValidationError,
)
from ..guest import on_fork_child
from ..providers.base import json_parse_error

if TYPE_CHECKING:
    from .models import ToolSpec

__all__ = ["check_schema", "parse_json", "tool_call", "validate_value"]

_validators: OrderedDict[bytes, Any] = OrderedDict()
_validators_lock = threading.Lock()


@on_fork_child
def _reset_lock_after_fork() -> None:
    """In a forked child: a fresh lock (another thread may have held this one at fork time)."""
    global _validators_lock
    _validators_lock = threading.Lock()


def check_schema(schema: dict[str, Any], argument: str = "schema") -> Any:
    """A (cached) validator for ``schema``; an invalid schema is ``InvalidArgumentError`` naming
    the param it came from, raised before any network."""
    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    with _validators_lock:
        hit = _validators.get(key)
        if hit is not None:
            _validators.move_to_end(key)
            return hit
    import jsonschema  # imported on first use: it costs ~160 ms at start-up of every host

    meta = schema.get("$schema")
    if meta is not None and not isinstance(meta, str):
        raise InvalidArgumentError(
            f"Invalid argument for {argument}: not a valid JSON Schema: $schema must be a string",
            argument=argument,
        )
    # an unknown $schema: the latest draft, as jsonschema's own default (without its warning)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise InvalidArgumentError(
            f"Invalid argument for {argument}: not a valid JSON Schema: {exc.message}",
            argument=argument,
        ) from exc
    validator = cls(schema)
    with _validators_lock:
        _validators[key] = validator
        while len(_validators) > 256:
            _validators.popitem(last=False)
    return validator


def validate_value(value: Any, schema: dict[str, Any]) -> TypeValidationError | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(check_schema(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    tve = TypeValidationError(f"Type validation failed: {where}: {error.message}", value=value)
    tve.__cause__ = error
    return tve


def parse_json(text: str) -> tuple[Any, JSONParseError | None]:
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError as exc:
        return None, json_parse_error(text, exc)


def tool_call(
    call_id: str, name: str, raw: str, tools: dict[str, ToolSpec] | None
) -> dict[str, Any]:
    """A tool call as the result carries it; invalid ones marked with their error envelope."""
    spec = tools.get(name) if tools else None
    error: AimuxError | None = None
    value: Any = raw
    if spec is None:
        available = sorted(tools) if tools else []
        error = NoSuchToolError(
            f"Model tried to call unavailable tool '{name}'. "
            + (
                f"Available tools: {', '.join(available)}."
                if available
                else "No tools are available."
            ),
            tool_name=name,
            available_tools=available,
        )
        parsed, perr = parse_json(raw or "{}")
        if perr is None:
            value = parsed
    else:
        parsed, perr = parse_json(raw if raw.strip() else "{}")
        cause: AimuxError | None = perr
        if perr is None:
            value = parsed
            cause = validate_value(parsed, spec.input_schema)
        if cause is not None:
            error = InvalidToolInputError(
                f"Invalid input for tool {name}: {cause.message}", tool_name=name, tool_input=raw
            )
            error.__cause__ = cause
    out: dict[str, Any] = {"toolCallId": call_id, "toolName": name, "input": value}
    if error is not None:
        from ..wire.envelope import to_envelope  # the projection: loaded by the first invalid call

        out["invalid"] = True
        out["error"] = to_envelope(error)
    return out
