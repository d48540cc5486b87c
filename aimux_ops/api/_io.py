"""The Python binding's crossing of the boundary: params to JSON (what cannot be JSON is a 202
through the one projection) and a stream's events taken a batch at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["events", "params_json"]


def params_json(params: Any) -> bytes:
    """``params`` as JSON; what cannot be JSON is a 202 raised through the one projection."""
    try:
        return orjson.dumps({} if params is None else params)
    except (TypeError, orjson.JSONEncodeError) as exc:
        from ..errors import InvalidWireJSONError
        from ..wire.envelope import decode_error, project

        wrapper = InvalidWireJSONError("params cannot be encoded as JSON", argument="params")
        wrapper.__cause__ = exc
        raise decode_error(project(wrapper))  # noqa: B904 - its __cause__ is the decoded chain


def events(handle: int, take: Any, free: Any) -> Iterator[dict[str, Any]]:
    # every event queued is taken in one step (``dispatch.stream_next_objects``); a cancel, a
    # reap or a fork empties the batch held here, so what comes next is what the next read
    # would have answered
    try:
        while True:
            batch, envelope = take(handle)
            if envelope is not None:
                from ..wire.envelope import decode_error

                raise decode_error(envelope)
            if batch is None:
                return
            for event in batch:
                # the op's own dict when it made one (no dump-and-parse); bytes are parsed once
                decoded: dict[str, Any] = event if type(event) is dict else orjson.loads(event)
                yield decoded
                if decoded.get("type") == "error":
                    return
    finally:
        free(handle)
