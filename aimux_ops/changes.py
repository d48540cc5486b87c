"""Change notices for state the C shim copies: the op registry and the remembered secrets.

``with WATCHED: <change>`` tells every watcher before and after the change. libaimux answers an
unknown op without the interpreter from a copy of both (``unknown_op_template``,
``native/src/aimux_unknown_op.c``): it drops that copy before a change and takes none until the
change is over. With no watcher (the Python API alone) a change costs two empty loops.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

__all__ = ["OP_NAMES", "SECRETS", "Watched"]


class Watched:
    """A piece of state whose changes are announced (``with state_changes: ...``)."""

    __slots__ = ("_watchers",)

    def __init__(self) -> None:
        self._watchers: list[tuple[Callable[[], object], Callable[[], object]]] = []

    def watch(self, before: Callable[[], object], after: Callable[[], object]) -> None:
        """Call ``before()`` ahead of every change from now on and ``after()`` once it is over."""
        self._watchers.append((before, after))

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


#: The op names the registry knows, registered or declared (``ops.registry``).
OP_NAMES = Watched()
#: The remembered secrets (``redact``).
SECRETS = Watched()
