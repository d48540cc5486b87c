"""``stream_text`` on the core's stream engine, driven from an asyncio event loop.

Each request's op runs as an event-driven stream of the engine (``dispatch.stream_start_json``,
the C API's ``aimux_stream_start``): the core's reader thread does the blocking network reads
(bounded by ``AIMUX_STREAM_READER_THREADS``, with a high-water mark against a slow client), and
the engine's ready list tells the loop which stream has events: its pipe
(``dispatch.events_fd``) is one ``add_reader`` of the loop, whose callback wakes the coroutine
of each listed stream. The loop never blocks on a read, a poll never waits, and a cancel
(``close``) shuts the upstream socket down at once.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson

from ..boundary import dispatch

__all__ = ["Engine", "OpenFailure", "Stream", "client_events"]

#: events taken per poll
_BATCH = 256


def _for_client(ev: dict[str, Any]) -> bool:
    return not (ev.get("providerExecuted") and ev.get("type") == "tool-call")


def client_events(batch: bytes) -> list[dict[str, Any]]:
    """A poll's JSON array of the core's events as the gateway's clients see them, filtered
    where they enter the gateway: a tool call the provider ran itself (``providerExecuted``) is
    no call for the client to run, so no protocol renders it. (A batch whose text names no such
    key, the usual one, is parsed and not looked at again.)"""
    events: list[dict[str, Any]] = orjson.loads(batch)
    if b'"providerExecuted"' not in batch or all(map(_for_client, events)):
        return events
    return [ev for ev in events if _for_client(ev)]


class OpenFailure(Exception):
    """The stream failed before its first event (or was refused): its envelope."""

    def __init__(self, envelope: dict[str, Any]) -> None:
        super().__init__(envelope.get("message", "the stream failed"))
        self.envelope = envelope


class Engine:
    """The streams of one event loop (one per worker process)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._streams: dict[int, Stream] = {}
        self._fd = dispatch.events_fd()
        self._loop = loop
        loop.add_reader(self._fd, self._on_ready)

    def _on_ready(self) -> None:
        # one read drains the pipe (a byte is written only when the ready list goes from empty
        # to listed, and the list is taken whole below); a byte written since is one more
        # wake-up. A second read to see it empty would be one more system call on the loop's
        # thread, each one a moment the reader threads can take the interpreter lock from it.
        try:
            os.read(self._fd, 4096)
        except BlockingIOError:
            pass
        streams = self._streams
        for handle in dispatch.ready_handles(1 << 20):
            stream = streams.get(handle)
            if stream is not None:
                stream._wake()

    def open(self, params_json: bytes) -> Stream:
        """Start ``stream_text``; raises ``OpenFailure`` for what is refused before any I/O."""
        handle, env = dispatch.stream_start_json("stream_text", params_json)
        if handle is None:
            raise OpenFailure(orjson.loads(env or b"{}"))
        stream = self._streams[handle] = Stream(self, handle)
        return stream

    def _forget(self, handle: int) -> None:
        self._streams.pop(handle, None)

    def close(self) -> None:
        self._loop.remove_reader(self._fd)

    @property
    def open_streams(self) -> int:
        return len(self._streams)


class Stream:
    """One running ``stream_text``: ``next_batch`` answers its events as the op made them."""

    __slots__ = ("_engine", "_listed", "_over", "_poll_now", "_waiter", "closed", "handle")

    def __init__(self, engine: Engine, handle: int) -> None:
        self._engine = engine
        self.handle = handle
        self.closed = False
        self._over = False  # the op's end was polled
        self._poll_now = False  # the last poll had events: the next one needs no wait
        self._listed = False  # listed ready since the last poll
        self._waiter: asyncio.Future[None] | None = None  # the consumer's wait, while it waits

    def _wake(self) -> None:
        """Listed ready (or closed): the consumer's wait ends (the loop's thread)."""
        self._listed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_batch(self) -> list[dict[str, Any]] | None:
        """The next poll's events, or None at the op's end or after ``close``; raises
        ``OpenFailure`` when the open failed. A poll is made once the stream is listed ready
        (none at first: its reader thread has just started) and again at once after one that
        had events (a coroutine, not an async generator: a consumer that stops at the terminal
        event leaves nothing for the loop to finalize)."""
        while not self.closed and not self._over:
            if not (self._poll_now or self._listed):
                waiter = self._waiter = self._engine._loop.create_future()
                try:
                    await waiter
                finally:
                    self._waiter = None
                if self.closed:  # (``close`` woke it: the handle is freed)
                    break
            self._listed = False
            batch, ended, env = dispatch.stream_poll_json(self.handle, _BATCH)
            if env is not None:
                self._over = True
                raise OpenFailure(orjson.loads(env))
            self._over = ended
            self._poll_now = bool(batch)
            if batch:
                return client_events(batch)
        return None

    def response_headers(self) -> dict[str, str] | None:
        """The upstream response's headers (redacted), once its first batch is in."""
        return dispatch.stream_response_headers(self.handle)

    def close(self) -> None:
        """Cancel (the upstream request ends at once) and free the stream; any thread of the
        loop, any time, more than once."""
        if self.closed:
            return
        self.closed = True
        self._wake()
        self._engine._forget(self.handle)
        dispatch.stream_free(self.handle)
