"""Parity with the Vercel AI SDK's Anthropic provider (``ai`` + ``@ai-sdk/anthropic`` from
``bench/peers``, run by node) against the fault server's Messages API mode, scenario by scenario:
the request body each side sends, the class, status, retryability and attempt count of every
failure, finish reasons, usage, tool-call validation and ``generate_object``'s answer. Where the
AI SDK loses information (an echoed key in its message, a stream cut before ``message_stop``
reported as a finish) the test shows that aimux-ops does better; each such scenario says why.

Every scenario is counted in ``OUTCOMES`` as ``same``, ``better`` or ``different`` (with its
reason); ``test_parity_counts`` prints the tally.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fault_server import ANTHROPIC_REQUEST_ID, FaultServer, serve
from helpers import AI_SDK_JS_HELPERS, CANARY, ROOT, closed_port, run_node_json_lines

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json
from aimux_ops.wire.envelope import native_chain

PEERS = ROOT / "bench" / "peers" / "node_modules"
NODE = shutil.which("node")
MODEL = "claude-3-haiku-20240307"
KEY = "sk-ant-api03-" + CANARY.removeprefix("sk-")


@pytest.fixture(autouse=True, scope="module")
def _peers_installed() -> None:
    """The comparison is part of the suite: missing peers fail it (``make test`` installs them
    with ``npm ci`` in bench/peers) rather than skip it."""
    if NODE is None or not (PEERS / "@ai-sdk" / "anthropic" / "package.json").exists():
        pytest.fail("needs node and the AI SDK peers: run `make -C bench peers` (make test does)")


SCRIPT = (
    r"""
