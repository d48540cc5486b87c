"""A real OpenAI-compatible Chat Completions server on 127.0.0.1 that injects faults on demand.

The fault is chosen per request by the ``x-fault`` header, else by a model id of the form
``fault:<spec>``; a spec is ``;``-separated ``key=value`` pairs (``mode=status;status=429``).
Requests are counted per scenario (the ``x-scenario`` header, else the spec):
``GET /__counts`` → ``{scenario: n}``, ``POST /__reset`` clears them.

Modes (``mode=``; default ``ok``):

- ``ok``: ``"Hello!"`` (or ``text=``), usage 12/2/14, id ``chatcmpl-demo-1``; streamed as the
  deltas ``"Hel"``, ``"lo!"`` (or ``text`` split in ``parts=`` pieces, ``drip_ms=`` apart),
  finish, usage, ``[DONE]``.
- ``status``: ``status=`` (default 500) with an OpenAI JSON error body (``body=text`` an HTML
  body, ``body=big`` 100 KB of HTML, ``body=empty`` none, ``body=json-other`` JSON of another
  shape); ``retry_after_ms=``, ``retry_after=`` (seconds, or ``date+N`` / ``date-N``: an HTTP
  date N s from now) headers; ``times=N``: only the first N requests of the scenario fail,
  later ones succeed (the ``ok`` mode); ``statuses=500,400,ok``: request n of the scenario gets
  the n-th entry (the last one repeats).
- ``echo``: 401 whose JSON body, message and a header echo the request's API key back.
- ``echoall``: a hostile provider echoing the request's key (``Authorization`` bearer or
  ``x-api-key``) in every encoding (``echo_forms``): ``status=`` (default 401) answers the
  provider's error body whose message holds the key, whose members hold its JSON-escaped
  literal, URL-encoded and base64 forms, and whose raw bytes carry every plain occurrence of the
  key as JSON ``\\u`` escapes (mixed with plain characters, both hex cases); ``status=200``
  answers ``ok`` whose text is the forms (streamed one form to a delta, or ``split=N``
  characters to a delta), its raw bytes escaped alike.
  Either way the response headers echo the key raw (``x-request-id``, Anthropic's
  ``request-id``) and in its other forms.
- ``headers=1`` (any mode): the response also carries ``x-request-id: req_hdrs_1``,
  ``x-ratelimit-remaining-requests: 99``, a ``set-cookie`` and ``x-echo-key`` (the request's key).
- ``echorequest``: 400 whose JSON body, message and headers echo the request path (with its
  query) and its ``Authorization`` header.
- ``badjson``: 200 that is not JSON. ``shape``: 200 JSON of the wrong shape.
- ``drop``: close the connection without a response. ``reset``: an RST instead of a response.
- ``stall``: wait ``stall_ms`` (default 10000) before answering (stream: after ``after`` deltas).
- ``delay``: answer normally after ``delay_ms``.
- stream-only, after ``after=`` deltas (default 1): ``errframe`` (an ``error`` frame, ``code=``,
  ``etype=``), ``badchunk`` (a chunk that is not JSON), ``badshape`` (JSON of the wrong shape),
  ``cut`` (the connection ends mid-body, no ``[DONE]``), ``nodone`` (the body ends cleanly but
  without ``[DONE]``).
- ``chunks``: a stream of ``n=`` (default 5000) one-word deltas, for benchmarks.
- ``tool``: a call of ``tool=`` (default ``weather``) with ``args=`` (default ``{"city":"Paris"}``);
  ``args=badjson`` sends ``{"city": "Par`` (not JSON). Streamed as argument fragments
  (``noname=1``: the first fragment lacks the function name).
- ``object``: content ``json=`` (default ``{"name":"Ada","age":36}``); for ``generate_object``.

Compression (any mode): ``encoding=gzip`` / ``deflate`` (zlib-wrapped) / ``deflate-raw`` (sent
as ``deflate``) compresses the body as real servers do: a stream chunked and flushed per write
(``Z_SYNC_FLUSH``: each event decodable as it arrives), ended by the compressor's final bytes;
``encoding=corrupt``: ``Content-Encoding: gzip`` whose bytes after the first write (or the
first ``corrupt_after=`` writes) are not deflate data; ``encoding=bogus``: ``Content-Encoding: bogus`` over plain bytes.

Synchronisation (any mode; tests wait on what the server saw, never on a sleep):

- ``hold=NAME``: the request is held before it is answered (event ``held``) until
  ``POST /__release?hold=NAME`` (event ``released``; later requests of that name are not held
  until ``/__reset``), the client goes away (``gone``) or ``hold_ms`` (default 60000) passes;
  then its mode runs as usual.
- ``gate=NAME``: a text stream stops after its first delta until ``NAME`` is released (as
  ``hold=``: events ``held`` / ``released``), then sends the rest.
- ``barrier=N``: the request waits until N requests of its scenario wait at once, then all of
  them go on (event ``barrier``); when N are not in flight together within ``barrier_ms``
  (default 30000) it is answered 409 ``barrier not reached: k of N requests in flight together``
  (not retryable): concurrent calls that did not overlap fail clearly.
- Events: every request (``request``), every ``stall`` (and ``delay``) wait that begins, a client
  that went away while the server waited (``gone``), held / released requests. Each is
  ``{"event", "scenario", "t"}`` (``t`` from the server's monotonic clock: a test may only compare
  two server-side times, e.g. that a client waited at least as long as it was told to).
  ``GET /__events`` lists them; ``GET /__wait?event=E&scenario=S&n=N&timeout_ms=T`` answers 200
  once N such events were seen, else 408 after T ms (both ``{"count": k}``); in-process:
  ``server.wait_for(event, scenario, n)`` and ``server.times(event, scenario)``.

Anthropic mode: a ``POST …/messages`` is answered in the Messages API's wire format (bytes as the
real API sends them: compact JSON, ``event: <type>`` + ``data:`` frames, ``message_start`` →
``content_block_start`` → ``ping`` → ``content_block_delta``… → ``content_block_stop`` →
``message_delta`` → ``message_stop``; errors as ``{"type": "error", "error": {"type", "message"},
"request_id"}`` with a ``request-id`` header and rate-limit headers). The same modes apply, with
Anthropic's shapes: ``status`` bodies carry the error type of the status (529
``overloaded_error``, 429 ``rate_limit_error``, 500 ``api_error`` …); ``echo`` echoes
``x-api-key``; ``errframe`` sends ``event: error`` (``etype=``, default ``overloaded_error``);
``nodone`` ends without ``message_stop``; ``stop=`` sets the ``stop_reason`` (``max_tokens``,
``refusal`` …); ``object`` answers a forced ``json`` tool with ``json=`` as its input (or as text
when no ``json`` tool was sent); ``blocks`` answers with the content blocks a client must skip
(a ``thinking`` block with its signature, a server tool's ``server_tool_use`` and
``web_search_tool_result``) before the text ``"Hello!"``.

Run standalone: ``python tests/fault_server.py --port 8765``.
"""

