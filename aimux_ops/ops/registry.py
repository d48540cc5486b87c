"""The op registry: every op declares its name, mode, pydantic models and handler.

A ``call`` op's handler takes the validated params and returns the result (a pydantic model or a
JSON-ready dict). A ``stream`` op's handler takes the params and a ``StreamContext`` and returns
an iterator of events (JSON-ready dicts, or the bytes of one serialized event); an exception
raised before the first event fails the open, one raised later becomes the terminal ``error``
event. A stream handler is a sync generator run by the stream engine (``aimux_ops.streams``) on
the thread that reads it: its waits (the transport's reads, a retry's backoff) block that
thread, and a cancel wakes them (the op's cancel hook shuts its socket down). When
its ``StreamContext.batches`` is set (the dispatcher sets it) it may yield an ``EventBatch`` (the
events of one network read, in order) in place of single events: one hand-off per read.

Op modules are imported when first needed (``declare_lazy``): ``get_op`` imports the module that
registers a declared name on its first lookup, ``all_ops`` imports every declared module, so a
caller of ``aimux.version`` never pays for the provider ops' models, the HTTP client or jsonschema.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "EventBatch",
    "OpSpec",
    "StreamContext",
    "all_ops",
    "declare_lazy",
    "generation",
    "get_op",
    "register_op",
    "unregister_op",
]

Mode = Literal["call", "stream"]


class EventBatch(list[Any]):
    """Several events of a stream op, in order, yielded as one item (see ``StreamContext``)."""

    __slots__ = ()


class StreamContext:
    """Cancellation for one stream: ``cancelled`` is set and every ``on_cancel`` callback runs
    (once, from the cancelling thread) so a blocked network read can be woken. ``batches``: the
    consumer of the op's iterator takes an ``EventBatch`` as the events in it (False unless the
    consumer says so: a direct caller of a handler gets single events)."""

    def __init__(self, *, batches: bool = False) -> None:
        self.cancelled = threading.Event()
        self.batches = batches
        #: the host's answers to its tools' calls (``ops.answers.ToolAnswers``), set by the
        #: tool loop; None for a stream without host tools
        self.answers: Any = None
        #: where the stream keeps its host tools' answers (``ops.answers.AnswerQueue``), set by
        #: a stream opened through the C ABI; None: the loop keeps them itself
        self.answer_queue: Any = None
        #: the latest model call's response headers (redacted), set once they are in, before
        #: the call's first event: read by the gateway as its response starts
        self.response_headers: dict[str, str] | None = None
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


class Deferred:
    """A result or event model named by its module and name, imported on its first read: only
    the schemas and the manifest read them, so a call never creates their classes."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def resolve(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def __repr__(self) -> str:
        return f"Deferred({self.module!r}, {self.name!r})"


class OpSpec:
    """One registered op (immutable; a slotted class, not a dataclass: cold start)."""

    __slots__ = (
        "declared_event",
        "declared_params",
        "declared_result",
        "description",
        "handler",
        "mode",
        "name",
        "pure",
    )
    name: str
    mode: Mode
    #: ``params`` as declared (a model, or a ``Deferred`` one: the provider ops' params, checked
    #: by ``precheck`` first, so a call on a common shape never creates the class)
    declared_params: type[BaseModel] | Deferred
    #: ``result`` as declared (a model, None, or a ``Deferred`` one)
    declared_result: type[BaseModel] | Deferred | None
    #: ``event`` as declared (a model or union type, None, or a ``Deferred`` one)
    declared_event: Any
    handler: Callable[..., Any]
    description: str
    #: A pure op's result depends on its params only: the dispatcher may answer from a cache.
    pure: bool

    def __init__(
        self,
        name: str,
        mode: Mode,
        declared_params: type[BaseModel] | Deferred,
        declared_result: type[BaseModel] | Deferred | None,
        declared_event: Any,
        handler: Callable[..., Any],
        description: str = "",
        pure: bool = False,
    ) -> None:
        for field, value in (
            ("name", name),
            ("mode", mode),
            ("declared_params", declared_params),
            ("declared_result", declared_result),
            ("declared_event", declared_event),
            ("handler", handler),
            ("description", description),
            ("pure", pure),
        ):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"OpSpec is immutable: cannot assign to {name!r}")

    def __repr__(self) -> str:
        return f"OpSpec({self.name!r}, mode={self.mode!r})"

    @property
    def params(self) -> type[BaseModel]:
        """The params model."""
        declared = self.declared_params
        if isinstance(declared, Deferred):
            resolved: type[BaseModel] = declared.resolve()
            return resolved
        return declared

    @property
    def result(self) -> type[BaseModel] | None:
        """The result model (call ops; None for a stream op)."""
        declared = self.declared_result
        if isinstance(declared, Deferred):
            resolved: type[BaseModel] = declared.resolve()
            return resolved
        return declared

    @property
    def event(self) -> Any:
        """A model (or a union type) describing one event; stream ops only."""
        declared = self.declared_event
        return declared.resolve() if isinstance(declared, Deferred) else declared


_OPS: dict[str, OpSpec] = {}
#: Declared op name -> the module whose import registers it, in the declared order (the order
#: ``all_ops`` answers in, whatever order the modules happen to be imported in).
_LAZY: dict[str, str] = {}


_all_loaded = False
#: Moves on after every change of the op names (``generation``).
_generation = 0


def generation() -> int:
    """A number that moves on after every change of the op names (declared, registered or
    removed): a reader that read it before reading the names, and reads the same number later,
    knows the names have not changed since (``dispatch``'s sorted names and cached results)."""
    return _generation


def _changed() -> None:
    global _generation
    _generation += 1


def declare_lazy(module: str, *names: str) -> None:
    """Declare that importing ``module`` registers ``names``."""
    global _all_loaded
    for name in names:
        _LAZY[name] = module
    _all_loaded = False
    _changed()


def register_op(
    name: str,
    *,
    mode: Mode,
    params: type[BaseModel] | Deferred,
    result: type[BaseModel] | Deferred | None = None,
    event: Any = None,
    description: str = "",
    pure: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``handler`` as op ``name``."""

    def deco(handler: Callable[..., Any]) -> Callable[..., Any]:
        _OPS[name] = OpSpec(name, mode, params, result, event, handler, description, pure)
        _changed()
        return handler

    return deco


def unregister_op(name: str) -> None:
    """Remove op ``name`` (registered with ``register_op``; tests' own ops)."""
    _OPS.pop(name, None)
    _changed()


def get_op(name: str) -> OpSpec | None:
    spec = _OPS.get(name)
    if spec is None and name in _LAZY:
        importlib.import_module(_LAZY[name])  # the import system's own locks make this safe
        spec = _OPS.get(name)
    return spec


def all_ops() -> list[OpSpec]:
    global _all_loaded
    if not _all_loaded:
        for module in dict.fromkeys(_LAZY.values()):
            importlib.import_module(module)
        _all_loaded = True
    # copies taken in one step each (no Python code runs in a copy of a str-keyed dict): another
    # thread may register or declare an op meanwhile, and iterating the dicts themselves would
    # then fail ("dictionary changed size during iteration")
    ops, lazy = _OPS.copy(), _LAZY.copy()
    declared = [ops[n] for n in lazy if n in ops]
    return declared + [s for n, s in ops.items() if n not in lazy]
