"""The non-stream call's fast paths against the slow paths they skip, compared byte for byte.

- ``redact.guard_url`` returns a URL with neither ``@`` nor ``?`` at once; ``_guard_parsed``
  (``urlsplit``) is what it answers for every URL: same return value, same secrets remembered.
- ``transport._parsed`` keeps a request URL's ``httpx.URL`` and origin: the pool key and the
  request ``build_request`` makes are those of the URL text, or httpx's own error for both.
- A whole ``generate_text`` through the live transport as it is (the parsed-URL cache, no cookie
  extraction on the pooled clients, response headers made on first read) and through the stock
  httpx path those replace (the URL text to ``build_request``, a fresh parse for the pool key,
  httpx's cookie extraction): for many response shapes (successes, tool calls, refusals, error
  bodies with headers and cookies, redirects, malformed bodies) and params shapes (query
  strings, userinfo, extra headers), the same result or envelope, byte for byte, and the same
  requests on the wire.
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
from aimux_ops.http import transport
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


# -- the parsed URL ----------------------------------------------------------------------------


def _stock_parsed(url: str) -> tuple[httpx.URL | str, transport.Origin]:
    """What ``client_for`` and ``_send_following`` did before the cache: the URL text to
    ``build_request``, and the origin of a fresh parse (none when httpx rejects it)."""
    try:
        key = transport._origin(httpx.URL(url))
    except (httpx.InvalidURL, TypeError, ValueError):
        key = transport._NO_ORIGIN
    return url, key


def _request_of(client: httpx.Client, url: str | httpx.URL) -> Any:
    try:
        req = client.build_request(
            "POST", url, content=b"{}", headers={"content-type": "application/json"}
        )
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))
    u = req.url
    return (
        str(u),
        u.scheme,
        u.raw_host,
        u.port,
        u.raw_path,
        req.headers.raw,
        req.extensions,
        req.read(),
    )


def test_parsed_url_gives_the_url_texts_request_and_pool_key() -> None:
    client = transport.HttpTransport()._new_client()
    try:
        urls = list(dict.fromkeys(_urls()))
        for url in urls:
            for _ in range(2):  # the second read comes from the cache when it was kept
                parsed, key = transport._parsed(url)
                stock, stock_key = _stock_parsed(url)
                assert key == stock_key, url
                assert _request_of(client, parsed) == _request_of(client, stock), url
        kept = sum(url in transport._URLS for url in urls)
        assert 0 < kept <= transport._URLS_MAX
        assert all(
            _stock_parsed(u)[1] != transport._NO_ORIGIN for u in transport._URLS
        )  # a URL httpx rejects is never kept
    finally:
        client.close()


# -- a whole call, fast and stock ------------------------------------------------------------


class _StockTransport(transport.HttpTransport):
    """The live transport with httpx's own cookie extraction left in place."""

    def _new_client(self, tls: bool = True) -> httpx.Client:
        client = super()._new_client(tls)
        del client.cookies.extract_cookies  # the class's method again
        return client


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


def test_a_call_through_the_fast_paths_is_the_stock_call(
    srv: ScenarioServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_transport = transport.HttpTransport()
    stock_transport = _StockTransport()
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
            for which in ("fast", "stock", "fast"):  # the first run remembers the secrets
                with monkeypatch.context() as m:
                    if which == "stock":
                        m.setattr(transport, "_default", stock_transport)
                        m.setattr(transport, "_parsed", _stock_parsed)
                    else:
                        m.setattr(transport, "_default", fast_transport)
                    runs.append(_call(srv, case, replies, params))
            (_, _, _), stock, fast = runs
            assert fast[0] == stock[0], case
            assert fast[1] == stock[1], case
            assert fast[2] == stock[2], case  # the requests: method, path, headers, body
            assert [list(r["headers"].items()) for r in fast[2]] == [
                list(r["headers"].items()) for r in stock[2]
            ], case  # and the headers in the same order
            assert fast[0] is not None or fast[1] is not None
            compared += 1
        assert compared == len(_SHAPES) * len(_PARAMS)
    finally:
        for t in (fast_transport, stock_transport):
            for client in t._clients.values():
                client.close()


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
