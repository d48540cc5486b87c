"""The non-stream call's fast paths against the slow paths they skip, compared byte for byte.

- ``redact.guard_url`` returns a URL with neither ``@`` nor ``?`` at once; ``_guard_parsed``
  (``urlsplit``) is what it answers for every URL: same return value, same secrets remembered.
- ``transport._parsed`` (cached per URL text): the origin, request target and Host header httpx
  makes of the same URL, or a rejection where httpx rejects it.
- A whole ``generate_text`` through the core's own client and through httpx (the reference, a
  dev dependency): for many response shapes and params shapes, the same result or envelope,
  byte for byte, and the same requests on the wire.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from helpers import CANARY
from scenario_server import Reply, ScenarioServer, json_reply, serve_scenarios

from aimux_ops.boundary.dispatch import call_json
from aimux_ops.http import HTTPError, InvalidURL, transport
from aimux_ops.wire import redact

# -- guard_url -------------------------------------------------------------------------------------

_SCHEMES = ["http://", "https://", "", "HTTP://", "ftp://"]
_USERINFO = ["", "user@", "user:pa55word-1@", ":only-pass-1234@", "u%40x:p%3Ass-w0rd@", "@"]
_HOSTS = ["127.0.0.1", "api.example.com", "[::1]", "[::1", "exämple.com", "h"]
_PORTS = ["", ":8080", ":99999", ":x"]
_PATHS = ["", "/", "/v1", "/v1/", "/p@th", "/a b", "/v1#frag?x=1"]
_QUERIES = ["", "?", "?api-version=1", "?key=sk-query-secret-1", "?a=1&token=tok-value-22", "?x"]


def _urls() -> Iterator[str]:
    for parts in itertools.product(_SCHEMES, _USERINFO, _HOSTS, _PORTS, _PATHS, _QUERIES):
        yield "".join(parts)
    yield from ["", "@", "?", "://", "http://[", "http://a\tb@c/", "http://a\nb?c=d"]


class _SecretState:
    """redact's remembered secrets, saved and put back around each path."""

    def __enter__(self) -> _SecretState:
        with redact._secrets_lock:
            self.saved = (redact._secrets.copy(), redact._secret_re, redact._secret_list)
        return self

    def remembered(self) -> list[str]:
        with redact._secrets_lock:
            return list(redact._secrets)

    def __exit__(self, *exc: object) -> None:
        with redact._secrets_lock:
            secrets, redact._secret_re, redact._secret_list = self.saved
            redact._secrets.clear()
            redact._secrets.update(secrets)


def _run(fn: Any, url: str) -> tuple[Any, list[str]]:
    with _SecretState() as state:
        try:
            out = fn(url)
        except Exception as exc:
            out = ("error", type(exc).__name__, str(exc))
        return out, state.remembered()


def test_guard_url_fast_path_answers_as_urlsplit_does() -> None:
    urls = list(_urls())
    fast_hits = 0
    for url in urls:
        fast = _run(redact.guard_url, url)
        slow = _run(redact._guard_parsed, url)
        assert fast == slow, url
        fast_hits += "@" not in url and "?" not in url
    assert fast_hits > 200 and len(urls) - fast_hits > 200  # both sides well covered


# -- the parsed URL, against httpx's -------------------------------------------------------


def _httpx_parts(url: str) -> Any:
    """What httpx made of ``url`` for a request: the origin, the request target and the Host
    header (or that it rejected it)."""
    try:
        req = httpx.Request("POST", url)
    except Exception:
        return "rejected"
    u = req.url
    if u.scheme not in ("http", "https") or not u.host:
        return "rejected"  # its send fails: UnsupportedProtocol
    return (
        (u.scheme, u.raw_host.decode("ascii"), u.port or (443 if u.scheme == "https" else 80)),
        u.raw_path.decode("ascii"),
        req.headers["host"],
    )


def _our_parts(url: str) -> Any:
    try:
        parsed = transport._parsed(url)
    except (HTTPError, InvalidURL):
        return "rejected"
    return (parsed.origin, parsed.target, parsed.host_header)


#: where the core's client knowingly parts from httpx: it rejects what httpx would send on
#: (whitespace or control characters in a URL: httpx percent-encodes a space and drops a tab; a
#: port over 65535), and keeps an IPv6 literal's brackets out of the origin (the socket's address)
def _known_difference(url: str, ours: Any, theirs: Any) -> bool:
    if ours == "rejected" and any(c in url for c in " \t\n"):
        return True
    if ours == "rejected" and theirs != "rejected" and theirs[0][2] > 65535:
        return True  # a port no socket has: an invalid baseURL at once, not a failed connect
    if ours == "rejected" and theirs != "rejected" and "%" in theirs[0][1]:
        return True  # httpx percent-encodes a broken host ("[") and fails to resolve it
    if ours != "rejected" and theirs != "rejected" and "[" in url:
        return (ours[0][0], f"[{ours[0][1]}]", ours[0][2]) == theirs[0] and ours[1:] == theirs[1:]
    return False


