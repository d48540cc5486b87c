"""Hardening, secrets (issue 8): a canary key through every scenario of the fault server — each op,
the Python boundary and the C ABI, the key given as ``apiKey``, through ``apiKeyEnv``, in custom
secret headers and in the base URL's userinfo — while recording. Every byte that leaves the core is
scanned: results, events, envelopes (and every node the C accessors return), the decoded Python
exceptions, the recording file, every log record of every logger, and the process's stdout/stderr.

Every scenario runs against both providers (``openai``: Chat Completions, the key as a bearer
token; ``anthropic``: the Messages API, the key in ``x-api-key``).

Two canaries: ``helpers.CANARY`` is shaped like an OpenAI key (``sk-…``), which the core also
scrubs by pattern; ``PLAIN`` is not, so it is only caught if the core remembers the key it used.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fault_server import FaultServer, serve
from helpers import CANARY, assert_no_canary, assert_valid_envelope

import aimux_ops
from aimux_ops.boundary import dispatch
from aimux_ops.errors import AimuxError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import CError, Lib

pytestmark = pytest.mark.timeout(300)

PLAIN = "Zq9plaincanary4b7e1d2c9a0f63e5"
ENV_VAR = "AIMUX_HARDENING_CANARY_KEY"
CANARIES = (CANARY.encode(), PLAIN.encode())

# (op, fault spec, extra params): every mode of tests/fault_server.py that an op can meet
SCENARIOS: list[tuple[str, str, dict[str, Any]]] = [
    ("generate_text", "mode=ok", {}),
    ("generate_text", "mode=status;status=429;retry_after_ms=1;times=1", {}),
    ("generate_text", "mode=status;status=500", {}),
    ("generate_text", "mode=status;status=400;code=invalid_request", {}),
    ("generate_text", "mode=status;status=401;body=text", {}),
    ("generate_text", "mode=status;status=503;body=big", {}),
    ("generate_text", "mode=status;status=502;body=json-other", {}),
    ("generate_text", "mode=echo", {}),
    ("generate_text", "mode=badjson", {}),
    ("generate_text", "mode=shape", {}),
    ("generate_text", "mode=drop", {}),
    ("generate_text", "mode=reset", {}),
    ("generate_text", "mode=stall;stall_ms=60000", {"timeoutMs": 300}),
    ("generate_text", "mode=delay;delay_ms=5", {}),
    ("generate_text", "mode=tool", {"tools": {"weather": {}}}),
    ("generate_text", "mode=tool;args=badjson", {"tools": {"weather": {}}}),
    ("generate_text", "mode=tool;tool=unknown", {"tools": {"weather": {}}}),
    # a secret as a key of the params and of the request body (a tool named with it, a property
    # of its input schema): keys are scrubbed as values are
    (
        "generate_text",
        "mode=ok",
        {
            "tools": {
                CANARY: {
                    "description": "d",
                    "inputSchema": {"type": "object", "properties": {CANARY: {"type": "string"}}},
                }
            },
        },
    ),
    ("stream_text", "mode=ok", {}),
    ("stream_text", "mode=echo", {}),
    ("stream_text", "mode=status;status=500", {}),
    ("stream_text", "mode=errframe;code=500", {}),
    ("stream_text", "mode=badchunk", {}),
    ("stream_text", "mode=cut", {}),
    ("stream_text", "mode=nodone", {}),
    ("stream_text", "mode=drop", {}),
    ("stream_text", "mode=stall;after=1;stall_ms=60000", {"timeoutMs": 300}),
    ("stream_text", "mode=tool;args=badjson", {"tools": {"weather": {}}}),
    ("generate_object", "mode=object", {}),
    ("generate_object", "mode=object;json=not json", {}),
    ("generate_object", 'mode=object;json={"name":1}', {}),
    ("generate_object", "mode=echo", {}),
    ("generate_object", "mode=status;status=429", {}),
]
OBJECT_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
KEYS = ["apiKey", "apiKeyEnv+headers", "userinfo"]
PROVIDERS = ["openai", "anthropic"]


class Capture(logging.Handler):
    """Every record of every logger, formatted with its arguments and exception text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + " " + repr(record.args))


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with serve() as s:
        yield s


@pytest.fixture
def logs() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def build_params(
    server: FaultServer,
    op: str,
    spec: str,
    extra: dict[str, Any],
    key: str,
    recording: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str = "openai",
) -> dict[str, Any]:
    model: dict[str, Any] = {
        "provider": provider,
        "modelId": f"fault:{spec}",
        "baseURL": server.base_url,
    }
    if key == "apiKey":
        model["apiKey"] = CANARY
    elif key == "apiKeyEnv+headers":
        monkeypatch.setenv(ENV_VAR, PLAIN)
        model["apiKeyEnv"] = ENV_VAR
        model["headers"] = {
            "x-api-key": PLAIN,
            "Cookie": f"session={PLAIN}",
            "x-goog-api-key": CANARY,
        }
    else:  # the key inside the URL's userinfo (a proxy / gateway style URL)
        model["apiKey"] = PLAIN
        model["baseURL"] = server.base_url.replace("http://", f"http://user:{PLAIN}@")
    p: dict[str, Any] = {
        "model": model,
        "prompt": f"hello (do not echo {CANARY[:6]}…)",
        "maxRetries": 1,
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
        "recording": {"mode": "record", "path": str(recording)},
    }
    if op == "generate_object":
        p["schema"] = OBJECT_SCHEMA
    p.update(extra)
    return p


