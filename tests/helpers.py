"""Shared test helpers: schema validation of every envelope, the canary scan, the vectors, a
closed port and the AI SDK driver run.

No ``aimux_ops`` import here: ``fuzz/common.py`` imports this module before its harnesses import
``aimux_ops`` under atheris instrumentation (the checked op calls are in ``op_calls``)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import orjson
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schema"
VECTORS_DIR = ROOT / "contract-tests" / "vectors"


@lru_cache(maxsize=1)
def _registry() -> Registry:
    resources = []
    for path in SCHEMA_DIR.rglob("*.schema.json"):
        doc = json.loads(path.read_text())
        resources.append((str(path.relative_to(SCHEMA_DIR)), Resource.from_contents(doc)))
    return Registry().with_resources(resources)


@cache
def validator(rel: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / rel).read_text())
    return jsonschema.Draft202012Validator(schema, registry=_registry())


@lru_cache(maxsize=1)
def _payload_schemas() -> dict[tuple[str, str], str]:
    out = {}
    for path in (SCHEMA_DIR / "errors").rglob("*.schema.json"):
        doc = json.loads(path.read_text())
        out[(doc["x-aimux"]["kind"], doc["properties"]["name"]["const"])] = str(
            path.relative_to(SCHEMA_DIR)
        )
    return out


def _nodes(node: Any) -> list[dict[str, Any]]:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        out.append(n)
        if isinstance(n.get("cause"), dict):
            stack.append(n["cause"])
        err = n.get("error")
        if isinstance(err, dict) and isinstance(err.get("errors"), list):
            stack.extend(err["errors"])
    return out


def assert_valid_envelope(envelope: bytes | str | dict[str, Any]) -> dict[str, Any]:
    """Validate against schema/envelope.schema.json, each known payload against its own schema,
    and the byte bounds of CONTRACT §1. Returns the parsed envelope."""
    raw = envelope if isinstance(envelope, (bytes, str)) else orjson.dumps(envelope)
    if isinstance(raw, str):
        raw = raw.encode()
    assert len(raw) <= 1024 * 1024, f"envelope is {len(raw)} bytes"
    doc = orjson.loads(raw)
    validator("envelope.schema.json").validate(doc)
    payloads = _payload_schemas()
    depth_ok = True
    for node in _nodes(doc):
        assert len(node["message"].encode()) <= 1024, "message over 1 KiB"
        if "kind" in node:
            rel = payloads.get((node["kind"], node["error"]["name"]))
            if rel is not None:
                validator(rel).validate(node["error"])
            for key in ("value", "responseBody", "data"):
                if key in node["error"]:
                    assert len(orjson.dumps(node["error"][key])) <= 16 * 1024 + 64, key

    # at most 16 nodes deep along any cause path
    def depth(n: dict[str, Any]) -> int:
        c = n.get("cause")
        return 1 + (depth(c) if isinstance(c, dict) else 0)

    depth_ok = depth(doc) <= 16
    assert depth_ok, "chain deeper than 16"
    return doc  # type: ignore[no-any-return]


def load_vectors() -> list[tuple[str, dict[str, Any]]]:
    return [
        (p.name, json.loads(p.read_text(encoding="utf-8")))
        for p in sorted(VECTORS_DIR.glob("*.json"))
    ]


CANARY = "sk-canary-7f3a9c1e5b2d4f60a8e1"


def without_headers(value: Any) -> Any:
    """A result or event (or a list of them) without ``response.headers``: the provider
    response's own headers (its date, its encoding) differ between two answers alike."""
    if isinstance(value, list):
        return [without_headers(v) for v in value]
    if isinstance(value, dict) and isinstance(value.get("response"), dict):
        response = {k: v for k, v in value["response"].items() if k != "headers"}
        return {**value, "response": response}
    return value


def assert_no_canary(*blobs: bytes | str | Any) -> None:
    """No byte of any blob contains the canary key (or its Bearer form)."""
    for blob in blobs:
        data = (
            blob
            if isinstance(blob, bytes)
            else (blob.encode() if isinstance(blob, str) else orjson.dumps(blob))
        )
        assert CANARY.encode() not in data, f"canary key leaked: {data[:300]!r}"


def provider_params(
    server: Any, fault: str | None = None, *, scenario: str | None = None, **extra: Any
) -> dict[str, Any]:
    """generate/stream params against the fault server: the fault in ``x-fault``, the scenario
    in ``x-scenario``, the canary as the API key, 1 ms retry delays."""
    headers = {}
    if fault is not None:
        headers["x-fault"] = fault
    if scenario is not None:
        headers["x-scenario"] = scenario
    p: dict[str, Any] = {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": server.base_url,
            "apiKey": CANARY,
            "headers": headers,
        },
        "prompt": "Say hello in one word.",
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
    }
    p.update(extra)
    return p


#: The AI SDK side of a parity driver script: ``count(scenario)`` (the fault server's attempts),
#: ``chain(e)`` (the error and its causes, each as the script's own ``node(e)``, a RetryError
#: followed through ``lastError``) and ``leaks(e)`` (whether ``KEY`` shows in any message or
#: response body). The script defines ``PORT``, ``KEY`` and ``node``.
AI_SDK_JS_HELPERS = r"""
async function count(s) {
  const r = await fetch(`http://127.0.0.1:${PORT}/__counts`); return (await r.json())[s] ?? 0;
}
function chain(e) {
  const out = []; let cur = e;
  while (cur && out.length < 32) {
    out.push(node(cur));
    cur = cur.cause ?? (cur.name === 'AI_RetryError' ? cur.lastError : undefined);
  }
  return out;
}
function leaks(e) {
  let text = '';
  for (let cur = e, i = 0; cur && i < 32; i++) {
    text += String(cur.message) + String(cur.responseBody ?? '');
    cur = cur.cause ?? (cur.name === 'AI_RetryError' ? cur.lastError : undefined);
  }
  return text.includes(KEY);
}
"""


def run_node_json_lines(
    work: Path, args: list[str], env: dict[str, str], *, timeout: float
) -> list[dict[str, Any]]:
    """Run ``node args`` in ``work`` (a driver script the test wrote); it must exit 0.

    Returns the JSON object of each line it printed (the AI SDK side of a parity test).
    """
    node = shutil.which("node")
    assert node is not None
    proc = subprocess.run(
        [node, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def demo_replay_params() -> dict[str, Any]:
    """Fresh params that replay the shipped demo recording (the demo's call: no network)."""
    return {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": "http://127.0.0.1:1/v1",
        },
        "prompt": "Say hello in one word.",
        "recording": {"mode": "replay", "path": str(ROOT / "recordings" / "demo.jsonl")},
    }


#: ``providerMetadata`` of the fault server's Anthropic "Hello!" answer (``mode=ok``): its raw
#: usage, the cache writes and the stop sequence, as the AI SDK reports them
ANTHROPIC_HELLO_METADATA = {
    "anthropic": {
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 2,
            "service_tier": "standard",
        },
        "cacheCreationInputTokens": 0,
        "stopSequence": None,
    }
}
