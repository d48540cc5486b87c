"""aimux-gateway against the AI SDK (``ai`` with ``@ai-sdk/openai``'s Chat Completions model and
``@ai-sdk/anthropic``, pinned in ``bench/peers``): each provider pointed at the gateway sees a
success, a stream, a 429 with its ``retry-after`` readable, a 529 through the Anthropic ingress,
a cut stream as the stream's error (never a normal finish), a translation to the other
provider, and a missing key (401)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from fault_server import FaultServer
from gateway_proc import CLIENT_KEY, UPSTREAM_KEY, GatewayProc, model
from helpers import ROOT, run_node_json_lines

PEERS = ROOT / "bench" / "peers" / "node_modules"

SCRIPT = r"""
import { readFileSync } from 'node:fs';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
function summary(e) {
  const x = e?.name === 'AI_RetryError' ? e.lastError : e;
  return { name: x?.name ?? null, statusCode: x?.statusCode ?? null,
           isRetryable: x?.isRetryable ?? null,
           retryAfter: x?.responseHeaders?.['retry-after'] ?? null,
           type: x?.data?.error?.type ?? x?.type ?? x?.error?.type ?? null,
           message: String(x?.message ?? JSON.stringify(x) ?? '') };
}
for (const c of cases) {
  const model = c.provider === 'anthropic'
    ? createAnthropic({ baseURL: c.url, apiKey: c.key })(c.model)
    : createOpenAI({ baseURL: c.url, apiKey: c.key }).chat(c.model);
  const out = { name: c.name, text: '', finishReason: null, error: null, parts: [] };
  try {
    if (c.stream) {
      const r = streamText({ model, prompt: 'hi', maxRetries: 0, onError: () => {} });
      for await (const p of r.fullStream) {
        out.parts.push(p.type);
        if (p.type === 'text-delta') out.text += p.text;
        else if (p.type === 'error') { if (!out.error) out.error = summary(p.error); }
        else if (p.type === 'finish') out.finishReason = p.finishReason;
      }
    } else {
      const r = await generateText({ model, prompt: 'hi', maxRetries: 0 });
      out.text = r.text; out.finishReason = r.finishReason;
    }
  } catch (e) { if (!out.error) out.error = summary(e); }
  console.log(JSON.stringify(out));
}
"""


@pytest.fixture(scope="module")
def outcomes(
    server: FaultServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, dict[str, Any]]]:
    if shutil.which("node") is None or not (PEERS / "@ai-sdk" / "anthropic").exists():
        pytest.fail("needs node and the AI SDK peers: run `make peers` (make test does)")
    base = server.base_url
    models = {
        "oa-ok": model("openai", "ok", base),
        "an-ok": model("anthropic", "ok", base),
        "oa-429": model("openai", "fault:mode=status;status=429;retry_after=7", base),
        "an-429": model("anthropic", "fault:mode=status;status=429;retry_after=7", base),
        "an-529": model("anthropic", "fault:mode=status;status=529", base),
        "oa-cut": model("openai", "fault:mode=cut;after=1", base),
        "an-cut": model("anthropic", "fault:mode=cut;after=1", base),
    }
    work = tmp_path_factory.mktemp("gw-aisdk")
    with GatewayProc(work, models) as gw:
        cases: list[dict[str, Any]] = []
        for provider, side in (("openai", "oa"), ("anthropic", "an")):
            other = "an" if side == "oa" else "oa"
            url = gw.url + "/v1"
            for name, target, stream, key in (
                ("ok", f"{side}-ok", False, CLIENT_KEY),
                ("stream", f"{side}-ok", True, CLIENT_KEY),
                ("429", f"{side}-429", False, CLIENT_KEY),
                ("429-stream", f"{side}-429", True, CLIENT_KEY),
                ("529", "an-529", False, CLIENT_KEY),
                ("cut", f"{side}-cut", True, CLIENT_KEY),
                ("translated", f"{other}-ok", False, CLIENT_KEY),
                ("translated-stream", f"{other}-ok", True, CLIENT_KEY),
                ("nokey", f"{side}-ok", False, "not-a-key-at-all"),
            ):
                cases.append(
                    {
                        "name": f"{provider}:{name}",
                        "provider": provider,
                        "url": url,
                        "model": target,
                        "stream": stream,
                        "key": key,
                    }
                )
        (work / "node_modules").symlink_to(PEERS)
        (work / "package.json").write_text('{"type": "module"}')
        (work / "drive.mjs").write_text(SCRIPT)
        (work / "cases.json").write_text(json.dumps(cases))
        lines = run_node_json_lines(
            work, ["drive.mjs", "cases.json"], dict(os.environ), timeout=120
        )
        log = gw.log()
    assert UPSTREAM_KEY not in log and CLIENT_KEY not in log
    yield {line["name"]: line for line in lines}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ai_sdk_success_stream_and_translation(
    outcomes: dict[str, dict[str, Any]], provider: str
) -> None:
    for case in ("ok", "stream", "translated", "translated-stream"):
        got = outcomes[f"{provider}:{case}"]
        assert got["error"] is None, got
        assert got["text"] == "Hello!" and got["finishReason"] == "stop", got


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ai_sdk_429_with_retry_after(outcomes: dict[str, dict[str, Any]], provider: str) -> None:
    for case in ("429", "429-stream"):
        err = outcomes[f"{provider}:{case}"]["error"]
        assert err["name"] == "AI_APICallError", err
        assert err["statusCode"] == 429 and err["isRetryable"] is True
        assert err["retryAfter"] == "7"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ai_sdk_529_through_the_anthropic_ingress(
    outcomes: dict[str, dict[str, Any]], provider: str
) -> None:
    err = outcomes[f"{provider}:529"]["error"]
    if provider == "anthropic":  # the Messages API's own overloaded status and type
        assert err["statusCode"] == 529 and err["type"] == "overloaded_error", err
    else:  # Chat Completions has no 529: its overloaded is 503
        assert err["statusCode"] == 503, err
    assert err["isRetryable"] is True


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ai_sdk_cut_stream_is_an_error_not_a_normal_finish(
    outcomes: dict[str, dict[str, Any]], provider: str
) -> None:
    got = outcomes[f"{provider}:cut"]
    assert got["text"] == "Hel"
    assert got["error"] is not None, got
    assert got["finishReason"] != "stop", got


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_ai_sdk_missing_key_is_401(outcomes: dict[str, dict[str, Any]], provider: str) -> None:
    err = outcomes[f"{provider}:nokey"]["error"]
    assert err["statusCode"] == 401 and err["isRetryable"] is False, err