def scan(*blobs: Any) -> None:
    assert_no_canary(*blobs)
    for blob in blobs:
        data = (
            blob
            if isinstance(blob, bytes)
            else (blob.encode() if isinstance(blob, str) else orjson.dumps(blob))
        )
        for canary in CANARIES:
            assert canary not in data, f"canary {canary[:8]!r}… leaked: {data[:400]!r}"


def exception_texts(exc: BaseException) -> list[str]:
    out = []
    cur: BaseException | None = exc
    for _ in range(64):
        if cur is None:
            break
        out += [str(cur), repr(cur), repr(getattr(cur, "payload", None))]
        cur = cur.__cause__
    return out


def run_python(op: str, p: dict[str, Any]) -> list[Any]:
    """The dispatch boundary (bytes) and the public API (decoded exceptions)."""
    seen: list[Any] = []
    raw = orjson.dumps(p)
    if op == "stream_text":
        handle, env = dispatch.stream_json(op, raw)
        if env is not None:
            assert_valid_envelope(env)
            seen.append(env)
        else:
            assert handle is not None
            try:
                for _ in range(1000):
                    event, env = dispatch.stream_next_json(handle)
                    assert env is None
                    if event is None:
                        break
                    doc = orjson.loads(event)
                    if doc["type"] == "error":
                        assert_valid_envelope(doc["error"])
                    seen.append(event)
            finally:
                dispatch.stream_free(handle)
        try:
            for event in aimux_ops.stream(op, p):
                seen.append(event)
        except AimuxError as exc:
            seen += exception_texts(exc)
    else:
        result, env = dispatch.call_json(op, raw)
        if env is not None:
            assert_valid_envelope(env)
        seen += [result or b"", env or b""]
        try:
            seen.append(aimux_ops.call(op, p))
        except AimuxError as exc:
            seen += exception_texts(exc)
    return seen


_lib: Lib | None = None


def run_c(op: str, p: dict[str, Any]) -> list[Any]:
    global _lib
    if _lib is None:
        _lib = Lib()
    seen: list[Any] = []
    try:
        if op == "stream_text":
            for event in _lib.stream_events(op.encode(), orjson.dumps(p), 1000):
                doc = orjson.loads(event)
                if doc["type"] == "error":
                    assert_valid_envelope(doc["error"])
                seen.append(event)
        else:
            seen.append(_lib.call(op.encode(), orjson.dumps(p)))
    except CError as err:
        assert_valid_envelope(err.json)
        seen += [err.message, err.json]
        for _code, message, node in err.chain:
            seen += [message, node]
    return seen


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    ("op", "spec", "extra"), SCENARIOS, ids=[f"{o}-{s}" for o, s, _ in SCENARIOS]
)
def test_no_canary_anywhere(
    server: FaultServer,
    op: str,
    spec: str,
    extra: dict[str, Any],
    key: str,
    provider: str,
    tmp_path: Path,
    logs: Capture,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recording = tmp_path / "secrets.jsonl"
    p = build_params(server, op, spec, extra, key, recording, monkeypatch, provider)
    seen = run_python(op, p) + run_c(op, p)
    assert seen, "nothing came back"
    scan(*seen)
    assert recording.exists(), "record mode wrote no recording"
    lines = recording.read_bytes().splitlines()
    assert len(lines) >= 3  # python boundary + public API + C ABI, one line per call
    for line in lines:
        orjson.loads(line)
    scan(recording.read_bytes())
    scan("\n".join(logs.lines))
    out, err = capfd.readouterr()
    scan(out, err)


def test_the_scan_can_fail(tmp_path: Path) -> None:
    """The scanner itself: a canary in any of the forms above is caught."""
    for blob in (CANARY, PLAIN.encode(), {"a": [PLAIN]}, f"Bearer {CANARY}"):
        with pytest.raises(AssertionError):
            scan(blob)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_echoed_key_reaches_the_core_and_is_scrubbed(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """The echo scenario really carries the key back (so the scan above proves scrubbing, not
    absence): the server's raw answer contains it, the envelope does not."""
    import httpx

    if provider == "openai":
        r = httpx.post(
            server.base_url + "/chat/completions",
            json={"model": "fault:mode=echo", "messages": []},
            headers={"authorization": f"Bearer {PLAIN}"},
        )
    else:
        r = httpx.post(
            server.base_url + "/messages",
            json={"model": "fault:mode=echo", "messages": [], "max_tokens": 1},
            headers={"x-api-key": PLAIN, "anthropic-version": "2023-06-01"},
        )
    assert PLAIN in r.text and PLAIN in r.headers["x-echo-key"]
    p = build_params(
        server,
        "generate_text",
        "mode=echo",
        {},
        "userinfo",
        tmp_path / "r.jsonl",
        monkeypatch,
        provider,
    )
    p["maxRetries"] = 0
    _, env = dispatch.call_json("generate_text", orjson.dumps(p))
    assert env is not None
    doc = assert_valid_envelope(env)
    assert doc["error"]["statusCode"] == 401
    assert "[REDACTED]" in env.decode()
    scan(env)
