"""The gateway's HTTP protocol: uvicorn's httptools protocol with a bound on a request's head.

httptools buffers a header (and uvicorn the header list) whole before the app sees any of it, so
the app's own check (``Gateway._check_headers``, a 431 in the client's format) cannot bound the
memory of a client that sends megabytes of head. This protocol counts the bytes a request's head
has taken so far and, past ``maxHeaderBytes`` (plus at most one read), answers 431 and closes the
connection: nothing more is read. Only public parts of uvicorn's protocol are used (the asyncio
protocol methods and the httptools callbacks); the tested range is pinned in ``pyproject.toml``
and ``tests/test_gateway_clients.py`` fails should the bound stop working.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["BoundedHttpToolsProtocol"]


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    #: set by the worker from its config before it serves (``cli.worker_app``)
    max_header_bytes = 32 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        in_head = self._in_head
        super().data_received(data)
        if not (in_head and self._in_head) or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > self.max_header_bytes:
            self._refuse(self.transport)

    def _refuse(self, transport: asyncio.Transport) -> None:
        body = orjson.dumps(
            {
                "error": {
                    "message": f"the request head is over the gateway's {self.max_header_bytes}"
                    " bytes",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        )
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body)
        )
        transport.write(head + body)
        transport.close()
