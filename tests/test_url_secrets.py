"""Secrets carried by the base URL (userinfo, secret query values) never leave the core, even
when a careless server echoes the request line and its Authorization header back; the API key
still goes out as the bearer key (userinfo must not turn into Basic auth)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
from fault_server import FaultServer

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json

QUERY_SECRET = "CANARYQUERY0123456789"
TOKEN_SECRET = "CANARYTOKEN0123456789"
PASSWORD = "CANARYPASSWORD0123456789"
KEY = "sk-url-canary-0123456789abcdef"


def secrets() -> list[bytes]:
    basic = base64.b64encode(f"user:{PASSWORD}".encode())
    return [s.encode() for s in (QUERY_SECRET, TOKEN_SECRET, PASSWORD, KEY)] + [basic]


def params(server: FaultServer, tmp: Path, fault: str) -> dict[str, Any]:
    host = server.base_url.split("://", 1)[1]
    return {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": f"http://user:{PASSWORD}@{host}?api_key={QUERY_SECRET}&token={TOKEN_SECRET}&v=1",
            "apiKey": KEY,
            "headers": {"x-fault": fault},
        },
        "prompt": "hi",
        "maxRetries": 0,
        "recording": {"mode": "record", "path": str(tmp / "rec.jsonl")},
    }


def assert_clean(*blobs: bytes) -> None:
    for blob in blobs:
        for secret in secrets():
            assert secret not in blob, f"{secret!r} leaked in {blob[:400]!r}"


def test_generate_echo_of_url_and_authorization(server: FaultServer, tmp_path: Path) -> None:
    result, envelope = call_json(
        "generate_text", orjson.dumps(params(server, tmp_path, "mode=echorequest"))
    )
    assert result is None and envelope is not None
    env = orjson.loads(envelope)
    assert env["error"]["statusCode"] == 400
    # the request really carried the key as a bearer token and the query, and no Basic auth
    echoed = env["error"]["data"]["error"]
    assert echoed["authorization"] == "[REDACTED]"  # a secret-named member
    assert "with Bearer [REDACTED]" in env["message"] and "Basic" not in env["message"]
    assert "v=1" in echoed["request"] and "[REDACTED]" in echoed["request"]
    assert_clean(envelope, (tmp_path / "rec.jsonl").read_bytes())


def test_stream_echo_and_success(server: FaultServer, tmp_path: Path) -> None:
    handle, envelope = stream_json(
        "stream_text", orjson.dumps(params(server, tmp_path, "mode=echorequest"))
    )
    assert handle is None and envelope is not None
    assert_clean(envelope)
    handle, envelope = stream_json("stream_text", orjson.dumps(params(server, tmp_path, "mode=ok")))
    assert envelope is None and handle is not None
    events = []
    while True:
        event, err = stream_next_json(handle)
        assert err is None
        if event is None:
            break
        events.append(event)
    stream_free(handle)
    assert orjson.loads(events[-1])["type"] == "finish"
    assert_clean(*events, (tmp_path / "rec.jsonl").read_bytes())
