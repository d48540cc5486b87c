"""Parity with the Vercel AI SDK (``ai`` + ``@ai-sdk/openai`` from ``bench/peers``, run by node)
against the same fault server, fault by fault: the class, status, retryability and attempt count
must match, and our cause chain must go at least as deep. Where the AI SDK loses information
(an echoed key in the message, a stream that ends without ``[DONE]`` reported as a finish, an
error frame or a bad chunk without the stream's status) the test shows that aimux-ops does better.

Skipped when node or ``bench/peers/node_modules`` is missing (``make -C bench setup`` installs
the pinned peers).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fault_server import FaultServer, serve
from helpers import AI_SDK_JS_HELPERS, CANARY, ROOT, closed_port, run_node_json_lines

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.wire.envelope import native_chain

PEERS = ROOT / "bench" / "peers" / "node_modules"
NODE = shutil.which("node")


@pytest.fixture(autouse=True, scope="module")
def _peers_installed() -> None:
    """The comparison is part of the suite: missing peers fail it (``make test`` installs them
    with ``npm ci`` in bench/peers) rather than skip it."""
    if (
        NODE is None
        or not (PEERS / "ai" / "package.json").exists()
        or not (PEERS / "@ai-sdk" / "openai" / "package.json").exists()
    ):
        pytest.fail("needs node and the AI SDK peers: run `make -C bench peers` (make test does)")


SCRIPT = (
    r"""
import { generateText, streamText, tool, jsonSchema } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
const PORT = process.env.PORT;
const KEY = process.env.KEY;
const scenarios = JSON.parse(process.env.SCENARIOS);
function node(e) {
  return { name: e.name ?? null, statusCode: e.statusCode ?? null,
           isRetryable: e.isRetryable ?? null };
}
"""
    + AI_SDK_JS_HELPERS
    + r"""
const tools = { weather: tool({ description: 'w', inputSchema: z.object({ city: z.string() }) }) };
for (const s of scenarios) {
  const scenario = 'ai-' + s.name;
  const provider = createOpenAI({
    baseURL: s.url ?? `http://127.0.0.1:${PORT}/v1`, apiKey: KEY,
    headers: { 'x-fault': s.fault ?? 'mode=ok', 'x-scenario': scenario } });
  const common = { model: provider.chat('gpt-4o-mini'), prompt: 'hi',
    maxRetries: s.maxRetries ?? 0, tools: s.tools ? tools : undefined,
    abortSignal: s.timeoutMs ? AbortSignal.timeout(s.timeoutMs) : undefined };
  const out = { name: s.name };
  if (s.kind === 'gen') {
    try {
      const r = await generateText(common);
      out.ok = true;
      out.toolCalls = r.toolCalls.concat(r.staticToolCalls ?? []).length;
      out.invalid = r.content.filter(p => p.type === 'tool-call').map(p => ({
        invalid: p.invalid === true, error: p.error ? chain(p.error).map(c => c.name) : null }));
    } catch (e) {
      out.error = chain(e); out.reason = e.reason ?? null; out.leak = leaks(e);
    }
  } else {
    out.parts = [];
    try {
      const r = streamText({ ...common, onError: () => {} });
      for await (const p of r.fullStream) {
        if (p.type === 'error') out.parts.push({ type: 'error',
          error: p.error instanceof Error ? chain(p.error) : [{ name: typeof p.error }] });
        else if (p.type === 'finish')
          out.parts.push({ type: 'finish', finishReason: p.finishReason });
        else if (p.type === 'text-delta') out.parts.push({ type: 'text-delta' });
      }
    } catch (e) { out.thrown = chain(e); }
  }
  out.attempts = await count(scenario);
  console.log(JSON.stringify(out));
}
"""
)


GEN: list[tuple[str, str | None, int, dict[str, Any]]] = [
    # name, fault, maxRetries, extra
    ("refused", None, 0, {"url": "closed"}),
    ("refused-retry", None, 1, {"url": "closed"}),
    ("dns", None, 0, {"url": "http://no-such-host.invalid/v1"}),
    ("tls", None, 0, {"url": "tls"}),
    ("reset", "mode=reset", 0, {}),
    ("drop", "mode=drop", 0, {}),
    ("s500", "mode=status;status=500;retry_after_ms=1", 2, {}),
    ("s400", "mode=status;status=400", 2, {}),
    ("s429-then-ok", "mode=status;status=429;times=1;retry_after_ms=1", 2, {}),
    ("s502-html", "mode=status;status=502;body=text", 0, {}),
    ("s500-then-400", "statuses=500,400;retry_after_ms=1", 3, {}),
    ("badjson", "mode=badjson", 2, {}),
    ("shape", "mode=shape", 2, {}),
    ("echo", "mode=echo", 0, {}),
    ("tool-badjson", "mode=tool;args=badjson", 0, {"tools": True}),
    ("tool-unknown", "mode=tool;tool=launch", 0, {"tools": True}),
    ("tool-badschema", 'mode=tool;args={"city":42}', 0, {"tools": True}),
]
STREAM = [
    ("st-errframe", "mode=errframe"),
    ("st-badchunk", "mode=badchunk"),
    ("st-cut", "mode=cut"),
    ("st-nodone", "mode=nodone"),
    ("st-503-then-ok", "mode=status;status=503;times=1;retry_after_ms=1"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with serve() as srv:
        yield srv


def _url(server: FaultServer, spec: str | None, closed: int) -> str | None:
    if spec == "closed":
        return f"http://127.0.0.1:{closed}/v1"
    if spec == "tls":
        return f"https://127.0.0.1:{server.port}/v1"
    return spec


@pytest.fixture(scope="module")
def ai_sdk(server: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario run through the AI SDK once: name → what it reported."""
    work = tmp_path_factory.mktemp("aisdk")
    (work / "node_modules").symlink_to(PEERS)
    (work / "package.json").write_text('{"type": "module"}')
    (work / "parity.mjs").write_text(SCRIPT)
    closed = closed_port()
    scenarios = [
        {
            "name": n,
            "kind": "gen",
            "fault": f,
            "maxRetries": r,
            "url": _url(server, x.get("url"), closed),
            "tools": x.get("tools", False),
        }
        for n, f, r, x in GEN
    ] + [{"name": n, "kind": "stream", "fault": f, "maxRetries": 1} for n, f in STREAM]
    env = {
        **os.environ,
        "PORT": str(server.port),
        "KEY": CANARY,
        "SCENARIOS": json.dumps(scenarios),
    }
    assert NODE is not None
    items = run_node_json_lines(work, ["parity.mjs"], env, timeout=90)
    out = {item["name"]: item for item in items}
    return out