from __future__ import annotations

import argparse
import base64
import collections
import select
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import orjson

CREATED = 1_700_000_000
DEFAULT_TOOL_ARGS = '{"city":"Paris"}'


def json_escaped(key: str) -> str:
    """``key`` with every other character a JSON ``\\uXXXX`` escape, hex case alternating."""
    out = []
    for i, c in enumerate(key):
        if i % 2:
            out.append(c)
        else:
            code = f"{ord(c):04x}"
            out.append("\\u" + (code.upper() if i % 4 else code))
    return "".join(out)


def url_encoded(key: str) -> str:
    """``key`` with every other character percent-encoded, hex case alternating."""
    out = []
    for i, c in enumerate(key):
        if i % 2:
            out.append(c)
        else:
            code = "".join(f"%{b:02X}" for b in c.encode())
            out.append(code if i % 4 else code.lower())
    return "".join(out)


def echo_forms(key: str) -> list[str]:
    """The forms of ``key`` a hostile provider echoes (mode ``echoall``), as the decoded text
    holds them: raw, JSON-escaped, URL-encoded, base64 of ``user:key`` and of the key alone."""
    return [
        key,
        json_escaped(key),
        url_encoded(key),
        base64.b64encode(f"user:{key}".encode()).decode(),
        base64.b64encode(key.encode()).decode(),
    ]


