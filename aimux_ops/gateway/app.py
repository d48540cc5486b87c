"""The gateway's ASGI app: routing, client keys, bounds, one request's lifecycle, its log line.

A request is checked in this order, each refusal in the client's protocol and before anything
is sent upstream: header size (431), client key (401), room (503 when ``maxInFlight`` requests
are in flight), body size (413), JSON (400), the protocol's fields (400), the public model
(404). Then ``stream_text`` runs on the engine; the response starts only once the first event
is in, so a failure before it is the protocol's error body with the upstream's status, and one
after it the protocol's error event, never followed by a normal end. A client that goes away
cancels the upstream request at once. One JSON log line per request: no body, no header.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ..wire.redact import scrub_text
from . import anthropic_wire, openai_wire
from .config import GatewayConfig
from .engine import Engine, OpenFailure, Stream
from .failures import Failure, GatewayError, from_envelope, render, render_event, safe_headers
from .outcome import Outcome, Request

__all__ = ["Gateway"]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("aimux.gateway")

_ROUTES = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_JSON = (b"content-type", b"application/json")


class _Gone(Exception):
    """The client went away."""


class _Exchange:
    """One request's state: its protocol, what it logs, and its client's disconnect."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, protocol: str) -> None:
        self.scope, self.receive, self.send, self.protocol = scope, receive, send, protocol
        self.started = time.monotonic()
        self.status = 0
        self.stream = False
        self.model: str | None = None
        self.error_type: str | None = None
        self.observations: list[str] = []
        self.gone = False
        self.response_started = False
        self.upstream: Stream | None = None

    async def watch_disconnect(self) -> None:
        """After the body: the client's disconnect cancels the upstream request at once."""
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                if self.upstream is not None:
                    self.upstream.close()
                return

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.status = status
        self.response_started = True
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, data: bytes, more: bool = False) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})

    async def fail(self, failure: Failure) -> None:
        """The failure as the protocol's error body (the response has not started)."""
        status, body = render(failure, self.protocol)
        self.error_type = failure.type_for(self.protocol)
        headers = [_JSON] + [(k.encode(), v.encode()) for k, v in failure.headers.items()]
        await self.start(status, headers)
        await self.body(body)


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope["headers"]:
        if k == name:
            return str(v.decode("latin-1"))
    return None


def _upstream_headers(upstream: Stream) -> list[tuple[bytes, bytes]]:
    """The upstream's safe headers (request ids, rate limits) on a success, under their names."""
    safe = safe_headers(upstream.response_headers())
    return [
        (k.encode("latin-1", "replace"), v.encode("latin-1", "replace")) for k, v in safe.items()
    ]


def _observation_header(observations: list[str]) -> list[tuple[bytes, bytes]]:
    if not observations:
        return []
    return [(b"x-aimux-observations", ",".join(observations).encode("ascii", "replace"))]


def _rid(prefix: str) -> str:
    """A response id: 96 random bits (an id, not a secret: no system call, which would let
    the loop's thread wait for the interpreter lock behind the reader threads)."""
    return f"{prefix}{random.getrandbits(96):024x}"


def _warnings(warnings: list[dict[str, Any]]) -> list[str]:
    out = []
    for w in warnings:
        what = w.get("feature") or w.get("message") or "setting"
        out.append(f"{w.get('type', 'other')}:{what}")
    return out