def ours(
    server: FaultServer,
    name: str,
    fault: str | None,
    retries: int,
    extra: dict[str, Any],
    closed: int,
) -> tuple[dict[str, Any] | None, Any]:
    headers = {"x-fault": fault or "mode=ok", "x-scenario": "ax-" + name}
    p: dict[str, Any] = {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": _url(server, extra.get("url"), closed) or server.base_url,
            "apiKey": CANARY,
            "headers": headers,
        },
        "prompt": "hi",
        "maxRetries": retries,
        "retry": {"initialDelayMs": 2000},
    }
    if retries and extra.get("url") == "closed":
        p["retry"] = {"initialDelayMs": 50}  # no retry-after to honour: keep the test short
    if extra.get("tools"):
        p["tools"] = {
            "weather": {
                "description": "w",
                "inputSchema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
            }
        }
    result, env = call_json("generate_text", orjson.dumps(p))
    assert CANARY.encode() not in (result or env or b"")
    return (orjson.loads(env) if env else None), (orjson.loads(result) if result else None)


def _summary(env: dict[str, Any]) -> tuple[str, int | None, bool | None]:
    """(class, status, isRetryable) as the AI SDK reports them: a RetryError's status and
    retryability are its last attempt's."""
    err = env["error"]
    if err["name"] == "AI_RetryError":
        last = err["errors"][-1]["error"]
        return err["name"], last.get("statusCode"), last.get("isRetryable")
    return err["name"], err.get("statusCode"), err.get("isRetryable")


def _their_summary(chain: list[dict[str, Any]]) -> tuple[str, int | None, bool | None]:
    root = chain[0]
    if root["name"] == "AI_RetryError":
        return root["name"], chain[1]["statusCode"], chain[1]["isRetryable"]
    return root["name"], root["statusCode"], root["isRetryable"]


