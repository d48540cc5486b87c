"""Record / replay (CONTRACT §5): one JSON line per call, and an HTTP transport served from them.

A record (``schemaVersion`` 1)::

    {"schemaVersion": 1, "op": "generate_text", "recordedAt": "2026-…Z",
     "params": {…redacted: no apiKey, headers redacted, baseURL without userinfo / secrets…},
     "exchanges": [
       {"request": {"method": "POST", "path": "/v1/chat/completions", "url": "…redacted…",
                    "headers": {…redacted…}, "body": {…}, "bodySha256": "…"},
        "response": {"status": 200, "reason": "OK", "headers": {…redacted…},
                     "body": {…} | "bodyText": "…"          (a call)
                     | "events": [{"data": "…", "event"?: "…"}],   (a stream, chunk by chunk)
                     "error"?: <envelope>}                  (the body read failed: cut stream…)
        | "error": <envelope>}                              (a transport failure, no response)
     ],
     "outcome": "ok" | "error" | "cancelled",
     "result"?: {…the op's result; a stream's finish event…}, "error"?: <envelope>}

Every text written is scrubbed of known secrets. Appends are one ``write`` of one line on an
``O_APPEND`` descriptor under a process-wide lock and an exclusive ``flock``, so concurrent calls
(threads or processes) never interleave.

Replay matches a request by method + path + the SHA-256 of its canonical JSON body (sorted keys)
and serves the recorded response with no network: within one call, the exchanges of one record
are served in order (a retried request gets the next recorded attempt). Every failure is a
recording-domain error caused by the OS or parse error.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ..errors import (
    AimuxError,
    RecordingCorruptError,
    RecordingNoMatchError,
    RecordingOpenFileError,
    RecordingUnsupportedSchemaError,
    RecordingWriteError,
)
from ..guest import on_fork_child
from ..wire.redact import redact_headers, redact_url, scrub_json, scrub_text
from .transport import Deadline, HTTPRequest, Response, Transport

if TYPE_CHECKING:
    from hashlib import sha256 as _sha256
else:
    try:  # CPython's own SHA-256 (hashlib's fallback): a replay never loads OpenSSL for it
        from _sha256 import sha256 as _sha256  # 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as _sha256  # 3.12+
        except ImportError:  # another interpreter: the same digest from hashlib
            from hashlib import sha256 as _sha256

__all__ = [
    "SCHEMA_VERSION",
    "Recorder",
    "Replayer",
    "body_key",
    "open_transport",
    "redact_params",
]

SCHEMA_VERSION = 1

_write_lock = threading.Lock()


def _envelope(exc: BaseException) -> dict[str, Any]:
    from ..wire.envelope import to_envelope

    # remembered on the exception: the dispatch boundary answers the same bytes without a
    # second projection
    return to_envelope(exc, remember=True)


def _decode(envelope: dict[str, Any]) -> AimuxError:
    from ..wire.envelope import decode_error

    return decode_error(envelope)


def body_key(body: Any) -> str:
    """The SHA-256 of the canonical JSON (sorted keys) of a request body."""
    return _sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _request_path(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "/"


def redact_params(params: dict[str, Any]) -> dict[str, Any]:
    """Params as they may be written: no API key, headers redacted, base URL redacted."""
    out = dict(params)
    out.pop("recording", None)
    model = out.get("model")
    if isinstance(model, dict):
        model = dict(model)
        model.pop("apiKey", None)
        if isinstance(model.get("headers"), dict):
            model["headers"] = redact_headers(model["headers"])
        if isinstance(model.get("baseURL"), str):
            model["baseURL"] = redact_url(model["baseURL"])
        out["model"] = model
    if isinstance(out.get("headers"), dict):
        out["headers"] = redact_headers(out["headers"])
    return scrub_json(out)  # type: ignore[no-any-return]


def _scrubbed_body(raw: bytes) -> dict[str, Any]:
    text = scrub_text(raw.decode("utf-8", "replace"))
    try:
        return {"body": orjson.loads(text)}
    except orjson.JSONDecodeError:
        return {"bodyText": text}


# -- record ----------------------------------------------------------------------------------------


class _RecordingResponse:
    def __init__(self, inner: Response, entry: dict[str, Any]) -> None:
        self._inner = inner
        self._entry = entry
        self.status = inner.status
        self.reason = inner.reason
        self.headers = inner.headers

    def read(self) -> bytes:
        try:
            raw = self._inner.read()
        except BaseException as exc:
            self._entry["error"] = _envelope(exc)
            raise
        self._entry.update(_scrubbed_body(raw))
        return raw

    def iter_events(self) -> Iterator[tuple[str | None, bytes]]:
        events: list[dict[str, Any]] = []
        self._entry["events"] = events
        try:
            for name, data in self._inner.iter_events():
                item: dict[str, Any] = {"data": scrub_text(data.decode("utf-8", "replace"))}
                if name is not None:
                    item["event"] = name
                events.append(item)
                yield name, data
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._entry["error"] = _envelope(exc)
            raise

    def close(self) -> None:
        self._inner.close()

    def abort(self) -> None:
        self._inner.abort()


class _RecordingTransport:
    def __init__(self, inner: Transport, exchanges: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._exchanges = exchanges

    def send(self, request: HTTPRequest, deadline: Deadline) -> Response:
        entry: dict[str, Any] = {
            "request": {
                "method": request.method,
                "path": _request_path(request.url),
                "url": redact_url(request.url),
                "headers": redact_headers(request.headers),
                "body": scrub_json(request.json_body),
                "bodySha256": body_key(request.json_body),
            }
        }
        self._exchanges.append(entry)
        try:
            resp = self._inner.send(request, deadline)
        except BaseException as exc:
            entry["error"] = _envelope(exc)
            raise
        rec: dict[str, Any] = {
            "status": resp.status,
            "reason": resp.reason,
            "headers": redact_headers(resp.headers),
        }
        entry["response"] = rec
        return _RecordingResponse(resp, rec)


class Recorder:
    """Record mode for one call: opened before any network, written once at the end."""

    def __init__(self, path: str, op: str, params: dict[str, Any], inner: Transport) -> None:
        self.path = path
        self.op = op
        self.params = redact_params(params)
        self.exchanges: list[dict[str, Any]] = []
        self.transport: Transport = _RecordingTransport(inner, self.exchanges)
        self._written = False
        try:
            self._fd: int | None = os.open(
                path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        except OSError as exc:
            raise RecordingOpenFileError(
                f"Cannot open the recording file for writing: {exc.strerror or exc}", path=path
            ) from exc

    def _line(self, outcome: str, extra: dict[str, Any]) -> bytes:
        record: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION,
            "op": self.op,
            "recordedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "params": self.params,
            "exchanges": self.exchanges,
            "outcome": outcome,
        }
        record.update(extra)
        return orjson.dumps(record) + b"\n"

    def finish_ok(self, result: Any) -> None:
        self._write(self._line("ok", {"result": scrub_json(result)}))

    def finish_error(self, exc: BaseException) -> None:
        self._write(self._line("error", {"error": _envelope(exc)}))

    def finish_cancelled(self) -> None:
        self._write(self._line("cancelled", {}))

    def _write(self, line: bytes) -> None:
        if self._written or self._fd is None:
            return
        self._written = True
        fd = self._fd
        try:
            with _write_lock:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    view = memoryview(line)
                    while view:
                        n = os.write(fd, view)
                        view = view[n:]
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise RecordingWriteError(
                f"Cannot append to the recording file: {exc.strerror or exc}", path=self.path
            ) from exc
        finally:
            self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


# -- replay ----------------------------------------------------------------------------------------


@dataclass
class _Exchange:
    method: str
    path: str
    key: str
    entry: dict[str, Any]


@dataclass
class _Record:
    line: int
    exchanges: list[_Exchange] = field(default_factory=list)


_cache: dict[str, tuple[tuple[int, int, int], list[_Record]]] = {}
_cache_lock = threading.Lock()


@on_fork_child
def _reset_lock_after_fork() -> None:
    """In a forked child: a fresh lock (another thread may have held this one at fork time)."""
    global _write_lock, _cache_lock
    _write_lock, _cache_lock = threading.Lock(), threading.Lock()


def _corrupt(path: str, line: int, reason: str) -> RecordingCorruptError:
    err = RecordingCorruptError(
        f"Recording line {line} is not a valid record: {reason}", path=path, line=line
    )
    err.__cause__ = ValueError(reason)
    return err


def _parse_record(path: str, number: int, raw: bytes) -> _Record:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RecordingCorruptError(
            f"Recording line {number} is not valid JSON", path=path, line=number
        ) from exc
    if not isinstance(obj, dict):
        raise _corrupt(path, number, "expected a JSON object")
    version = obj.get("schemaVersion")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _corrupt(path, number, "schemaVersion: expected an integer")
    if version != SCHEMA_VERSION:
        raise RecordingUnsupportedSchemaError(
            f"Recording line {number} has schema version {version}; this core reads "
            f"version {SCHEMA_VERSION}",
            path=path,
            line=number,
            schema_version=version,
        )
    exchanges = obj.get("exchanges")
    if not isinstance(exchanges, list):
        raise _corrupt(path, number, "exchanges: expected an array")
    record = _Record(number)
    for i, entry in enumerate(exchanges):
        req = entry.get("request") if isinstance(entry, dict) else None
        if not isinstance(req, dict):
            raise _corrupt(path, number, f"exchanges[{i}].request: expected an object")
        method, rpath, key = req.get("method"), req.get("path"), req.get("bodySha256")
        if not (isinstance(method, str) and isinstance(rpath, str) and isinstance(key, str)):
            raise _corrupt(path, number, f"exchanges[{i}].request: method, path, bodySha256")
        resp = entry.get("response")
        err = entry.get("error")
        if resp is None and not isinstance(err, dict):
            raise _corrupt(path, number, f"exchanges[{i}]: expected a response or an error")
        if resp is not None and (
            not isinstance(resp, dict) or not isinstance(resp.get("status"), int)
        ):
            raise _corrupt(path, number, f"exchanges[{i}].response.status: expected an integer")
        record.exchanges.append(_Exchange(method.upper(), rpath, key, entry))
    return record


def _load(path: str) -> list[_Record]:
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with _cache_lock:
            hit = _cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise RecordingOpenFileError(
            f"Cannot open the recording file: {exc.strerror or exc}", path=path
        ) from exc
    records: list[_Record] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            records.append(_parse_record(path, number, raw))
    with _cache_lock:
        _cache[path] = (stamp, records)
    return records


class _ReplayResponse:
    def __init__(self, rec: dict[str, Any]) -> None:
        self._rec = rec
        self.status: int = rec["status"]
        self.reason: str = rec.get("reason") or ""
        headers = rec.get("headers")
        self.headers: dict[str, str] = (
            {str(k).lower(): str(v) for k, v in headers.items()}
            if isinstance(headers, dict)
            else {}
        )

    def _raise_recorded(self) -> None:
        err = self._rec.get("error")
        if isinstance(err, dict):
            raise _decode(err)

    def read(self) -> bytes:
        rec = self._rec
        if "body" in rec:
            body = orjson.dumps(rec["body"])
        elif isinstance(rec.get("bodyText"), str):
            body = rec["bodyText"].encode("utf-8")
        else:
            self._raise_recorded()
            body = b""
        return body

    def iter_events(self) -> Iterator[tuple[str | None, bytes]]:
        events = self._rec.get("events")
        if isinstance(events, list):
            for item in events:
                if isinstance(item, dict) and isinstance(item.get("data"), str):
                    name = item.get("event")
                    yield (name if isinstance(name, str) else None), item["data"].encode()
        self._raise_recorded()

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


class Replayer:
    """Replay mode for one call: a transport served from the recording file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.records = _load(path)
        self._chosen: _Record | None = None
        self._used: set[int] = set()
        self.transport: Transport = self

    def send(self, request: HTTPRequest, deadline: Deadline) -> Response:
        method = request.method.upper()
        path = _request_path(request.url)
        key = body_key(request.json_body)
        exchange = self._match(method, path, key)
        if exchange is None:
            raise RecordingNoMatchError(
                f"No recorded exchange matches {method} {path} with this request body",
                method=method,
                path=path,
            )
        entry = exchange.entry
        resp = entry.get("response")
        if not isinstance(resp, dict):
            raise _decode(entry["error"])
        return _ReplayResponse(resp)

    def _match(self, method: str, path: str, key: str) -> _Exchange | None:
        candidates = [self._chosen] if self._chosen is not None else self.records
        for record in candidates:
            last: _Exchange | None = None
            for ex in record.exchanges:
                if ex.method == method and ex.path == path and ex.key == key:
                    last = ex
                    if id(ex) not in self._used:
                        self._used.add(id(ex))
                        self._chosen = record
                        return ex
            if last is not None:  # every matching attempt served: keep serving the last one
                return last
        return None


def open_transport(
    mode: str | None,
    path: str,
    op: str,
    params: Callable[[], dict[str, Any]],
    live: Callable[[], Transport],
) -> tuple[Transport, Recorder | None]:
    """The transport of one call (transport choice lives here): ``live()`` without a recording,
    the file's exchanges in ``replay`` mode, ``live()`` wrapped by a ``Recorder`` (also returned)
    in ``record`` mode (``params()``: the call's params, redacted by the recorder)."""
    if mode is None:
        return live(), None
    if mode == "replay":
        return Replayer(path).transport, None
    recorder = Recorder(path, op, params(), live())
    return recorder.transport, recorder
