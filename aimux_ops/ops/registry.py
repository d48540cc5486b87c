"""The op registry: every op declares its name, mode, pydantic models and handler.

A ``call`` op's handler takes the validated params and returns the result (a pydantic model or a
JSON-ready dict). A ``stream`` op's handler takes the params and a ``StreamContext`` and returns
an iterator of events (JSON-ready dicts, or the bytes of one serialized event); an exception
raised before the first event fails the open, one raised later becomes the terminal ``error``
event. A stream handler runs on the core's stream loop (``aio``, shared by every stream): it must
never block its thread; it waits through ``aio`` (the transport's reads, ``aio.sleep``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["OpSpec", "StreamContext", "all_ops", "get_op", "register_op"]

Mode = Literal["call", "stream"]


class StreamContext:
    """Cancellation for one stream: ``cancelled`` is set and every ``on_cancel`` callback runs
    (once, from the cancelling thread) so a blocked network read can be woken."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self.cancelled.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled.is_set():
                return
            self.cancelled.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:  # noqa: BLE001 - best effort wake-up
                pass


@dataclass(frozen=True)
class OpSpec:
    name: str
    mode: Mode
    params: type[BaseModel]
    result: type[BaseModel] | None
    #: A model (or a union type) describing one event; stream ops only.
    event: Any
    handler: Callable[..., Any]
    description: str = ""
    #: A pure op's result depends on its params only: the dispatcher may answer from a cache.
    pure: bool = False


_OPS: dict[str, OpSpec] = {}


def register_op(
    name: str,
    *,
    mode: Mode,
    params: type[BaseModel],
    result: type[BaseModel] | None = None,
    event: Any = None,
    description: str = "",
    pure: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``handler`` as op ``name``."""

    def deco(handler: Callable[..., Any]) -> Callable[..., Any]:
        _OPS[name] = OpSpec(name, mode, params, result, event, handler, description, pure)
        return handler

    return deco


def get_op(name: str) -> OpSpec | None:
    return _OPS.get(name)


def all_ops() -> list[OpSpec]:
    return list(_OPS.values())