class Gateway:
    """The ASGI app of one worker process."""

    def __init__(self, cfg: GatewayConfig, keys: frozenset[str]) -> None:
        self.cfg = cfg
        self._keys = tuple(k.encode() for k in keys)
        # what every request's params take from the config, dumped once
        self._model_params = {
            name: spec.model_dump(mode="json", by_alias=True, exclude_none=True)
            for name, spec in cfg.models.items()
        }
        fixed: dict[str, Any] = {"maxRetries": cfg.max_retries}
        if cfg.timeout_ms is not None:
            fixed["timeoutMs"] = cfg.timeout_ms
        if cfg.retry is not None:
            fixed["retry"] = cfg.retry.model_dump(by_alias=True)
        self._fixed = fixed
        self._engine: Engine | None = None
        self.in_flight = 0

    # -- ASGI -------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == "/healthz" and method == "GET":
            body = orjson.dumps({"status": "ok", "inFlight": self.in_flight})
            await send({"type": "http.response.start", "status": 200, "headers": [_JSON]})
            await send({"type": "http.response.body", "body": body})
            return
        anthropic = path == "/v1/messages" or _header(scope, b"anthropic-version") is not None
        ex = _Exchange(
            scope, receive, send, _ROUTES.get(path, "anthropic" if anthropic else "openai")
        )
        try:
            await self._route(ex, path, method)
        except GatewayError as exc:
            if not ex.response_started:
                await ex.fail(exc.failure())
        except _Gone:
            ex.status = 499
        except Exception as exc:  # noqa: BLE001 - a bug of the gateway's: the client still gets its format
            if not ex.response_started:
                await ex.fail(Failure(500, "server", "internal gateway error"))
            ex.error_type = f"internal:{type(exc).__name__}"  # the type only: no request data
        finally:
            self._log(ex, path)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._engine = Engine(asyncio.get_running_loop())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._engine is not None:
                    self._engine.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _engine_of_loop(self) -> Engine:
        if self._engine is None:  # a server without lifespan events
            self._engine = Engine(asyncio.get_running_loop())
        return self._engine

    # -- routing and checks -----------------------------------------------------------------------

    async def _route(self, ex: _Exchange, path: str, method: str) -> None:
        self._check_headers(ex.scope)
        if path == "/v1/models":
            self._authenticate(ex.scope)
            if method != "GET":
                raise GatewayError("method_not_allowed", f"{method} is not allowed on {path}")
            await self._models(ex)
            return
        if path not in _ROUTES:
            raise GatewayError("not_found", f"no such endpoint: {method} {path[:200]}")
        if method != "POST":
            raise GatewayError("method_not_allowed", f"{method} is not allowed on {path}")
        self._authenticate(ex.scope)
        if self.in_flight >= self.cfg.limits.max_in_flight:
            raise GatewayError(
                "overloaded",
                f"the gateway is full ({self.cfg.limits.max_in_flight} requests in flight)",
                retry_after=1,
            )
        self.in_flight += 1
        try:
            await self._generate(ex)
        finally:
            self.in_flight -= 1

    def _check_headers(self, scope: Scope) -> None:
        size = sum(len(k) + len(v) + 4 for k, v in scope["headers"])
        if size > self.cfg.limits.max_header_bytes:
            raise GatewayError(
                "headers_too_large",
                f"the request headers are {size} bytes, over the gateway's "
                f"{self.cfg.limits.max_header_bytes}",
            )

    def _authenticate(self, scope: Scope) -> None:
        given: bytes | None = None
        for k, v in scope["headers"]:
            if k == b"authorization" and v[:7].lower() == b"bearer ":
                given = v[7:].strip()
            elif k == b"x-api-key" and given is None:
                given = v.strip()
        if given:
            ok = False
            for key in self._keys:  # every key compared: no timing tells which one matched
                ok |= hmac.compare_digest(given, key)
            if ok:
                return
        raise GatewayError(
            "authentication",
            "invalid x-api-key"
            if given
            else "no API key: send Authorization: Bearer <key> or x-api-key",
        )

    async def _read_body(self, ex: _Exchange) -> bytes:
        limit = self.cfg.limits.max_body_bytes
        declared = _header(ex.scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise GatewayError("request_too_large", f"the request body is over {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await ex.receive()
            if message["type"] == "http.disconnect":
                raise _Gone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise GatewayError("request_too_large", f"the request body is over {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _models(self, ex: _Exchange) -> None:
        models = self.cfg.models
        if ex.protocol == "anthropic":
            data: list[dict[str, Any]] = [
                {
                    "type": "model",
                    "id": name,
                    "display_name": name,
                    "created_at": "1970-01-01T00:00:00Z",
                }
                for name in models
            ]
            names = list(models)
            body: dict[str, Any] = {
                "data": data,
                "has_more": False,
                "first_id": names[0],
                "last_id": names[-1],
            }
        else:
            body = {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": spec.provider}
                    for name, spec in models.items()
                ],
            }
        await ex.start(200, [_JSON])
        await ex.body(orjson.dumps(body))

    # -- one generation ---------------------------------------------------------------------------

    def _translate(self, ex: _Exchange, raw: bytes) -> tuple[Request, bytes]:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise GatewayError("invalid_request", "the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise GatewayError("invalid_request", "the request body must be a JSON object")
        wire = openai_wire if ex.protocol == "openai" else anthropic_wire
        req = wire.parse_request(body)
        ex.model, ex.stream, ex.observations = req.model, req.stream, req.observations
        model = self._model_params.get(req.model)
        if model is None:
            raise GatewayError(
                "not_found", f"The model `{req.model[:200]}` does not exist", param="model"
            )
        return req, orjson.dumps({**req.params, "model": model, **self._fixed})

    async def _generate(self, ex: _Exchange) -> None:
        timeout_s = self.cfg.limits.body_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):  # a client that trickles its body
                raw = await self._read_body(ex)
        except TimeoutError:
            raise GatewayError(
                "request_timeout", f"the request body did not arrive within {timeout_s:g} s"
            ) from None
        req, params_json = self._translate(ex, raw)
        engine = self._engine_of_loop()
        try:
            upstream = engine.open(params_json)
        except OpenFailure as exc:
            await ex.fail(from_envelope(exc.envelope))
            return
        ex.upstream = upstream
        watcher = asyncio.create_task(ex.watch_disconnect())
        try:
            if req.stream:
                await self._stream(ex, req, upstream)
            else:
                await self._complete(ex, req, upstream)
        finally:
            watcher.cancel()
            upstream.close()

    async def _complete(self, ex: _Exchange, req: Request, upstream: Stream) -> None:
        out = Outcome()
        try:
            while (batch := await upstream.next_batch()) is not None:
                error = out.add_batch(batch)
                if error is not None:
                    await ex.fail(from_envelope(error["error"]))
                    return
                if out.finished:  # the terminal event: as a stream, no wait for the op's end
                    break
        except OpenFailure as exc:
            if not ex.gone:
                await ex.fail(from_envelope(exc.envelope))
            return
        if ex.gone:
            raise _Gone
        if not out.finished:
            await ex.fail(Failure(502, "upstream", "the upstream response ended without its end"))
            return
        ex.observations = [*ex.observations, *_warnings(out.warnings)]
        if ex.protocol == "openai":
            body = openai_wire.completion(out, req.model, _rid("chatcmpl-"))
        else:
            body = anthropic_wire.message(out, req.model, _rid("msg_"))
        headers = [_JSON, *_upstream_headers(upstream), *_observation_header(ex.observations)]
        await ex.start(200, headers)
        await ex.body(body)

    async def _stream(self, ex: _Exchange, req: Request, upstream: Stream) -> None:
        writer: openai_wire.ChunkWriter | anthropic_wire.EventWriter
        if ex.protocol == "openai":
            writer = openai_wire.ChunkWriter(req.model, _rid("chatcmpl-"), req.include_usage)
        else:
            writer = anthropic_wire.EventWriter(req.model, _rid("msg_"))
        finished = False
        try:
            while (batch := await upstream.next_batch()) is not None:
                out: list[bytes] = []
                if not ex.response_started:
                    first = batch[0] if batch else None
                    if first is not None and first.get("type") == "error":
                        await ex.fail(from_envelope(first["error"]))
                        return
                    headers = [
                        *_SSE_HEADERS,
                        *_upstream_headers(upstream),
                        *_observation_header(ex.observations),
                    ]
                    await ex.start(200, headers)
                    out.append(writer.start())
                for ev in batch:
                    if ev.get("type") == "error":
                        failure = from_envelope(ev["error"])
                        ex.error_type = failure.type_for(ex.protocol)
                        out.append(render_event(failure, ex.protocol))
                        await ex.body(b"".join(out))
                        return
                    if ev.get("type") == "finish":
                        finished = True
                        ex.observations = [*ex.observations, *_warnings(ev.get("warnings") or [])]
                    out.append(writer.event(ev))
                await ex.body(b"".join(out), more=not finished)
                if finished:
                    return
        except OpenFailure as exc:
            if not ex.gone:
                await ex.fail(from_envelope(exc.envelope))
            return
        if ex.gone:
            raise _Gone
        failure = Failure(502, "upstream", "the upstream stream ended without its terminal event")
        if not ex.response_started:
            await ex.fail(failure)
            return
        ex.error_type = failure.type_for(ex.protocol)
        await ex.body(render_event(failure, ex.protocol))

    # -- the log line -----------------------------------------------------------------------------

    def _log(self, ex: _Exchange, path: str) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        line: dict[str, Any] = {
            "event": "request",
            "method": ex.scope["method"],
            "path": path[:200],
            "status": ex.status,
            "ms": round((time.monotonic() - ex.started) * 1000, 2),
        }
        if ex.model is not None:
            line["model"] = ex.model[:200]
            line["stream"] = ex.stream
        if ex.error_type is not None:
            line["errorType"] = ex.error_type
        if ex.observations:
            line["observations"] = ex.observations
        log.info(scrub_text(orjson.dumps(line).decode()))