import { generateText, generateObject, streamText, tool, jsonSchema } from 'ai';
import { createAnthropic, anthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';
const PORT = process.env.PORT;
const KEY = process.env.KEY;
const MODEL = process.env.MODEL;
const scenarios = JSON.parse(process.env.SCENARIOS);
function node(e) {
  return { name: e?.name ?? null, statusCode: e?.statusCode ?? null,
           isRetryable: e?.isRetryable ?? null, type: e?.type ?? null };
}
"""
    + AI_SDK_JS_HELPERS
    + r"""
const tools = { weather: tool({ description: 'w', inputSchema: z.object({ city: z.string() }) }) };
const objectSchema = z.object({ name: z.string(), age: z.number().int() });
for (const s of scenarios) {
  const scenario = 'ai-' + s.name;
  const provider = createAnthropic({
    baseURL: s.url ?? `http://127.0.0.1:${PORT}/v1`, apiKey: KEY,
    headers: { 'x-fault': s.fault ?? 'mode=ok', 'x-scenario': scenario } });
  const ran = Object.fromEntries((s.providerTools ?? []).map(
    ([name, factory, args]) => [name, anthropic.tools[factory](args)]));
  const all = { ...(s.tools ? tools : {}), ...ran };
  const common = { model: provider(s.model ?? MODEL), maxRetries: s.maxRetries ?? 0,
    tools: Object.keys(all).length ? all : undefined, toolChoice: s.toolChoice ?? undefined,
    system: s.system ?? undefined, maxOutputTokens: s.maxOutputTokens ?? undefined,
    temperature: s.temperature ?? undefined,
    ...(s.messages ? { messages: s.messages } : { prompt: 'hi' }) };
  const out = { name: s.name };
  if (s.kind === 'gen' || s.kind === 'obj') {
    try {
      if (s.kind === 'obj') {
        const { tools: _t, toolChoice: _c, ...rest } = common;
        const r = await generateObject({ ...rest,
          schema: s.schema ? jsonSchema(s.schema) : objectSchema });
        out.ok = true; out.object = r.object; out.finishReason = r.finishReason;
      } else {
        const r = await generateText(common);
        out.ok = true; out.text = r.text; out.finishReason = r.finishReason;
        out.usage = { inputTokens: r.usage.inputTokens, outputTokens: r.usage.outputTokens,
                      totalTokens: r.usage.totalTokens };
        out.toolCalls = r.toolCalls.concat(r.staticToolCalls ?? []).length;
        out.invalid = r.content.filter(p => p.type === 'tool-call').map(p => ({
          invalid: p.invalid === true, error: p.error ? chain(p.error).map(c => c.name) : null }));
      }
    } catch (e) {
      out.error = chain(e); out.reason = e.reason ?? null; out.leak = leaks(e);
    }
  } else {
    out.parts = [];
    try {
      const r = streamText({ ...common, onError: () => {} });
      for await (const p of r.fullStream) {
        if (p.type === 'error') out.parts.push({ type: 'error',
          error: p.error instanceof Error ? chain(p.error) : [node(p.error)] });
        else if (p.type === 'finish')
          out.parts.push({ type: 'finish', finishReason: p.finishReason });
        else if (p.type === 'text-delta') out.parts.push({ type: 'text-delta', text: p.text });
        else if (p.type === 'tool-call')
          out.parts.push({ type: 'tool-call', invalid: p.invalid === true });
      }
    } catch (e) { out.thrown = chain(e); }
  }
  out.attempts = await count(scenario);
  console.log(JSON.stringify(out));
}
"""
)

#: the JSON Schemas zod gives the AI SDK's side (so both sides send the same bytes)
TOOL_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
OBJECT_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

# name, fault, maxRetries, extra
GEN: list[tuple[str, str | None, int, dict[str, Any]]] = [
    ("refused", None, 0, {"url": "closed"}),
    ("refused-retry", None, 1, {"url": "closed"}),
    ("reset", "mode=reset", 0, {}),
    ("drop", "mode=drop", 0, {}),
    ("s529-overloaded", "mode=status;status=529;retry_after_ms=1", 2, {}),
    ("s529-then-ok", "mode=status;status=529;times=1;retry_after_ms=1", 2, {}),
    ("s429-retry-after-s", "mode=status;status=429;times=1;retry_after=0", 1, {}),
    ("s500-api-error", "mode=status;status=500;retry_after_ms=1", 1, {}),
    ("s400-invalid-request", "mode=status;status=400", 2, {}),
    ("s401-authentication", "mode=status;status=401", 2, {}),
    ("s413-too-large", "mode=status;status=413", 2, {}),
    ("s502-html", "mode=status;status=502;body=text", 0, {}),
    ("s500-then-400", "statuses=500,400;retry_after_ms=1", 3, {}),
    ("badjson", "mode=badjson", 2, {}),
    ("shape", "mode=shape", 2, {}),
    ("echo", "mode=echo", 0, {}),
    ("text-ok", "mode=ok", 0, {}),
    ("stop-max-tokens", "mode=ok;stop=max_tokens", 0, {}),
    ("stop-refusal", "mode=ok;stop=refusal", 0, {}),
    ("stop-sequence", "mode=ok;stop=stop_sequence", 0, {}),
    ("other-blocks", "mode=blocks", 0, {}),
    ("tool-ok", "mode=tool", 0, {"tools": True}),
    ("tool-unknown", "mode=tool;tool=launch", 0, {"tools": True}),
    ("tool-badschema", 'mode=tool;args={"city":42}', 0, {"tools": True}),
    # the request each side sends for the same call (bodies compared whole)
    (
        "request-body",
        "mode=tool",
        0,
        {"tools": True, "toolChoice": "required", "system": "Be brief.", "temperature": 0.5},
    ),
    (
        "request-tool-choice",
        "mode=tool",
        0,
        {
            "tools": True,
            "toolChoice": {"type": "tool", "toolName": "weather"},
            "maxOutputTokens": 100,
        },
    ),
    # tools the provider runs (web search, web fetch, code execution) beside a function tool:
    # the wire tools, their snake-case args and the beta headers they need
    (
        "request-provider-tools",
        "mode=ok",
        0,
        {
            "tools": True,
            "providerTools": [
                [
                    "web_search",
                    "webSearch_20250305",
                    {"maxUses": 3, "allowedDomains": ["example.com"]},
                    "anthropic.web_search_20250305",
                ],
                ["web_fetch", "webFetch_20250910", {"maxUses": 2}, "anthropic.web_fetch_20250910"],
                [
                    "code_execution",
                    "codeExecution_20250825",
                    {},
                    "anthropic.code_execution_20250825",
                ],
            ],
        },
    ),
    ("request-temperature-clamped", "mode=ok", 0, {"temperature": 1.5}),
    # a model that rejects sampling parameters: both leave temperature out
    ("request-no-sampling", "mode=ok", 0, {"temperature": 0.5, "model": "claude-opus-4-7"}),
    # a model without forced tool use: required becomes auto
    (
        "request-no-forced-choice",
        "mode=tool",
        0,
        {"tools": True, "toolChoice": "required", "model": "claude-sonnet-5-5"},
    ),
    (
        "request-messages",
        "mode=ok",
        0,
        {
            "tools": True,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "toolCalls": [
                        {
                            "toolCallId": "toolu_01",
                            "toolName": "weather",
                            "input": {"city": "Paris"},
                        }
                    ],
                },
                {"role": "tool", "toolCallId": "toolu_01", "content": "sunny"},
            ],
            "nodeMessages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me look."},
                        {
                            "type": "tool-call",
                            "toolCallId": "toolu_01",
                            "toolName": "weather",
                            "input": {"city": "Paris"},
                        },
                    ],
                },
                {
                    "role": "tool",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": "toolu_01",
                            "toolName": "weather",
                            "output": {"type": "text", "value": "sunny"},
                        }
                    ],
                },
            ],
        },
    ),
]
#: the default max_tokens each side sends for a model id (the AI SDK's model table)
MODELS: list[tuple[str, str, int]] = [
    ("max-tokens-claude-3-5-haiku", "claude-3-5-haiku-latest", 4096),
    ("max-tokens-sonnet-4-5", "claude-sonnet-4-5-20250929", 64000),
    ("max-tokens-opus-4-1", "claude-opus-4-1-20250805", 32000),
    ("max-tokens-sonnet-4", "claude-sonnet-4-20250514", 64000),
    ("max-tokens-opus-4-6", "claude-opus-4-6", 128000),
    ("max-tokens-unknown-id", "my-local-model", 4096),
]
OBJ: list[tuple[str, str]] = [
    ("object-ok", "mode=object"),
    ("object-mismatch", 'mode=object;json={"name":"Ada"}'),
    ("object-native-model", "mode=object"),
    ("object-native-open-schema", 'mode=object;json={"name":"Ada","meta":{}}'),
]
#: object scenarios on another model than MODEL
OBJ_MODELS = {
    "object-native-model": "claude-sonnet-4-5-20250929",
    "object-native-open-schema": "claude-sonnet-4-5-20250929",
}
#: object scenarios with another schema than OBJECT_SCHEMA: an open object (``meta``) that
#: native structured outputs would close, so both sides fall back to the JSON tool
OBJ_SCHEMAS = {
    "object-native-open-schema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "meta": {"type": "object"}},
        "required": ["name", "meta"],
    }
}
STREAM: list[tuple[str, str, dict[str, Any]]] = [
    ("st-ok", "mode=ok", {}),
    ("st-other-blocks", "mode=blocks", {}),
    ("st-tool", "mode=tool", {"tools": True}),
    ("st-tool-badjson", "mode=tool;args=badjson", {"tools": True}),
    ("st-errframe-overloaded", "mode=errframe", {}),
    ("st-errframe-invalid", "mode=errframe;etype=invalid_request_error;message=Bad", {}),
    ("st-errframe-rate-limit", "mode=errframe;etype=rate_limit_error;message=Slow down", {}),
    ("st-badchunk", "mode=badchunk", {}),
    ("st-badshape", "mode=badshape", {}),
    ("st-cut", "mode=cut", {}),
    ("st-no-message-stop", "mode=nodone", {}),
    ("st-529-then-ok", "mode=status;status=529;times=1;retry_after_ms=1", {}),
]

#: scenario → "same" | "better: why" | "different: why" (filled by the tests)
OUTCOMES: dict[str, str] = {}


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with serve() as srv:
        yield srv


def _url(spec: str | None, closed: int) -> str | None:
    return f"http://127.0.0.1:{closed}/v1" if spec == "closed" else spec


def _node_messages(extra: dict[str, Any]) -> Any:
    return extra.get("nodeMessages")


@pytest.fixture(scope="module")
def ai_sdk(server: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario run through the AI SDK once: name → what it reported (and the request
    body it sent)."""
    work = tmp_path_factory.mktemp("aisdk-anthropic")
    (work / "node_modules").symlink_to(PEERS)
    (work / "package.json").write_text('{"type": "module"}')
    (work / "parity.mjs").write_text(SCRIPT)
    closed = closed_port()
    scenarios: list[dict[str, Any]] = []
    for n, f, r, x in GEN:
        scenarios.append(
            {
                "name": n,
                "kind": "gen",
                "fault": f,
                "maxRetries": r,
                "url": _url(x.get("url"), closed),
                "tools": x.get("tools", False),
                "toolChoice": x.get("toolChoice"),
                "system": x.get("system"),
                "temperature": x.get("temperature"),
                "maxOutputTokens": x.get("maxOutputTokens"),
                "messages": _node_messages(x),
                "model": x.get("model"),
                "providerTools": x.get("providerTools"),
            }
        )
    scenarios += [{"name": n, "kind": "gen", "fault": "mode=ok", "model": m} for n, m, _ in MODELS]
    scenarios += [
        {
            "name": n,
            "kind": "obj",
            "fault": f,
            "model": OBJ_MODELS.get(n),
            "schema": OBJ_SCHEMAS.get(n),
        }
        for n, f in OBJ
    ]
    scenarios += [
        {"name": n, "kind": "stream", "fault": f, "maxRetries": 1, "tools": x.get("tools", False)}
        for n, f, x in STREAM
    ]
    env = {
        **os.environ,
        "PORT": str(server.port),
        "KEY": KEY,
        "MODEL": MODEL,
        "SCENARIOS": json.dumps(scenarios),
    }
    assert NODE is not None
    items = run_node_json_lines(work, ["parity.mjs"], env, timeout=120)
    out = {item["name"]: item for item in items}
    for body, headers in zip(server.bodies, server.headers, strict=True):
        name = headers.get("x-scenario", "")
        if name.startswith("ai-") and name[3:] in out:
            out[name[3:]].setdefault("body", body)
            out[name[3:]].setdefault("headers", headers)
    return out


def _params(
    server: FaultServer,
    name: str,
    fault: str | None,
    retries: int,
    extra: dict[str, Any],
    closed: int,
) -> dict[str, Any]:
    headers = {"x-fault": fault or "mode=ok", "x-scenario": "ax-" + name}
    p: dict[str, Any] = {
        "model": {
            "provider": "anthropic",
            "modelId": MODEL,
            "baseURL": _url(extra.get("url"), closed) or server.base_url,
            "apiKey": KEY,
            "headers": headers,
        },
        "maxRetries": retries,
        "retry": {"initialDelayMs": 2000},
    }
    if extra.get("messages"):
        p["messages"] = extra["messages"]
    else:
        p["prompt"] = "hi"
    if retries and extra.get("url") == "closed":
        p["retry"] = {"initialDelayMs": 50}  # no retry-after to honour: keep the test short
    if extra.get("tools"):
        p["tools"] = {"weather": {"description": "w", "inputSchema": TOOL_SCHEMA}}
    for name, _factory, args, tool_id in extra.get("providerTools") or ():
        p.setdefault("tools", {})[name] = {"type": "provider", "id": tool_id, "args": args}
    if extra.get("model"):
        p["model"]["modelId"] = extra["model"]
    for key in ("toolChoice", "system", "temperature", "maxOutputTokens"):
        if extra.get(key) is not None:
            p[key] = extra[key]
    return p


def _ours_body(server: FaultServer, name: str) -> tuple[dict[str, Any], dict[str, str]]:
    for body, headers in zip(server.bodies, server.headers, strict=True):
        if headers.get("x-scenario") == "ax-" + name:
            return body, headers
    raise AssertionError(f"no request of ours for {name}")


def _summary(env: dict[str, Any]) -> tuple[str, int | None, bool | None]:
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


def _names(env: dict[str, Any]) -> list[str]:
    return [n["error"]["name"] if "kind" in n else "source" for n in native_chain(env)]


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
    closed = closed_port()
    result, env_raw = call_json(
        "generate_text", orjson.dumps(_params(server, name, fault, retries, extra, closed))
    )
    assert KEY.encode() not in (result or env_raw or b"")
    env = orjson.loads(env_raw) if env_raw else None
    assert server.count("ax-" + name) == theirs["attempts"], (name, theirs)
    outcome = "same"
    if "error" in theirs:
        assert env is not None, (name, result)
        assert _summary(env) == _their_summary(theirs["error"]), (name, env, theirs)
        if theirs["reason"] is not None:
            assert env["error"]["reason"] == theirs["reason"]
        assert len(native_chain(env)) >= len(theirs["error"]), (name, env, theirs)
        if name == "echo":
            # the AI SDK puts the echoed key in its message; ours is scrubbed
            assert theirs["leak"] is True
            outcome = "better: the echoed x-api-key stays out of the error"
        if name[:2] in ("s4", "s5") and fault and "body=" not in fault and "statuses" not in fault:
            root = (
                env["error"]
                if env["error"]["name"] != "AI_RetryError"
                else env["error"]["errors"][-1]["error"]
            )
            # the provider's error type and the diagnostics headers are kept
            assert root["data"]["error"]["type"], root
            assert root["responseHeaders"]["request-id"] == ANTHROPIC_REQUEST_ID
            assert "anthropic-ratelimit-requests-remaining" in root["responseHeaders"]
    else:
        assert env is None and result is not None, (name, env)
        mine = orjson.loads(result)
        assert mine["finishReason"] == theirs["finishReason"], (mine, theirs)
        assert mine["text"] == theirs["text"]
        assert mine["usage"] == theirs["usage"], (mine["usage"], theirs["usage"])
        if name == "other-blocks":
            # the server tool's call: run by the provider; the AI SDK reports it, not declared as
            # a provider tool in this call, as an invalid call
            assert [(c["toolName"], c.get("providerExecuted")) for c in mine["toolCalls"]] == [
                ("web_search", True)
            ]
            assert "invalid" not in mine["toolCalls"][0]
            assert theirs["invalid"] == [{"invalid": True, "error": ["AI_NoSuchToolError"]}]
            OUTCOMES[name] = (
                "different: a server tool call (web_search) is reported as run by the provider "
                "(providerExecuted), not as an invalid call of an undeclared tool"
            )
            return
        ours_invalid = [
            {
                "invalid": c.get("invalid", False),
                "error": _names(c["error"]) if "error" in c else None,
            }
            for c in mine["toolCalls"]
        ]
        assert [c["invalid"] for c in ours_invalid] == [c["invalid"] for c in theirs["invalid"]]
        for m, t in zip(ours_invalid, theirs["invalid"], strict=True):
            if t["error"]:
                assert m["error"] is not None
                assert [n for n in m["error"] if n != "source"] == [
                    n for n in t["error"] if n.startswith("AI_")
                ]
                assert len(m["error"]) >= len(t["error"])
        if name.startswith("request-"):
            ours_body, ours_headers = _ours_body(server, name)
            assert ours_body == theirs["body"], (ours_body, theirs["body"])
            assert ours_headers["anthropic-version"] == theirs["headers"]["anthropic-version"]
            if name == "request-provider-tools":  # the betas the provider tools need, as a set

                def betas(h: dict[str, str]) -> set[str]:
                    return set(h.get("anthropic-beta", "").split(","))

                assert (
                    betas(ours_headers)
                    == betas(theirs["headers"])
                    == {
                        "web-fetch-2025-09-10",
                        "code-execution-2025-08-25",
                    }
                )
            assert ours_headers["x-api-key"] == theirs["headers"]["x-api-key"] == KEY
    OUTCOMES[name] = outcome


@pytest.mark.parametrize(("name", "fault"), OBJ, ids=[o[0] for o in OBJ])
def test_generate_object_matches_the_ai_sdk(
    server: FaultServer, ai_sdk: dict[str, Any], name: str, fault: str
) -> None:
    theirs = ai_sdk[name]
    p = _params(server, name, fault, 0, {}, closed_port())
    p["model"]["modelId"] = OBJ_MODELS.get(name, MODEL)
    p["schema"] = OBJ_SCHEMAS.get(name, OBJECT_SCHEMA)
    result, env_raw = call_json("generate_object", orjson.dumps(p))
    ours_body, _ = _ours_body(server, name)
    outcome = "same"
    # the same request: the forced JSON tool, or on a model with native structured outputs
    # output_config.format with the sanitized schema (constraints moved to descriptions)
    assert ours_body == theirs["body"], (ours_body, theirs["body"])
    if name in OBJ_SCHEMAS:
        assert "output_config" not in ours_body and ours_body["tools"][-1]["name"] == "json"
    elif name in OBJ_MODELS:
        assert ours_body["output_config"]["format"]["type"] == "json_schema"
        assert "tools" not in ours_body
    if theirs.get("ok"):
        assert result is not None, env_raw
        mine = orjson.loads(result)
        assert mine["object"] == theirs["object"]
        assert mine["finishReason"] == theirs["finishReason"] == "stop"
    else:
        env = orjson.loads(env_raw or b"null")
        assert _names(env)[:2] == ["AI_NoObjectGeneratedError", "AI_TypeValidationError"]
        assert theirs["error"][0]["name"] == "AI_NoObjectGeneratedError"
        assert len(native_chain(env)) >= len(theirs["error"])
    OUTCOMES[name] = outcome


@pytest.mark.parametrize(("name", "model", "max_tokens"), MODELS, ids=[m[0] for m in MODELS])
def test_default_max_tokens_matches_the_ai_sdk(
    server: FaultServer, ai_sdk: dict[str, Any], name: str, model: str, max_tokens: int
) -> None:
    p = _params(server, name, "mode=ok", 0, {}, 0)
    p["model"]["modelId"] = model
    result, env_raw = call_json("generate_text", orjson.dumps(p))
    assert env_raw is None and result is not None
    ours_body, _ = _ours_body(server, name)
    assert ours_body["max_tokens"] == ai_sdk[name]["body"]["max_tokens"] == max_tokens
    assert ours_body == ai_sdk[name]["body"]
    OUTCOMES[name] = "same"


def _stream(
    server: FaultServer, name: str, fault: str, extra: dict[str, Any]
) -> list[dict[str, Any]]:
    p = _params(server, name, fault, 1, extra, 0)
    handle, env = stream_json("stream_text", orjson.dumps(p))
    assert handle is not None, env
    events: list[dict[str, Any]] = []
    try:
        while True:
            event, err = stream_next_json(handle)
            assert err is None
            if event is None:
                return events
            assert KEY.encode() not in event
            events.append(orjson.loads(event))
    finally:
        stream_free(handle)


@pytest.mark.parametrize(("name", "fault", "extra"), STREAM, ids=[s[0] for s in STREAM])
def test_stream_text_matches_the_ai_sdk(
    server: FaultServer, ai_sdk: dict[str, Any], name: str, fault: str, extra: dict[str, Any]
) -> None:
    theirs = ai_sdk[name]
    events = _stream(server, name, fault, extra)
    assert server.count("ax-" + name) == theirs["attempts"], (name, theirs)
    kinds = [e["type"] for e in events]
    their_parts = theirs["parts"]
    their_kinds = [p["type"] for p in their_parts]
    outcome = "same"
    if "error" not in kinds:
        assert their_kinds[-1] == "finish" and kinds[-1] == "finish"
        assert events[-1]["finishReason"] == their_parts[-1]["finishReason"]
        assert "".join(e["text"] for e in events if e["type"] == "text-delta") == "".join(
            p["text"] for p in their_parts if p["type"] == "text-delta"
        )
        if name == "st-other-blocks":
            ran = [e for e in events if e["type"] == "tool-call"]
            assert [(e["toolName"], e.get("providerExecuted")) for e in ran] == [
                ("web_search", True)
            ]
            assert their_parts[0] == {"type": "tool-call", "invalid": True}
            OUTCOMES[name] = (
                "different: a server tool call (web_search) is reported as run by the provider "
                "(providerExecuted), not as an invalid call of an undeclared tool"
            )
            return
        assert [e.get("invalid", False) for e in events if e["type"] == "tool-call"] == [
            p["invalid"] for p in their_parts if p["type"] == "tool-call"
        ]
        OUTCOMES[name] = outcome
        return
    # ours: exactly one terminal error event carrying the numeric status, never a finish
    assert kinds.count("error") == 1 and kinds[-1] == "error" and "finish" not in kinds
    env = events[-1]["error"]
    assert isinstance(env["error"]["statusCode"], int)
    if name.startswith("st-errframe"):
        err = next(p for p in their_parts if p["type"] == "error")["error"][0]
        assert (env["error"]["statusCode"], env["error"]["isRetryable"]) == (
            err["statusCode"],
            err["isRetryable"],
        )
        assert env["error"]["data"]["error"]["type"] == err["type"]
        outcome = (
            "different: theirs is a plain object (not an Error); ours an AI_APICallError"
            " with the same status, type and retryability"
        )
    elif name == "st-no-message-stop":
        # the AI SDK reports a stream cut before message_stop as a finish
        assert "error" not in their_kinds and their_kinds[-1] == "finish"
        assert their_parts[-1]["finishReason"] != "stop"
        outcome = "better: a stream without message_stop is an error, not a finish"
    elif name in ("st-badchunk", "st-badshape"):
        err = next(p for p in their_parts if p["type"] == "error")["error"]
        assert err[0]["statusCode"] is None
        assert _names(env)[1] == err[0]["name"]
        outcome = "better: the error carries the stream's status (CONTRACT §1)"
    elif name == "st-cut":
        assert "error" not in their_kinds or theirs.get("thrown")
        assert len(native_chain(env)) >= len(theirs.get("thrown") or [])
        outcome = "better: an error event with the OS cause instead of a throw"
    else:
        raise AssertionError(f"unexpected error in {name}: {env}")
    OUTCOMES[name] = outcome


def test_parity_counts() -> None:
    """Runs last in this module: every scenario got a verdict; prints the tally."""
    expected = len(GEN) + len(MODELS) + len(OBJ) + len(STREAM)
    assert len(OUTCOMES) == expected, sorted(
        set(
            [g[0] for g in GEN]
            + [m[0] for m in MODELS]
            + [o[0] for o in OBJ]
            + [s[0] for s in STREAM]
        )
        - set(OUTCOMES)
    )
    tally = {"same": 0, "better": 0, "different": 0}
    for verdict in OUTCOMES.values():
        tally[verdict.split(":")[0]] += 1
    print(f"\nanthropic parity: {expected} scenarios, {tally}")
    for name, verdict in sorted(OUTCOMES.items()):
        if verdict != "same":
            print(f"  {name}: {verdict}")
    assert tally["same"] + tally["better"] + tally["different"] == expected
