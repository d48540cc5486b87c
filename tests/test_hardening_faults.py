"""Hardening, faults (issue 8): a provider that stalls mid-stream, a server that closes after the
headers, a server that never answers — each bounded by ``timeoutMs`` and mapped to the right code,
through the Python dispatch boundary and through the C ABI (libaimux.so via ctypes).

"Bounded by timeoutMs" is shown without timing anything: every stalling server here holds the
connection far longer than the test's own pytest timeout, so the only way a call can come back at
all is the core's deadline — and it must come back as a TimeoutError (12) carrying that timeoutMs.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer, serve
from helpers import assert_valid_envelope
from op_calls import wait_blocked_reader

from aimux_ops.boundary import dispatch
from aimux_ops.streams import registry as stream_registry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import CError, Lib

pytestmark = pytest.mark.timeout(90)

HOLD_SECONDS = 300  # far beyond the pytest timeout: only the core's deadline can end a call


class RawServer:
    """A loopback TCP server with one scripted behaviour per connection:

    - ``silent``: accept, read, never answer;
    - ``close-after-headers``: read the request, send a 200's headers promising a body (JSON with
      a Content-Length, or an SSE stream with chunked encoding), then close the connection;
    - ``stall-after-headers``: the same headers, then hold the connection without a byte more.
    """

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.conns.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> bytes | None:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        return body

    def _handle(self, conn: socket.socket) -> None:
        try:
            body = self._read_request(conn)
            if body is None:
                return
            self.requests += 1
            if self.behaviour == "silent":
                self.stop.wait(HOLD_SECONDS)
                return
            stream = bool(orjson.loads(body).get("stream"))
            if stream:
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
            else:
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n"
                )
            if self.behaviour == "stall-after-headers":
                self.stop.wait(HOLD_SECONDS)
                return
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.thread.join(5)


# -- the two surfaces -----------------------------------------------------------------------------


class Surface:
    name = ""

    def call(self, op: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        raise NotImplementedError

    def stream(self, params: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """(open error envelope or None, the events)"""
        raise NotImplementedError


class PythonSurface(Surface):
    name = "python"

    def call(self, op: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        result, env = dispatch.call_json(op, orjson.dumps(params))
        if env is not None:
            return None, assert_valid_envelope(env)
        return orjson.loads(result or b"null"), None

    def stream(self, params: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        handle, env = dispatch.stream_json("stream_text", orjson.dumps(params))
        if env is not None:
            return assert_valid_envelope(env), []
        assert handle is not None
        events = []
        try:
            for _ in range(10_000):
                event, env = dispatch.stream_next_json(handle)
                assert env is None
                if event is None:
                    break
                events.append(orjson.loads(event))
        finally:
            dispatch.stream_free(handle)
        return None, events


class CSurface(Surface):
    name = "c-abi"
    _lib: Lib | None = None

    @property
    def lib(self) -> Lib:
        if CSurface._lib is None:
            CSurface._lib = Lib()
        return CSurface._lib

    def call(self, op: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        try:
            return orjson.loads(self.lib.call(op.encode(), orjson.dumps(params))), None
        except CError as err:
            doc = assert_valid_envelope(err.json)
            assert doc["code"] == err.code
            return None, doc

    def stream(self, params: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        try:
            events = [
                orjson.loads(e)
                for e in self.lib.stream_events(b"stream_text", orjson.dumps(params), 10_000)
            ]
        except CError as err:
            return assert_valid_envelope(err.json), []
        return None, events


SURFACES = [PythonSurface(), CSurface()]


@pytest.fixture(params=SURFACES, ids=lambda s: s.name)
def surface(request: pytest.FixtureRequest) -> Surface:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fault() -> Iterator[FaultServer]:
    with serve() as server:
        yield server


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    server = RawServer(request.param)
    try:
        yield server
    finally:
        server.close()


def params(base_url: str, model: str = "gpt-4o-mini", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": {"provider": "openai", "modelId": model, "baseURL": base_url, "apiKey": "sk-x"},
        "prompt": "hi",
    }
    out.update(extra)
    return out


def assert_timeout(env: dict[str, Any] | None, timeout_ms: int) -> None:
    assert env is not None, "the call came back without an error"
    assert (env["kind"], env["code"], env["error"]["name"]) == ("aimux", 12, "AI_TimeoutError"), env
    assert env["error"]["timeoutMs"] == timeout_ms


# -- a provider that stalls -----------------------------------------------------------------------


def test_stream_stalls_mid_stream_ends_in_a_timeout_event(
    surface: Surface, fault: FaultServer
) -> None:
    spec = f"mode=stall;after=1;stall_ms={HOLD_SECONDS * 1000}"
    # 2 s: the first delta arrives first, on a loaded machine too
    p = params(fault.base_url, f"fault:{spec}", timeoutMs=2000, maxRetries=2)
    p["model"]["headers"] = {"x-scenario": f"stall-mid-{surface.name}"}
    open_error, events = surface.stream(p)
    assert open_error is None
    assert [e["type"] for e in events] == ["text-delta", "error"], events
    assert events[0]["text"] == "Hel"
    assert_timeout(events[1]["error"], 2000)
    assert fault.count(f"stall-mid-{surface.name}") == 1  # a stream never retries after an event


def test_generate_stalls_before_answering_is_a_timeout_not_retried(
    surface: Surface, fault: FaultServer
) -> None:
    spec = f"mode=stall;stall_ms={HOLD_SECONDS * 1000}"
    # 2 s: the request reaches the server first, on a loaded machine too
    p = params(fault.base_url, f"fault:{spec}", timeoutMs=2000, maxRetries=2)
    p["model"]["headers"] = {"x-scenario": f"stall-{surface.name}"}
    result, env = surface.call("generate_text", p)
    assert result is None
    assert_timeout(env, 2000)
    assert fault.count(f"stall-{surface.name}") == 1


# -- a server that never answers ------------------------------------------------------------------


@pytest.mark.parametrize("raw_server", ["silent"], indirect=True)
@pytest.mark.parametrize("op", ["generate_text", "generate_object", "stream_text"])
def test_server_that_never_answers_is_a_timeout(
    surface: Surface, raw_server: RawServer, op: str
) -> None:
    p = params(
        raw_server.base_url,
        timeoutMs=300,
        maxRetries=2,
        retry={"initialDelayMs": 1, "backoffFactor": 1},
    )
    if op == "generate_object":
        p["schema"] = {"type": "object"}
    if op == "stream_text":
        env, events = surface.stream(p)
        assert events == []
    else:
        result, env = surface.call(op, p)
        assert result is None
    assert_timeout(env, 300)
    assert raw_server.requests == 1  # a timeout ends the call: no retry


# -- a server that closes after the headers -------------------------------------------------------


def _source_types(node: dict[str, Any]) -> list[str]:
    out = []
    cur = node.get("cause")
    while isinstance(cur, dict):
        if "kind" not in cur:
            out.append(cur.get("type") or "")
        cur = cur.get("cause")
    return out


def assert_body_read_failure(node: dict[str, Any]) -> None:
    """An APICallError for a body that could not be read: the status that was observed, retryable,
    the transport layers kept as source nodes (CONTRACT §1), no URL in any message."""
    assert (node["kind"], node["code"], node["error"]["name"]) == ("aimux", 11, "AI_APICallError")
    assert node["error"].get("statusCode") == 200
    assert node["error"]["isRetryable"] is True
    types = _source_types(node)
    assert types, f"no source cause under {node}"
    assert any(t.startswith("aimux_ops.http.") for t in types), types
    blob = orjson.dumps(node)
    assert b"127.0.0.1:" not in blob.replace(b'"host"', b"")


@pytest.mark.parametrize("raw_server", ["close-after-headers"], indirect=True)
@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
def test_close_after_headers_unwrapped_without_retries(
    surface: Surface, raw_server: RawServer, op: str
) -> None:
    p = params(raw_server.base_url, timeoutMs=20_000, maxRetries=0)
    if op == "stream_text":
        env, events = surface.stream(p)
        assert events == [], "a stream cut before its first event must fail the open"
    else:
        result, env = surface.call(op, p)
        assert result is None
    assert env is not None
    assert_body_read_failure(env)
    assert env["retryable"] is True
    assert raw_server.requests == 1


@pytest.mark.parametrize("raw_server", ["close-after-headers"], indirect=True)
@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
def test_close_after_headers_is_retried_then_retry_error(
    surface: Surface, raw_server: RawServer, op: str
) -> None:
    p = params(
        raw_server.base_url,
        timeoutMs=20_000,
        maxRetries=2,
        retry={"initialDelayMs": 1, "backoffFactor": 1},
    )
    if op == "stream_text":
        env, events = surface.stream(p)
        assert events == []
    else:
        result, env = surface.call(op, p)
        assert result is None
    assert env is not None
    assert (env["code"], env["error"]["name"]) == (14, "AI_RetryError"), env
    assert env["error"]["reason"] == "maxRetriesExceeded"
    assert len(env["error"]["errors"]) == 3
    for attempt in env["error"]["errors"]:
        assert_body_read_failure(attempt)
    assert raw_server.requests == 3


@pytest.mark.parametrize("raw_server", ["stall-after-headers"], indirect=True)
@pytest.mark.parametrize("op", ["generate_text", "stream_text"])
def test_stall_after_headers_is_a_timeout(surface: Surface, raw_server: RawServer, op: str) -> None:
    p = params(
        raw_server.base_url,
        timeoutMs=400,
        maxRetries=2,
        retry={"initialDelayMs": 1, "backoffFactor": 1},
    )
    if op == "stream_text":
        env, events = surface.stream(p)
        assert events == []
    else:
        result, env = surface.call(op, p)
        assert result is None
    assert_timeout(env, 400)
    assert raw_server.requests == 1


# -- cancellation of a stalled stream from another thread -----------------------------------------


def test_cancel_from_another_thread_wakes_a_blocked_next(fault: FaultServer) -> None:
    """A C thread blocked in aimux_stream_next on a stalled provider is woken by
    aimux_stream_cancel from another thread and reports the end (no timeoutMs: only the cancel
    can end it); the handle is then freed and answers 203."""
    lib = CSurface().lib
    spec = f"mode=stall;after=1;stall_ms={HOLD_SECONDS * 1000}"
    p = params(fault.base_url, f"fault:{spec}", maxRetries=0)
    handle = lib.open_stream(b"stream_text", orjson.dumps(p))
    try:
        first = lib.next_event(handle)
        assert first is not None and orjson.loads(first)["text"] == "Hel"
        got: list[Any] = []
        entered = threading.Event()

        def blocked() -> None:
            entered.set()
            got.append(lib.next_event(handle))

        t = threading.Thread(target=blocked, daemon=True)
        t.start()
        entered.wait(10)
        # the C ABI runs in this process's interpreter: the stream counts its blocked readers
        assert handle in stream_registry._streams
        wait_blocked_reader(handle)
        # the reader is blocked on the stalled stream; cancel from this thread
        lib.lib.aimux_stream_cancel(handle)
        t.join(60)
        assert not t.is_alive(), "aimux_stream_cancel did not wake the blocked aimux_stream_next"
        assert got == [None]
        assert lib.next_event(handle) is None  # later calls report the end too
    finally:
        lib.lib.aimux_stream_free(handle)
    with pytest.raises(CError) as info:
        lib.next_event(handle)
    assert info.value.code == 203
