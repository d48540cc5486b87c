"""A per-origin pool of HTTP/1.1 connections: O(1) checkout and checkin of idle ones (a stack:
the most recently used first), at most ``max_connections`` open at once (idle or in use; None: no
limit), ``max_idle`` kept idle, each for ``keepalive_s`` at most.

- ``checkout`` answers an idle connection (one that expired or went stale while idle is closed
  and the next one tried: ``Connection.stale``), or None with a slot reserved for a connection
  the caller opens (``opened`` / ``discard`` when that failed). With every slot taken it waits for
  one at most ``timeout`` seconds, then raises ``PoolTimeout``.
- ``checkin`` puts a connection whose response ended cleanly back; ``discard`` closes one.
- ``connections`` lists every connection the pool holds (a forked child closes their sockets'
  descriptors, tests count them); the oldest idle connection past its expiry is closed whenever
  one is put back, so idle connections never pile up.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque

from .connection import Connection
from .exceptions import PoolTimeout

__all__ = ["Pool"]


class Pool:
    __slots__ = (
        "_all",
        "_cond",
        "_idle",
        "_total",
        "keepalive_s",
        "max_connections",
        "max_idle",
    )

    def __init__(
        self, max_connections: int | None, max_idle: int, keepalive_s: float = 5.0
    ) -> None:
        self.max_connections = max_connections
        self.max_idle = max_idle
        self.keepalive_s = keepalive_s
        self._cond = threading.Condition(threading.Lock())
        self._idle: deque[Connection] = deque()
        self._total = 0  # open connections, idle or in use, and reserved slots
        self._all: weakref.WeakSet[Connection] = weakref.WeakSet()

    def checkout(self, timeout: float | None) -> Connection | None:
        """An idle connection, or None: a slot is reserved, open one and call ``opened``."""
        waited_until: float | None = None
        while True:
            with self._cond:
                conn = self._idle.pop() if self._idle else None
                if conn is None:
                    limit = self.max_connections
                    if limit is None or self._total < limit:
                        self._total += 1
                        return None
                    if waited_until is None:
                        waited_until = None if timeout is None else time.monotonic() + timeout
                    left = None if waited_until is None else waited_until - time.monotonic()
                    if left is not None and left <= 0:
                        raise PoolTimeout("No connection of the pool became free in time")
                    self._cond.wait(left)
                    continue
            if time.monotonic() - conn.idle_at > self.keepalive_s or conn.stale():
                self.discard(conn)
                continue
            conn.reused = True
            return conn

    def opened(self, conn: Connection) -> None:
        """A connection opened in a slot ``checkout`` reserved."""
        self._all.add(conn)

    def checkin(self, conn: Connection) -> None:
        now = time.monotonic()
        conn.idle_at = now
        expired = None
        with self._cond:
            idle = self._idle
            if idle and now - idle[0].idle_at > self.keepalive_s:
                expired = idle.popleft()
                self._total -= 1
            if len(idle) < self.max_idle:
                idle.append(conn)
                conn = None  # type: ignore[assignment]
            else:
                self._total -= 1
            self._cond.notify()
        if expired is not None:
            expired.close()
        if conn is not None:
            conn.close()

    def discard(self, conn: Connection | None = None) -> None:
        """Close ``conn`` (None: a reserved slot whose connection was not opened)."""
        with self._cond:
            self._total -= 1
            self._cond.notify()
        if conn is not None:
            conn.close()

    def connections(self) -> list[Connection]:
        """Every open connection of the pool, idle or in use."""
        return [conn for conn in list(self._all) if conn.sock.fileno() >= 0]

    def idle(self) -> list[Connection]:
        with self._cond:
            return list(self._idle)