def parse_spec(spec: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in spec.split(";"):
        part = part.strip()
        if not part:
            continue
        key, _, value = part.partition("=")
        out[key.strip()] = unquote(value.strip())
    if "mode" not in out and out:
        first = spec.split(";")[0]
        if "=" not in first:
            out["mode"] = first.strip()
    return out


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.counts: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.seen: collections.Counter[tuple[str, str | None]] = collections.Counter()
        self.changed = threading.Condition(self.lock)  # notified on every event and release
        self.released: set[str] = set()  # the hold names released (until a reset)
        self.barriers: dict[str, list[int]] = {}  # scenario → [waiting, generation]
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away (a timeout, a cancel): expected here, not news
        super().handle_error(request, client_address)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count(self, scenario: str) -> int:
        with self.lock:
            return self.counts[scenario]

    def event(self, event: str, scenario: str) -> None:
        with self.lock:
            self.events.append({"event": event, "scenario": scenario, "t": time.monotonic()})
            self.seen[(event, scenario)] += 1
            self.seen[(event, None)] += 1  # any scenario
            self.changed.notify_all()

    def _seen(self, event: str, scenario: str | None) -> int:
        return self.seen[(event, scenario)]

    def wait_for(
        self, event: str, scenario: str | None = None, n: int = 1, timeout: float = 60.0
    ) -> int:
        """Block until ``n`` ``event`` events (of ``scenario``) were seen; the count seen.
        ``timeout`` only keeps a broken test from hanging: a caller asserts the count."""
        with self.lock:
            self.changed.wait_for(lambda: self._seen(event, scenario) >= n, timeout)
            return self._seen(event, scenario)

    def times(self, event: str, scenario: str | None = None) -> list[float]:
        """The server's monotonic times of the ``event`` events (of ``scenario``), in order."""
        with self.lock:
            return [
                e["t"]
                for e in self.events
                if e["event"] == event and (scenario is None or e["scenario"] == scenario)
            ]

    def release(self, hold: str) -> None:
        """Let every request held under ``hold`` (now or later) go on."""
        with self.lock:
            self.released.add(hold)
            self.changed.notify_all()

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self.serve_forever, name="fault-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            self.changed.notify_all()
        self.shutdown()
        self.server_close()


def _completion(
    text: str | None,
    model: str,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-demo-1",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    }


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-demo-1",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def _sse(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


# -- the Anthropic Messages API ----------------------------------------------------------------

ANTHROPIC_MSG_ID = "msg_01QC4g3HwBThD4BaNtBckFDJ"
ANTHROPIC_REQUEST_ID = "req_011CSHoEeqs5C35K2UUqR7Fy"
#: what the real API sends beside every answer (diagnostics a client keeps)
ANTHROPIC_HEADERS = {
    "request-id": ANTHROPIC_REQUEST_ID,
    "anthropic-organization-id": "00000000-0000-4000-8000-000000000000",
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:01Z",
    "anthropic-ratelimit-tokens-limit": "40000",
    "anthropic-ratelimit-tokens-remaining": "39000",
}
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ANTHROPIC_USAGE_START = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 1,
    "service_tier": "standard",
}
ANTHROPIC_USAGE_END = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 2,
}


#: ``mode=blocks``: blocks the client does not report, then text (block index → content block)
ANTHROPIC_OTHER_BLOCKS: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
    (
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "The user greets me."},
            {
                "type": "signature_delta",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            },
        ],
    ),
    (
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}},
        [
            {"type": "input_json_delta", "partial_json": '{"query": "hel'},
            {"type": "input_json_delta", "partial_json": 'lo"}'},
        ],
    ),
    (
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "Hello",
                    "url": "https://example.com/",
                    "encrypted_content": "Eo8BCioIAhgB",
                    "page_age": None,
                }
            ],
        },
        [],
    ),
]


def _anthropic_error(etype: str, message: str) -> bytes:
    return orjson.dumps(
        {
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": ANTHROPIC_REQUEST_ID,
        }
    )


def _anthropic_message(model: str, content: list[dict[str, Any]], stop: str) -> bytes:
    return orjson.dumps(
        {
            "model": model,
            "id": ANTHROPIC_MSG_ID,
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {**ANTHROPIC_USAGE_START, "output_tokens": 2},
        }
    )


def _event(name: str, payload: dict[str, Any] | bytes) -> bytes:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


def _json_tool_sent(req: dict[str, Any]) -> bool:
    return any(isinstance(t, dict) and t.get("name") == "json" for t in req.get("tools") or ())