@pytest.mark.parametrize(("name", "fault", "retries", "extra"), GEN, ids=[g[0] for g in GEN])
def test_generate_text_matches_the_ai_sdk(
    server: FaultServer,
    ai_sdk: dict[str, Any],
    name: str,
    fault: str | None,
    retries: int,
    extra: dict[str, Any],
) -> None:
    theirs = ai_sdk[name]
    env, result = ours(server, name, fault, retries, extra, closed_port())
    assert server.count("ax-" + name) == theirs["attempts"], (name, theirs)
    if "error" in theirs:
        assert env is not None, (name, result)
        assert _summary(env) == _their_summary(theirs["error"]), (name, env, theirs)
        if theirs["reason"] is not None:
            assert env["error"]["reason"] == theirs["reason"]
        assert len(native_chain(env)) >= len(theirs["error"]), (name, env, theirs)
        if name == "echo":
            assert theirs["leak"] is True  # the AI SDK puts the echoed key in its message
    else:
        assert env is None and result is not None, (name, env)
        ours_invalid = [
            {
                "invalid": c.get("invalid", False),
                "error": [
                    n["error"]["name"] if "kind" in n else "source"
                    for n in native_chain(c["error"])
                ]
                if "error" in c
                else None,
            }
            for c in result["toolCalls"]
        ]
        assert [c["invalid"] for c in ours_invalid] == [c["invalid"] for c in theirs["invalid"]]
        for mine, their in zip(ours_invalid, theirs["invalid"], strict=True):
            if their["error"]:
                assert mine["error"] is not None
                # same aimux classes, and at least as deep
                assert [n for n in mine["error"] if n != "source"] == [
                    n for n in their["error"] if n.startswith("AI_")
                ]
                assert len(mine["error"]) >= len(their["error"])


def _stream(server: FaultServer, name: str, fault: str) -> tuple[list[dict[str, Any]], Any]:
    p = {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": server.base_url,
            "apiKey": CANARY,
            "headers": {"x-fault": fault, "x-scenario": "ax-" + name},
        },
        "prompt": "hi",
        "maxRetries": 1,
    }
    handle, env = stream_json("stream_text", orjson.dumps(p))
    if handle is None:
        return [], orjson.loads(env or b"null")
    events: list[dict[str, Any]] = []
    try:
        while True:
            event, err = stream_next_json(handle)
            assert err is None
            if event is None:
                return events, None
            events.append(orjson.loads(event))
    finally:
        stream_free(handle)


@pytest.mark.parametrize(("name", "fault"), STREAM, ids=[s[0] for s in STREAM])
def test_stream_text_against_the_ai_sdk(
    server: FaultServer, ai_sdk: dict[str, Any], name: str, fault: str
) -> None:
    theirs = ai_sdk[name]
    events, open_error = _stream(server, name, fault)
    assert open_error is None
    assert server.count("ax-" + name) == theirs["attempts"], (name, theirs)
    kinds = [e["type"] for e in events]
    if name == "st-503-then-ok":
        assert kinds[-1] == "finish" and theirs["parts"][-1]["type"] == "finish"
        return
    # ours: exactly one terminal error event carrying the numeric status, never a finish
    assert kinds.count("error") == 1 and kinds[-1] == "error" and "finish" not in kinds
    env = events[-1]["error"]
    assert isinstance(env["error"]["statusCode"], int)
    their_kinds = [p["type"] for p in theirs["parts"]]
    if name == "st-nodone":
        # the AI SDK reports a stream cut before [DONE] as a finish
        assert "error" not in their_kinds and their_kinds[-1] == "finish"
    elif name == "st-badchunk":
        # the AI SDK's error part is a bare JSONParseError, without the stream's status
        err = next(p for p in theirs["parts"] if p["type"] == "error")["error"]
        assert err[0]["statusCode"] is None
        assert [n["error"]["name"] if "kind" in n else "source" for n in native_chain(env)][
            1
        ] == err[0]["name"]
    elif name == "st-cut":
        # the AI SDK throws out of the stream instead of delivering an error part
        assert "error" not in their_kinds or theirs.get("thrown")
        assert len(native_chain(env)) >= len(theirs.get("thrown") or [])
    elif name == "st-errframe":
        err = next(p for p in theirs["parts"] if p["type"] == "error")["error"][0]
        assert env["error"]["isRetryable"] == err["isRetryable"]
