"""Every failure the gateway answers, classified once (seed 003: typed error → classify →
preserve safe details → render).

A failure is the gateway's own (``GatewayError``: no key, unknown model, bad JSON, a body too
large, full) or an op's envelope (``from_envelope``: the upstream's status, error type, ``code``
and ``param`` when it gave them, its safe headers; a refusal of the core before any network is a
400). Either becomes one ``Failure``, which ``render`` turns into each ingress protocol's error
body (before the response starts) or its error event (after), with the numeric status inside.
Classification reads structured fields only (status, code, the upstream body's shape), never a
message's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ..wire.redact import is_secret_header, scrub_message

__all__ = ["Failure", "GatewayError", "from_envelope", "render", "render_event", "safe_headers"]

#: the stable client-facing kinds, and each protocol's error type for them
_OPENAI_TYPE = {
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "invalid_request_error",
    "request_too_large": "invalid_request_error",
    "headers_too_large": "invalid_request_error",
    "method_not_allowed": "invalid_request_error",
    "request_timeout": "invalid_request_error",
    "rate_limit": "rate_limit_error",
    "overloaded": "server_error",
    "timeout": "timeout_error",
    "upstream": "server_error",
    "server": "server_error",
}
_ANTHROPIC_TYPE = {
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "not_found": "not_found_error",
    "request_too_large": "request_too_large",
    "headers_too_large": "invalid_request_error",
    "method_not_allowed": "invalid_request_error",
    "request_timeout": "invalid_request_error",
    "rate_limit": "rate_limit_error",
    "overloaded": "overloaded_error",
    "timeout": "timeout_error",
    "upstream": "api_error",
    "server": "api_error",
}
#: an upstream error type (either protocol's) → the kind, for a failure whose status says nothing
#: (an error inside a stream that began with 200)
_KIND_OF_TYPE = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "authentication",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "request_too_large",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "server_error": "server",
    "timeout_error": "timeout",
}
_STATUS_OF_KIND = {
    "invalid_request": 400,
    "authentication": 401,
    "permission": 403,
    "not_found": 404,
    "request_too_large": 413,
    "headers_too_large": 431,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "rate_limit": 429,
    "overloaded": 529,
    "timeout": 504,
    "upstream": 502,
    "server": 500,
}
#: envelope codes of refusals made before any network: the client's input (CONTRACT §1 codes)
_CLIENT_INPUT_CODES = frozenset({5, 6, 8, 15, 16, 301})
_UPSTREAM_SHAPE_CODES = frozenset({2, 3})  # the upstream answered something unreadable
#: upstream headers a client may see, under their own names (never auth, cookies or keys)
_SAFE_HEADERS = frozenset({"retry-after", "retry-after-ms", "x-request-id", "request-id"})
_SAFE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-")


class GatewayError(Exception):
    """A failure of the gateway's own, found before anything is sent upstream."""

    def __init__(
        self, kind: str, message: str, *, param: str | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.param = param
        self.retry_after = retry_after

    def failure(self) -> Failure:
        headers = {"retry-after": str(self.retry_after)} if self.retry_after is not None else {}
        status = 503 if self.kind == "overloaded" else _STATUS_OF_KIND[self.kind]
        return Failure(status, self.kind, str(self), param=self.param, headers=headers)


@dataclass
class Failure:
    """One classified failure: ``status`` as the upstream meant it (before a protocol's own
    adjustment, ``status_for``)."""

    status: int
    kind: str
    message: str
    upstream_type: str | None = None
    upstream_protocol: str | None = None  # "openai" / "anthropic": whose type upstream_type is
    code: Any = None  # the upstream's, never invented
    param: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def status_for(self, protocol: str) -> int:
        """The HTTP status on this ingress: Chat Completions has no 529 (its overloaded is 503)."""
        if protocol == "openai" and self.status == 529:
            return 503
        return self.status

    def type_for(self, protocol: str) -> str:
        if self.upstream_type and self.upstream_protocol == protocol:
            return self.upstream_type
        return (_OPENAI_TYPE if protocol == "openai" else _ANTHROPIC_TYPE)[self.kind]


_KIND_OF_STATUS = {s: k for k, s in _STATUS_OF_KIND.items() if k != "upstream"}
_KIND_OF_STATUS.update({503: "overloaded", 408: "timeout", 422: "invalid_request"})  # upstream


def _kind_of_status(status: int) -> str:
    kind = _KIND_OF_STATUS.get(status)
    if kind is not None:
        return kind
    return "server" if status >= 500 else "invalid_request"


def safe_headers(headers: Any) -> dict[str, str]:
    """The upstream headers a client may see, on a failure and on a success alike (CONTRACT
    §7): retry hints, request ids, rate limits; never a secret-named one."""
    if not isinstance(headers, dict):
        return {}
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = str(name).lower()
        if is_secret_header(low) or not isinstance(value, str):
            continue
        if low in _SAFE_HEADERS or low.startswith(_SAFE_PREFIXES):
            out[low] = value
    return out


def _upstream_error(data: Any) -> tuple[str | None, dict[str, Any] | None]:
    """The upstream body's protocol and its error object, by shape."""
    if not isinstance(data, dict):
        return None, None
    err = data.get("error")
    if not isinstance(err, dict):
        return None, None
    return ("anthropic" if data.get("type") == "error" else "openai"), err


def _last_attempt(env: dict[str, Any]) -> dict[str, Any]:
    """An ``AI_RetryError``'s last attempt (the AI SDK's ``lastError``), else the envelope."""
    error = env.get("error") or {}
    attempts = error.get("errors") if error.get("name") == "AI_RetryError" else None
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        return attempts[-1]
    return env


def from_envelope(env: dict[str, Any]) -> Failure:
    node = _last_attempt(env)
    code = node.get("code")
    error = node.get("error") or {}
    message = scrub_message(str(node.get("message") or env.get("message") or "upstream failure"))
    if code == 11:  # AI_APICallError: the upstream answered (or not)
        status = error.get("statusCode")
        protocol, uerr = _upstream_error(error.get("data"))
        utype = uerr.get("type") if uerr is not None else None
        utype = utype if isinstance(utype, str) else None
        if isinstance(status, int) and status >= 400:
            kind = _kind_of_status(status)
        elif utype in _KIND_OF_TYPE:  # an error event inside a stream that began with 200
            kind = _KIND_OF_TYPE[utype]
            status = _STATUS_OF_KIND[kind]
        else:  # no answer, or a cut / unreadable body: the gateway's upstream failed
            kind, status = "upstream", 502
        return Failure(
            status,
            kind,
            message,
            upstream_type=utype,
            upstream_protocol=protocol,
            code=uerr.get("code") if uerr is not None and protocol == "openai" else None,
            param=uerr.get("param") if uerr is not None and protocol == "openai" else None,
            headers=safe_headers(error.get("responseHeaders")),
        )
    if code == 12:
        return Failure(504, "timeout", message)
    if code in _UPSTREAM_SHAPE_CODES:
        return Failure(502, "upstream", message)
    if code in _CLIENT_INPUT_CODES:
        return Failure(400, "invalid_request", message)
    return Failure(500, "server", message)


def render(failure: Failure, protocol: str) -> tuple[int, bytes]:
    """The status and error body of the ingress protocol (CONTRACT §7)."""
    status = failure.status_for(protocol)
    body: dict[str, Any]
    if protocol == "openai":
        body = {
            "error": {
                "message": failure.message,
                "type": failure.type_for(protocol),
                "param": failure.param,
                "code": failure.code,
            }
        }
    else:
        body = {
            "type": "error",
            "error": {"type": failure.type_for(protocol), "message": failure.message},
        }
    return status, orjson.dumps(body)


def render_event(failure: Failure, protocol: str) -> bytes:
    """The protocol's SSE error event after the stream started, the status inside it."""
    status = failure.status_for(protocol)
    payload: dict[str, Any]
    if protocol == "openai":
        payload = {
            "error": {
                "message": failure.message,
                "type": failure.type_for(protocol),
                "param": failure.param,
                "code": failure.code,
                "status": status,
            }
        }
        return b"data: " + orjson.dumps(payload) + b"\n\n"
    payload = {
        "type": "error",
        "error": {"type": failure.type_for(protocol), "message": failure.message, "status": status},
    }
    return b"event: error\ndata: " + orjson.dumps(payload) + b"\n\n"
