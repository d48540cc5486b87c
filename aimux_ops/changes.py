"""Change notices for state the C shim copies: the op registry and the remembered secrets.

``with WATCHED.change(): <change>`` tells every watcher before and after the change. libaimux
answers an unknown op without the interpreter from a copy of both (``unknown_op_template``,
``native/src/aimux_unknown_op.c``): it drops that copy before a change and takes none until the
change is over. With no watcher (the Python API alone) a change costs two empty loops.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

__all__ = ["OP_NAMES", "SECRETS", "Watched"]

_Watcher = tuple[Callable[[], object], Callable[[], object]]


class _Change:
    """One change: the watchers of its start are the ones told of its end (a watcher added while
    it is under way hears of neither)."""

    __slots__ = ("_watchers",)

    def __init__(self, watchers: tuple[_Watcher, ...]) -> None:
        self._watchers = watchers

    def __enter__(self) -> None:
        for before, _ in self._watchers:
            before()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for _, after in self._watchers:
            after()


class Watched:
    """A piece of state whose changes are announced (``with state.change(): ...``)."""

    __slots__ = ("_watchers",)

    def __init__(self) -> None:
        self._watchers: tuple[_Watcher, ...] = ()

    def watch(self, before: Callable[[], object], after: Callable[[], object]) -> None:
        """Call ``before()`` ahead of every change from now on and ``after()`` once it is over."""
        self._watchers = (*self._watchers, (before, after))

    def unwatch(self, before: Callable[[], object]) -> None:
        """Stop telling the watcher whose ``before`` is ``before``."""
        self._watchers = tuple(w for w in self._watchers if w[0] is not before)

    def change(self) -> _Change:
        """A context manager around one change."""
        return _Change(self._watchers)


#: The op names the registry knows, registered or declared (``ops.registry``).
OP_NAMES = Watched()
#: The remembered secrets (``redact``).
SECRETS = Watched()