def test_a_parsed_url_is_what_httpx_sends() -> None:
    """The origin (the pool key), the request target and the Host header of every URL of the
    matrix are httpx's; a URL httpx rejects is rejected, and never kept in the cache."""
    urls = list(dict.fromkeys(_urls()))
    both = 0
    for url in urls:
        for _ in range(2):  # the second read comes from the cache when it was kept
            ours, theirs = _our_parts(url), _httpx_parts(url)
            assert ours == theirs or _known_difference(url, ours, theirs), (url, ours, theirs)
        both += ours != "rejected"
    assert both > 200 and len(urls) - both > 200  # both sides well covered
    kept = sum(url in transport._URLS for url in urls)
    assert 0 < kept <= transport._URLS_MAX
    assert all(_our_parts(u) != "rejected" for u in transport._URLS)


# -- a whole call, through the core's client and through httpx ---------------------------------


class _HttpxResponse:
    """The transport seam's response over an httpx response (the reference client)."""

    def __init__(self, raw: httpx.Response) -> None:
        self._raw = raw
        self.status = raw.status_code
        self.reason = raw.reason_phrase
        self.headers = {k.lower(): v for k, v in raw.headers.items()}

    def read(self) -> bytes:
        try:
            return self._raw.read()
        finally:
            self._raw.close()

    def iter_events(self) -> Iterator[tuple[str | None, bytes]]:
        return transport.iter_sse(self._raw.iter_bytes())

    def close(self) -> None:
        self._raw.close()

    def abort(self) -> None:
        self._raw.close()


class _HttpxTransport:
    """httpx's sync client behind the transport seam, as the core used it before its own client:
    no cookies kept, only a same-origin 307/308 followed."""

    def __init__(self) -> None:
        self.client = httpx.Client(follow_redirects=False)

    def send(self, request: transport.HTTPRequest, deadline: transport.Deadline) -> Any:
        self.client.cookies.clear()
        url = httpx.URL(request.url)
        for _ in range(transport.MAX_REDIRECTS + 1):
            req = self.client.build_request(
                request.method, url, content=request.body, headers=request.headers
            )
            raw = self.client.send(req, stream=True)
            location = raw.headers.get("location")
            target = url.join(location) if location else None
            if (
                raw.status_code not in (307, 308)
                or target is None
                or ((target.scheme, target.host, target.port) != (url.scheme, url.host, url.port))
            ):
                return _HttpxResponse(raw)
            raw.read()
            raw.close()
            url = target
        return _HttpxResponse(raw)


def _completion(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    body.update(extra)
    return body


_TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
}

#: name → the replies of the case
_SHAPES: dict[str, list[Reply]] = {
    "ok": [json_reply(_completion({"content": "Hello!"}))],
    "ok-cookie": [
        json_reply(
            _completion({"content": "c"}), **{"set-cookie": "session=abc123; Path=/; HttpOnly"}
        )
    ],
    "null-content": [json_reply(_completion({"content": None}))],
    "tools": [
        json_reply(
            _completion({"content": None, "tool_calls": [_TOOL_CALL]}),
        )
    ],
    "refusal": [json_reply(_completion({"content": "", "refusal": "I can't."}))],
    "float-usage": [
        json_reply(
            _completion(
                {"content": "f"},
                usage={"prompt_tokens": 7.0, "completion_tokens": 2.5, "total_tokens": None},
            )
        )
    ],
    "no-usage": [json_reply(_completion({"content": "n"}, usage=None))],
    "bad-shape": [json_reply({"choices": "nope"})],
    "no-choices": [json_reply({"choices": []})],
    "not-json": [Reply(200, b"<html>gateway</html>", content_type="text/html")],
    "error-200": [json_reply({"error": {"message": "overloaded", "type": "server_error"}})],
    "400": [
        json_reply(
            {"error": {"message": f"bad key {CANARY}", "type": "invalid_request_error"}},
            400,
            **{"x-request-id": "req-1", "set-cookie": "a=b", "authorization": CANARY},
        )
    ],
    "429": [json_reply({"error": {"message": "slow down"}}, 429, **{"retry-after": "0"})],
    "500-text": [Reply(500, b"Internal Server Error", content_type="text/plain")],
    "302": [Reply(302, b"", {"location": "https://elsewhere.example/"})],
    "307": [
        Reply(307, b"", {"location": "/c/{name}/v2/chat/completions"}),
        json_reply(_completion({"content": "moved"})),
    ],
}