class _AnthropicHandler:
    """The Messages API side of ``_Handler`` (mixed in)."""

    def _serve_anthropic(
        self: Any, mode: str, spec: dict[str, str], req: dict[str, Any], model: str, stream: bool
    ) -> None:
        if mode == "delay":
            self._sleep(float(spec.get("delay_ms", "10")), "delay")
            mode = "ok"
        if mode == "stall" and not stream:
            self._sleep(float(spec.get("stall_ms", "10000")), "stall")
            self._abort()
            return
        if mode == "status":
            self._status(spec, anthropic=True)
            return
        if mode == "echo":
            key = self.headers.get("x-api-key") or ""
            body = orjson.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "authentication_error",
                        "message": f"invalid x-api-key: {key}",
                        "key": key,
                    },
                    "request_id": ANTHROPIC_REQUEST_ID,
                }
            )
            self._send(
                401, body, {**ANTHROPIC_HEADERS, "x-echo-key": key, "set-cookie": f"session={key}"}
            )
            return
        if mode == "echorequest":
            key = self.headers.get("x-api-key") or ""
            body = orjson.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": f"bad request {self.path} with {key}",
                        "request": self.path,
                        "x-api-key": key,
                    },
                }
            )
            self._send(400, body, {"x-echo-path": self.path, "x-echo-api-key": key})
            return
        if mode == "badjson":
            self._send(
                200,
                b'{"model": "claude", "id": "msg_1", "content": [ this is not json',
                ANTHROPIC_HEADERS,
            )
            return
        if mode == "shape":
            self._send(
                200, b'{"id": "msg_1", "type": "message", "content": "none"}', ANTHROPIC_HEADERS
            )
            return
        if mode == "drop":
            self._abort()
            return
        if mode == "reset":
            self._abort(rst=True)
            return
        stop = spec.get("stop", "end_turn")
        text = spec.get("text", "Hello!")
        if mode == "tool" or (mode == "object" and _json_tool_sent(req)):
            name = spec.get("tool", "weather") if mode == "tool" else "json"
            args = (
                spec.get("args", DEFAULT_TOOL_ARGS)
                if mode == "tool"
                else spec.get("json", '{"name":"Ada","age":36}')
            )
            if args == "badjson":
                args = '{"city": "Par'
            stop = spec.get("stop", "tool_use")
            if stream:
                self._anthropic_stream_tool(model, "" if spec.get("noname") else name, args, stop)
                return
            try:
                value: Any = orjson.loads(args)
            except orjson.JSONDecodeError:
                value = args  # the real API always sends an object; a compatible server may not
            self._send(
                200,
                _anthropic_message(
                    model,
                    [{"type": "tool_use", "id": "toolu_01", "name": name, "input": value}],
                    stop,
                ),
                ANTHROPIC_HEADERS,
            )
            return
        if mode == "object":
            text = spec.get("json", '{"name":"Ada","age":36}')
        if mode == "blocks" and not stream:
            blocks = []
            for start, deltas in ANTHROPIC_OTHER_BLOCKS:
                block = dict(start)
                for d in deltas:
                    if d["type"] == "thinking_delta":
                        block["thinking"] += d["thinking"]
                    elif d["type"] == "signature_delta":
                        block["signature"] = d["signature"]
                    else:
                        block["input"] = {"query": "hello"}
                blocks.append(block)
            self._send(
                200,
                _anthropic_message(model, [*blocks, {"type": "text", "text": text}], stop),
                ANTHROPIC_HEADERS,
            )
            return
        if not stream:
            self._send(
                200,
                _anthropic_message(model, [{"type": "text", "text": text}], stop),
                ANTHROPIC_HEADERS,
            )
            return
        self._anthropic_stream_text(mode, spec, model, text, stop)

    def _anthropic_start(self: Any, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        for k, v in ANTHROPIC_HEADERS.items():
            self.send_header(k, v)
        self._new_encoder()
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (self._echo_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self._write_chunk(
            _event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "model": model,
                        "id": ANTHROPIC_MSG_ID,
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": ANTHROPIC_USAGE_START,
                    },
                },
            )
        )

    def _anthropic_end(self: Any, stop: str) -> None:
        write = self._write_chunk
        write(
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": ANTHROPIC_USAGE_END,
                },
            )
        )
        write(_event("message_stop", {"type": "message_stop"}))
        self._end_stream()

    def _anthropic_stream_text(
        self: Any, mode: str, spec: dict[str, str], model: str, text: str, stop: str
    ) -> None:
        self._anthropic_start(model)
        write = self._write_chunk
        first = 0
        if mode == "blocks":
            for first, (start, deltas) in enumerate(ANTHROPIC_OTHER_BLOCKS):
                write(
                    _event(
                        "content_block_start",
                        {"type": "content_block_start", "index": first, "content_block": start},
                    )
                )
                for d in deltas:
                    write(
                        _event(
                            "content_block_delta",
                            {"type": "content_block_delta", "index": first, "delta": d},
                        )
                    )
                write(_event("content_block_stop", {"type": "content_block_stop", "index": first}))
            first += 1
            mode = "ok"
        write(
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": first,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        write(_event("ping", {"type": "ping"}))

        def delta(piece: str) -> bytes:
            return _event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": first,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )

        self._text_deltas(mode, spec, text, delta)
        if mode != "chunks":
            if mode == "errframe":
                write(
                    _event(
                        "error",
                        {
                            "type": "error",
                            "error": {
                                "type": spec.get("etype", "overloaded_error"),
                                "message": spec.get("message", "Overloaded"),
                            },
                            "request_id": ANTHROPIC_REQUEST_ID,
                        },
                    )
                )
                self._end_stream()
                return
            if mode == "badshape":
                write(
                    _event(
                        "content_block_delta",
                        b'{"type":"content_block_delta","index":0,'
                        b'"delta":{"type":"text_delta","text":5}}',
                    )
                )
                self._end_stream()
                return
            if mode == "badchunk":
                write(
                    b'event: content_block_delta\ndata: {"type":"content_block_delta",'
                    b'"index":0,"delta":{"type":"text_delta","text":"x"\n\n'
                )
                self._end_stream()
                return
            if mode == "cut":
                self._abort()
                return
            if mode == "stall":
                self._sleep(float(spec.get("stall_ms", "10000")), "stall")
                self._abort()
                return
            if mode == "nodone":
                write(_event("content_block_stop", {"type": "content_block_stop", "index": first}))
                self._end_stream()
                return
        write(_event("content_block_stop", {"type": "content_block_stop", "index": first}))
        self._anthropic_end(stop)

    def _anthropic_stream_tool(self: Any, model: str, name: str, args: str, stop: str) -> None:
        self._anthropic_start(model)
        write = self._write_chunk
        block: dict[str, Any] = {"type": "tool_use", "id": "toolu_01", "input": {}}
        if name:
            block["name"] = name
        write(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
        )
        write(_event("ping", {"type": "ping"}))
        half = len(args) // 2
        for piece in ("", args[:half], args[half:]):
            write(
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        write(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        self._anthropic_end(stop)


class _Handler(_AnthropicHandler, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms stalls
    server: FaultServer
    _scenario = ""
    _gone = False  # the client went away while the server waited (recorded once)
    #: mode ``echoall``: every plain occurrence of the key in a body written → its escapes
    _echo_replace: tuple[bytes, bytes] | None = None
    _echo_headers: dict[str, str] | None = None
    _echo_pieces: list[str] | None = None  # mode ``echoall``: a stream's deltas, one form each
    _encoding: str | None = None  # the request's ``encoding=``
    _encoder: Any = None  # the stream's compressor while it is written
    _writes = 0  # the stream's writes so far (``encoding=corrupt`` breaks the later ones)
    _corrupt_after = 1  # ``corrupt_after=``

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    # -- plumbing --------------------------------------------------------------------------------
    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        if self._echo_replace is not None:
            body = body.replace(*self._echo_replace)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        encoder = self._new_encoder()
        if encoder is not None:
            body = encoder.compress(body) + encoder.flush(zlib.Z_FINISH)
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**(headers or {}), **(self._echo_headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _new_encoder(self) -> Any:
        """The response's compressor (``encoding=``; None: plain bytes), its
        ``Content-Encoding`` header sent."""
        encoding = self._encoding
        if not encoding:
            return None
        header = {"corrupt": "gzip", "deflate-raw": "deflate"}.get(encoding, encoding)
        self.send_header("Content-Encoding", header)
        self._writes = 0
        if encoding == "bogus":
            return None
        wbits = {"gzip": 31, "corrupt": 31, "deflate": 15, "deflate-raw": -15}[encoding]
        self._encoder = zlib.compressobj(6, zlib.DEFLATED, wbits)
        return self._encoder

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self._new_encoder()
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (self._echo_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        if self._echo_replace is not None:
            data = data.replace(*self._echo_replace)
        encoder = self._encoder
        if encoder is not None:
            self._writes += 1
            if self._encoding == "corrupt" and self._writes > self._corrupt_after:
                data = b"\x07 not deflate data"  # a final block of the reserved type 3
            else:
                data = encoder.compress(data) + encoder.flush(zlib.Z_SYNC_FLUSH)
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        encoder, self._encoder = self._encoder, None
        if encoder is not None and self._encoding != "corrupt":
            tail = encoder.flush(zlib.Z_FINISH)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(tail), tail))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _text_deltas(
        self, mode: str, spec: dict[str, str], text: str, delta: Callable[[str], bytes]
    ) -> None:
        """Write a stream's text deltas (either wire format: ``delta`` frames one piece).

        ``chunks``: ``n`` (5000) one-word deltas, 256 to a write. Otherwise ``text`` in ``parts``
        (2) pieces, ``drip_ms`` apart; a mode other than ``ok`` stops before piece ``after`` (1).
        """
        if mode == "chunks":
            n = int(spec.get("n", "5000"))
            words = [delta(f"w{i} ") for i in range(n)]
            for start in range(0, n, 256):
                self._write_chunk(b"".join(words[start : start + 256]))
            return
        parts = int(spec.get("parts", "2"))
        size = max(1, -(-len(text) // parts))
        pieces = self._echo_pieces or [text[i : i + size] for i in range(0, len(text), size)]
        after = int(spec.get("after", "1"))
        drip = float(spec.get("drip_ms", "0"))
        for i, piece in enumerate(pieces):
            if mode != "ok" and i == after:
                break
            if i == 1 and "gate" in spec:
                self._hold(spec["gate"], float(spec.get("hold_ms", "60000")))
            if drip and i:
                self._sleep(drip)
                if self._gone:
                    return
            self._write_chunk(delta(piece))

    def _client_gone(self, wait: float) -> bool:
        """Wait up to ``wait`` s for the client to close its end; True when it did (the first
        time, the event ``gone``)."""
        if self._gone:
            return True
        try:
            readable, _, _ = select.select([self.connection], [], [], wait)
            if not readable:
                return False
            if self.connection.recv(1, socket.MSG_PEEK) != b"":
                time.sleep(wait)  # bytes the client sent early: not a close; just wait
                return False
        except OSError:
            pass  # a reset: gone as well
        self._gone = True
        self.server.event("gone", self._scenario)
        return True

    def _sleep(self, ms: float, event: str = "") -> None:
        """Wait ``ms`` (a ``stall`` or ``delay``), recorded as ``event``; the wait ends early,
        recorded as ``gone``, when the client goes away meanwhile."""
        if event:
            self.server.event(event, self._scenario)
        end = time.monotonic() + ms / 1000.0
        while not self.server.stopping.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            if self._client_gone(min(left, 0.05)):
                return

    def _hold(self, name: str, ms: float) -> None:
        """Hold the request until ``name`` is released (``hold=``), the client goes, or ``ms``."""
        srv = self.server
        srv.event("held", self._scenario)
        end = time.monotonic() + ms / 1000.0
        while not srv.stopping.is_set() and time.monotonic() < end:
            with srv.lock:
                if name in srv.released:
                    break
                srv.changed.wait(0.02)
            if self._client_gone(0.0):
                return
        srv.event("released", self._scenario)

    def _barrier(self, n: int, ms: float) -> bool:
        """Wait until ``n`` requests of this scenario wait here at once (``barrier=``)."""
        srv = self.server
        with srv.lock:
            state = srv.barriers.setdefault(self._scenario, [0, 0])
            state[0] += 1
            gen = state[1]
            if state[0] >= n:
                state[0] = 0
                state[1] += 1
                srv.changed.notify_all()
            else:
                srv.changed.wait_for(lambda: state[1] != gen or srv.stopping.is_set(), ms / 1000.0)
            if state[1] == gen:  # not reached: this request leaves the barrier
                state[0] -= 1
                together = state[0] + 1
            else:
                together = n
        if together < n:
            self._send(
                409,
                orjson.dumps(
                    {
                        "error": {
                            "message": f"barrier not reached: {together} of {n} requests in "
                            "flight together",
                            "type": "invalid_request_error",
                        }
                    }
                ),
            )
            return False
        srv.event("barrier", self._scenario)
        return True

    def _abort(self, rst: bool = False) -> None:
        self.close_connection = True
        if rst:  # close with SO_LINGER 0: an RST, not a FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- control ---------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.startswith("/__counts"):
            with self.server.lock:
                body = orjson.dumps(dict(self.server.counts))
            self._send(200, body)
            return
        if self.path.startswith("/__events"):
            with self.server.lock:
                body = orjson.dumps(self.server.events)
            self._send(200, body)
            return
        if self.path.startswith("/__wait"):
            q = {k: v[0] for k, v in parse_qs(self.path.partition("?")[2]).items()}
            n = int(q.get("n", "1"))
            seen = self.server.wait_for(
                q.get("event", ""), q.get("scenario"), n, float(q.get("timeout_ms", "30000")) / 1e3
            )
            self._send(200 if seen >= n else 408, orjson.dumps({"count": seen}))
            return
        self._send(404, b'{"error":{"message":"not found","type":"invalid_request_error"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/__reset"):
            with self.server.lock:
                self.server.counts.clear()
                self.server.bodies.clear()
                self.server.headers.clear()
                self.server.paths.clear()
                self.server.events.clear()
                self.server.seen.clear()
                self.server.released.clear()
            self._send(200, b"{}")
            return
        if self.path.startswith("/__release"):
            q = {k: v[0] for k, v in parse_qs(self.path.partition("?")[2]).items()}
            self.server.release(q.get("hold", ""))
            self._send(200, b"{}")
            return
        route = self.path.partition("?")[0]
        anthropic = route.endswith("/messages")
        if not anthropic and not route.endswith("/chat/completions"):
            self._send(404, b'{"error":{"message":"Unknown path","type":"invalid_request_error"}}')
            return
        try:
            req = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self._send(
                400,
                b'{"error":{"message":"We could not parse the JSON body",'
                b'"type":"invalid_request_error"}}',
            )
            return
        model = str(req.get("model", ""))
        spec_text = self.headers.get("x-fault") or (
            model[len("fault:") :] if model.startswith("fault:") else ""
        )
        spec = parse_spec(spec_text)
        scenario = self.headers.get("x-scenario") or spec_text or "ok"
        with self.server.lock:
            self.server.counts[scenario] += 1
            n = self.server.counts[scenario]
            self.server.bodies.append(req)
            self.server.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.server.paths.append(self.path)
        self._scenario = scenario
        self._encoding = spec.get("encoding")
        self._corrupt_after = int(spec.get("corrupt_after", "1"))
        self._encoder = None
        self.server.event("request", scenario)
        if "barrier" in spec and not self._barrier(
            int(spec["barrier"]), float(spec.get("barrier_ms", "30000"))
        ):
            return
        if "hold" in spec:
            self._hold(spec["hold"], float(spec.get("hold_ms", "60000")))
        mode = spec.get("mode", "ok")
        times = int(spec["times"]) if "times" in spec else None
        if times is not None and n > times:
            mode = "ok"
        if "statuses" in spec:  # request n of the scenario gets the n-th status (last repeats)
            seq = spec["statuses"].split(",")
            step = seq[min(n, len(seq)) - 1]
            mode = "ok" if step == "ok" else "status"
            spec = {**spec, "status": step}
        stream = bool(req.get("stream"))
        self._echo_replace = None
        self._echo_headers = None
        self._echo_pieces = None
        if spec.get("headers"):  # a success's headers: safe ones, a cookie, the key echoed
            key = self.headers.get("x-api-key") or (self.headers.get("Authorization") or "")
            self._echo_headers = {
                "x-request-id": "req_hdrs_1",
                "x-ratelimit-remaining-requests": "99",
                "set-cookie": "session=cookie-secret-1",
                "x-echo-key": key.removeprefix("Bearer "),
            }
        if mode == "echoall":
            mode, spec = self._echo_all(spec, anthropic)
            if mode == "":
                return
        if anthropic:
            self._serve_anthropic(mode, spec, req, model, stream)
            return
        self._serve(mode, spec, req, model, stream)

    # -- scenarios -------------------------------------------------------------------------------
    def _echo_all(self, spec: dict[str, str], anthropic: bool) -> tuple[str, dict[str, str]]:
        """Mode ``echoall``: its headers and byte rewrite set up; an error answered here (the mode
        and spec to go on with: ``""`` when answered, ``ok`` for a 2xx)."""
        if anthropic:
            key = self.headers.get("x-api-key") or ""
        else:
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        forms = echo_forms(key)
        escaped = json_escaped(key).encode()
        self._echo_replace = (key.encode(), escaped) if key else None
        headers = {
            "x-request-id": key,
            "x-echo-escaped": forms[1],
            "x-echo-urlencoded": forms[2],
            "x-echo-basic": forms[3],
        }
        if anthropic:
            headers["request-id"] = key
        self._echo_headers = headers
        status = int(spec.get("status", "401"))
        if 200 <= status < 300:
            split = int(spec.get("split", "0"))  # each form in deltas of this many characters
            self._echo_pieces = []
            for form in forms:
                text = f"{form} | "
                step = split or len(text)
                self._echo_pieces += [text[i : i + step] for i in range(0, len(text), step)]
            return "ok", {**spec, "text": " | ".join(forms)}
        detail = {"escaped": forms[1], "urlencoded": forms[2], "basic": forms[3], "b64": forms[4]}
        if anthropic:
            etype = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": etype, "message": f"invalid x-api-key: {key}", **detail},
                "request_id": key,
            }
        else:
            payload = {
                "error": {
                    "message": f"Incorrect API key provided: {key}.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                    **detail,
                }
            }
        self._send(status, orjson.dumps(payload), dict(ANTHROPIC_HEADERS) if anthropic else {})
        return "", spec

    def _serve(
        self, mode: str, spec: dict[str, str], req: dict[str, Any], model: str, stream: bool
    ) -> None:
        if mode == "delay":
            self._sleep(float(spec.get("delay_ms", "10")), "delay")
            mode = "ok"
        if mode == "stall" and not stream:
            self._sleep(float(spec.get("stall_ms", "10000")), "stall")
            self._abort()
            return
        if mode == "status":
            self._status(spec)
            return
        if mode == "echo":
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            body = orjson.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key}. You can find your API key at "
                        "https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                        "key": key,
                    }
                }
            )
            self._send(401, body, {"x-echo-key": key, "set-cookie": f"session={key}"})
            return
        if mode == "echorequest":
            # a careless gateway: echoes the request line and its Authorization header
            auth = self.headers.get("Authorization") or ""
            body = orjson.dumps(
                {
                    "error": {
                        "message": f"bad request {self.path} with {auth}",
                        "type": "invalid_request_error",
                        "request": self.path,
                        "authorization": auth,
                    }
                }
            )
            self._send(400, body, {"x-echo-path": self.path, "x-echo-auth": auth})
            return
        if mode == "badjson":
            self._send(200, b'{"id": "chatcmpl-1", "choices": [ this is not json')
            return
        if mode == "shape":
            self._send(200, b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": "none"}')
            return
        if mode == "drop":
            self._abort()
            return
        if mode == "reset":
            self._abort(rst=True)
            return
        text = spec.get("text", "Hello!")
        if mode == "object":
            text = spec.get("json", '{"name":"Ada","age":36}')
        if mode == "tool":
            name = spec.get("tool", "weather")
            args = spec.get("args", DEFAULT_TOOL_ARGS)
            if args == "badjson":
                args = '{"city": "Par'
            if stream:
                self._stream_tool(model, "" if spec.get("noname") else name, args)
            else:
                self._send(
                    200,
                    orjson.dumps(
                        _completion(
                            None,
                            model,
                            finish="tool_calls",
                            tool_calls=[
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": name, "arguments": args},
                                }
                            ],
                        )
                    ),
                )
            return
        if not stream:
            self._send(200, orjson.dumps(_completion(text, model)))
            return
        self._stream_text(mode, spec, model, text)

    def _status(self, spec: dict[str, str], anthropic: bool = False) -> None:
        status = int(spec.get("status", "500"))
        headers: dict[str, str] = dict(ANTHROPIC_HEADERS) if anthropic else {}
        if "retry_after_ms" in spec:
            headers["retry-after-ms"] = spec["retry_after_ms"]
        if "retry_after" in spec:
            ra = spec["retry_after"]
            if ra.startswith(("date+", "date-")):
                ra = formatdate(time.time() + float(ra[4:]), usegmt=True)
            headers["retry-after"] = ra
        kind = spec.get("body", "json")
        if kind == "big":
            self._send(
                status, b"<html>" + b"x" * 100_000 + b"</html>", headers, content_type="text/html"
            )
        elif kind == "text":
            self._send(
                status,
                b"<html><body><h1>Bad things happened</h1></body></html>",
                headers,
                content_type="text/html",
            )
        elif kind == "empty":
            self._send(status, b"", headers)
        elif kind == "json-other":
            self._send(status, b'{"detail": "something else"}', headers)
        elif anthropic:
            etype = spec.get("etype", ANTHROPIC_ERROR_TYPES.get(status, "api_error"))
            self._send(
                status,
                _anthropic_error(
                    etype, spec.get("message", f"Injected fault with status {status}")
                ),
                headers,
            )
        else:
            body = orjson.dumps(
                {
                    "error": {
                        "message": spec.get("message", f"Injected fault with status {status}"),
                        "type": "server_error" if status >= 500 else "invalid_request_error",
                        "param": None,
                        "code": spec.get("code"),
                    }
                }
            )
            self._send(status, body, headers)

    def _stream_text(self, mode: str, spec: dict[str, str], model: str, text: str) -> None:
        self._start_stream()
        write = self._write_chunk
        write(_sse(_chunk(model, {"role": "assistant", "content": ""})))
        self._text_deltas(mode, spec, text, lambda piece: _sse(_chunk(model, {"content": piece})))
        if mode != "chunks":
            if mode == "errframe":
                err: dict[str, Any] = {
                    "message": spec.get(
                        "message", "The server had an error while processing your request."
                    ),
                    "type": spec.get("etype", "server_error"),
                    "param": None,
                    "code": spec.get("code"),
                }
                if "code" in spec and spec["code"].isdigit():
                    err["code"] = int(spec["code"])
                write(_sse(orjson.dumps({"error": err})))
                self._end_stream()
                return
            if mode == "badshape":
                write(_sse(b'{"id": "chatcmpl-demo-1", "choices": [{"delta": {"content": 5}}]}'))
                self._end_stream()
                return
            if mode == "badchunk":
                write(b'data: {"id": "chatcmpl-demo-1", "choices": [{"delta": {"content": "x"\n\n')
                self._end_stream()
                return
            if mode == "cut":
                self._abort()
                return
            if mode == "stall":
                self._sleep(float(spec.get("stall_ms", "10000")), "stall")
                self._abort()
                return
            if mode == "nodone":
                self._end_stream()
                return
        write(_sse(_chunk(model, {}, "stop")))
        write(
            _sse(
                orjson.dumps(
                    {
                        "id": "chatcmpl-demo-1",
                        "object": "chat.completion.chunk",
                        "created": CREATED,
                        "model": model,
                        "choices": [],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
                    }
                )
            )
        )
        write(_sse(b"[DONE]"))
        self._end_stream()

    def _stream_tool(self, model: str, name: str, args: str) -> None:
        self._start_stream()
        write = self._write_chunk
        write(
            _sse(
                _chunk(
                    model,
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ],
                    },
                )
            )
        )
        half = len(args) // 2
        for piece in (args[:half], args[half:]):
            write(
                _sse(
                    _chunk(model, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
            )
        write(_sse(_chunk(model, {}, "tool_calls")))
        write(_sse(b"[DONE]"))
        self._end_stream()


class serve:
    """``with serve() as server:`` a started server, stopped on exit (test fixtures use it)."""

    def __enter__(self) -> FaultServer:
        self.server = FaultServer().start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = FaultServer(args.port)
    print(f"fault server on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
