"""A scripted HTTP server on 127.0.0.1 that replays exact responses, byte for byte.

Where ``fault_server`` generates answers from a fault spec, this one serves what a test scripted:
a *case* is a list of ``Reply`` (status, headers, body bytes written in the given pieces, each
flushed on its own so a frame can be split across TCP writes); request n of a case gets reply n
(the last one repeats). A case is addressed by its path prefix: ``{server.url(name)}`` is the
``baseURL`` (``http://127.0.0.1:PORT/c/<name>/v1``), and any path under ``/c/<name>/`` belongs to
the case (so a redirect to ``/c/<name>/v2/...`` is answered by the same case's next reply).
Every request is logged per case (method, path, lower-cased headers, body) for assertions.
``encoded`` (and ``sse_reply(..., encoding=)``) compresses a reply as real servers send it:
``Content-Encoding: gzip`` / ``deflate``, each piece flushed with ``Z_SYNC_FLUSH`` (an event
stream one piece per event), the compressor's final bytes as the last piece.

Used by the differential suite against the AI SDK (``test_ai_sdk_differential.py``) and by the
provider-behaviour tests (``test_openai_wire_quirks.py``).
"""

from __future__ import annotations

import threading
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson


@dataclass
class Reply:
    status: int = 200
    #: bytes, or pieces written (and flushed) one by one with chunked transfer encoding; a
    #: ``threading.Event`` among the pieces holds the rest back until the test sets it (what
    #: was written before it is then all the client can read)
    body: bytes | Sequence[bytes | threading.Event] = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "application/json"


def json_reply(obj: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, orjson.dumps(obj), dict(headers))


#: ``encoded``'s zlib window bits per encoding (``deflate`` zlib-wrapped, as the RFC says)
_WBITS = {"gzip": 31, "deflate": 15}


class _Compressor:
    """One body's compressor: ``piece`` flushes what it was given (decodable as it arrives),
    ``end`` its final bytes."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        if encoding == "br":
            import brotli

            self._br = brotli.Compressor()
        elif encoding == "zstd":
            import zstandard

            self._zstd = zstandard.ZstdCompressor().compressobj()
        else:
            self._z = zlib.compressobj(6, zlib.DEFLATED, _WBITS[encoding])

    def piece(self, data: bytes) -> bytes:
        if self.encoding == "br":
            return bytes(self._br.process(data) + self._br.flush())
        if self.encoding == "zstd":
            import zstandard

            return bytes(
                self._zstd.compress(data) + self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            )
        return self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)

    def end(self) -> bytes:
        if self.encoding == "br":
            return bytes(self._br.finish())
        if self.encoding == "zstd":
            return bytes(self._zstd.flush())
        return self._z.flush(zlib.Z_FINISH)


def encoded(reply: Reply, encoding: str = "gzip") -> Reply:
    """``reply`` compressed with ``encoding`` (``gzip`` / ``deflate``; ``br`` / ``zstd`` with
    brotli / zstandard) as a real server sends it: a body of pieces stays chunked, each piece
    flushed (decodable as it arrives) and the compressor's final bytes a last piece; a whole body
    is compressed whole."""
    z = _Compressor(encoding)
    body: bytes | list[bytes | threading.Event]
    if isinstance(reply.body, bytes):
        body = z.piece(reply.body) + z.end()
    else:
        body = [p if isinstance(p, threading.Event) else z.piece(p) for p in reply.body if p]
        body.append(z.end())
    headers = {**reply.headers, "content-encoding": encoding}
    return Reply(reply.status, body, headers, reply.content_type)


def sse_reply(
    frames: Iterable[Any],
    *,
    done: bool = True,
    crlf: bool = False,
    split: int = 0,
    content_type: str | None = "text/event-stream",
    encoding: str | None = None,
) -> Reply:
    """An event stream: each frame a dict (JSON), str or bytes (raw data, or a raw block when it
    already starts with ``data:``/``:``/``event:``). ``split``: write in pieces of that many
    bytes (frames split across writes). ``encoding``: compressed (``encoded``), one piece per
    event unless ``split``."""
    out = b""
    for frame in frames:
        if isinstance(frame, dict):
            out += b"data: " + orjson.dumps(frame) + b"\n\n"
        else:
            raw = frame.encode() if isinstance(frame, str) else frame
            if raw.startswith((b"data:", b":", b"event:", b"id:", b"retry:")):
                out += raw if raw.endswith(b"\n\n") else raw + b"\n\n"
            else:
                out += b"data: " + raw + b"\n\n"
    if done:
        out += b"data: [DONE]\n\n"
    if crlf:
        out = out.replace(b"\n", b"\r\n")
    body: bytes | list[bytes] = out
    sep = b"\r\n\r\n" if crlf else b"\n\n"
    if split:
        body = [out[i : i + split] for i in range(0, len(out), split)]
    elif encoding is not None:
        body = [event + sep for event in out.split(sep) if event]
    else:
        body = [out]
    reply = Reply(200, body, {"cache-control": "no-cache"}, content_type)
    return reply if encoding is None else encoded(reply, encoding)


class ScenarioServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.cases: dict[str, list[Reply]] = {}
        self.requests: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-answer is expected here

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str) -> str:
        return f"{self.origin}/c/{name}/v1"

    def add(self, name: str, *replies: Reply) -> str:
        with self.lock:
            self.cases[name] = list(replies)
            self.requests.pop(name, None)
        return self.url(name)

    def count(self, name: str) -> int:
        with self.lock:
            return len(self.requests.get(name, ()))

    def start(self) -> ScenarioServer:
        self._thread = threading.Thread(
            target=self.serve_forever, name="scenario-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ScenarioServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = self.path.split("/")
        name = parts[2] if len(parts) > 2 and parts[1] == "c" else ""
        with self.server.lock:
            replies = self.server.cases.get(name)
            log = self.server.requests[name]
            log.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "body": raw,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                }
            )
            n = len(log)
        if not replies:
            self._write(Reply(404, b'{"error":{"message":"no such case"}}'))
            return
        self._write(replies[min(n, len(replies)) - 1])

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle

    def _write(self, reply: Reply) -> None:
        self.send_response(reply.status)
        if reply.content_type is not None:
            self.send_header("Content-Type", reply.content_type)
        for k, v in reply.headers.items():
            self.send_header(k, v)
        if isinstance(reply.body, bytes):
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in reply.body:
            if isinstance(piece, threading.Event):
                piece.wait(60)  # bounded: a test that never sets it fails, not hangs
            elif piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class serve_scenarios:
    """``with serve_scenarios() as server:`` a started server, stopped on exit."""

    def __enter__(self) -> ScenarioServer:
        self.server = ScenarioServer().start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