_PARAMS: dict[str, dict[str, Any]] = {
    "plain": {},
    "query": {"query": "?api-version=2024-01-01&key=sk-query-secret-77"},
    "userinfo": {"userinfo": "someone:pass-word-99@"},
    "headers": {"headers": {"X-Extra": "1", "X-Api-Key": "hdr-secret-value-5"}},
    "settings": {"extra": {"temperature": 0.5, "maxOutputTokens": 7, "system": "be brief"}},
}


def _params(srv: ScenarioServer, name: str, shape: dict[str, Any]) -> dict[str, Any]:
    base = srv.url(name)
    if "userinfo" in shape:
        base = base.replace("http://", "http://" + shape["userinfo"])
    base += shape.get("query", "")
    model: dict[str, Any] = {
        "provider": "openai",
        "modelId": "gpt-4o-mini",
        "baseURL": base,
        "apiKey": CANARY,
    }
    if "headers" in shape:
        model["headers"] = shape["headers"]
    return {
        "model": model,
        "prompt": "hi",
        "maxRetries": 1,
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
        **shape.get("extra", {}),
    }


@pytest.fixture(scope="module")
def srv() -> Iterator[ScenarioServer]:
    with serve_scenarios() as server:
        yield server


def _call(
    srv: ScenarioServer, case: str, replies: list[Reply], params: dict[str, Any]
) -> tuple[bytes | None, bytes | None, list[dict[str, Any]]]:
    srv.add(case, *replies)
    result, env = call_json("generate_text", orjson.dumps(params))
    # the server's Date header (in an error's responseHeaders) is the one thing that may differ
    # between two runs a second apart
    if env is not None:
        env = _DATE.sub(b'"date":"-"', env)
    return result, env, srv.requests[case]


_DATE = re.compile(rb'"date":"[^"]*"')


def test_a_call_through_the_cores_client_is_the_call_through_httpx(
    srv: ScenarioServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For many response shapes (successes, tool calls, refusals, error bodies with headers and
    cookies, redirects, malformed bodies) and params shapes (query strings, userinfo, extra
    headers): the same result or envelope, byte for byte, and the same requests on the wire
    (httpx's ``Connection: keep-alive`` aside: HTTP/1.1's default) as through httpx."""
    ours = transport.HttpTransport()
    reference = _HttpxTransport()
    try:
        compared = 0
        for (shape_name, replies), (params_name, shape) in itertools.product(
            _SHAPES.items(), _PARAMS.items()
        ):
            case = f"{shape_name}.{params_name}"
            replies = [
                Reply(
                    r.status,
                    r.body,
                    {k: v.replace("{name}", case) for k, v in r.headers.items()},
                    r.content_type,
                )
                for r in replies
            ]
            params = _params(srv, case, shape)
            runs = []
            for which in ("ours", "httpx", "ours"):  # the first run remembers the secrets
                with monkeypatch.context() as m:
                    m.setattr(transport, "_default", reference if which == "httpx" else ours)
                    runs.append(_call(srv, case, replies, params))
            (_, _, _), theirs, mine = runs
            assert mine[0] == theirs[0], case
            assert mine[1] == theirs[1], case
            for a, b in zip(mine[2], theirs[2], strict=True):
                b = {**b, "headers": {k: v for k, v in b["headers"].items() if k != "connection"}}
                assert a == b, case  # the requests: method, path, headers, body
            assert mine[0] is not None or mine[1] is not None
            compared += 1
        assert compared == len(_SHAPES) * len(_PARAMS)
    finally:
        reference.client.close()


def test_no_cookie_reaches_a_later_request(srv: ScenarioServer) -> None:
    """The pooled clients keep no cookie a response set (as with extraction into the empty
    jar): the next request carries no ``Cookie`` header."""
    url = srv.add(
        "cookies",
        json_reply(_completion({"content": "a"}), **{"set-cookie": "session=s1; Path=/"}),
    )
    params = {
        "model": {"provider": "openai", "modelId": "m", "baseURL": url, "apiKey": CANARY},
        "prompt": "hi",
        "maxRetries": 0,
    }
    for _ in range(2):
        result, env = call_json("generate_text", orjson.dumps(params))
        assert env is None and result is not None
    assert [r["headers"].get("cookie") for r in srv.requests["cookies"]] == [None, None]
