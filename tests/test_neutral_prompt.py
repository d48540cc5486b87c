"""The provider-neutral prompt (CONTRACT §2.1) against the real AI SDK (``ai`` with
``@ai-sdk/openai`` and ``@ai-sdk/anthropic`` from ``bench/peers``): the same messages — text,
images (base64 and URL), a PDF, plain text, audio, reasoning with its signature, a tool round
trip with every output type — sent by each side to the scripted server, for both providers;
what the server received (the request body's prompt, and the beta header) and the warnings each
side reports are compared. A case either side refuses must be refused by both, with the same
error class. Where aimux-ops chooses differently the case says why (``DIFFERS``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import ROOT, run_node_json_lines
from scenario_server import ScenarioServer, json_reply

import aimux_ops
from aimux_ops.errors import AimuxError

PEERS = ROOT / "bench" / "peers" / "node_modules"
PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")
).decode()
PDF = base64.b64encode(b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n").decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
TXT = base64.b64encode(b"Plain notes: buy milk.").decode()

ROUND_TRIP = [
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool-call",
                "toolCallId": "c1",
                "toolName": "weather",
                "input": {"city": "Paris"},
            },
            {
                "type": "tool-call",
                "toolCallId": "c2",
                "toolName": "weather",
                "input": {"city": "Oslo"},
            },
            {
                "type": "tool-call",
                "toolCallId": "c3",
                "toolName": "weather",
                "input": {"city": "Rome"},
            },
            {
                "type": "tool-call",
                "toolCallId": "c4",
                "toolName": "weather",
                "input": {"city": "Nice"},
            },
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "toolName": "weather",
                "output": {"type": "json", "value": {"celsius": 21}},
            },
            {
                "type": "tool-result",
                "toolCallId": "c2",
                "toolName": "weather",
                "output": {"type": "text", "value": "cold"},
            },
            {
                "type": "tool-result",
                "toolCallId": "c3",
                "toolName": "weather",
                "output": {"type": "error-text", "value": "station offline"},
            },
            {
                "type": "tool-result",
                "toolCallId": "c4",
                "toolName": "weather",
                "output": {"type": "error-json", "value": {"code": 7}},
            },
        ],
    },
    {"role": "user", "content": "Thanks. Summarise."},
]

#: key -> messages (the AI SDK's ModelMessage JSON, which is also aimux-ops' own)
CASES: dict[str, list[dict[str, Any]]] = {
    "image-base64": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "file", "mediaType": "image/png", "data": PNG},
            ],
        },
    ],
    "image-url": [
        {
            "role": "user",
            "content": [
                {"type": "file", "mediaType": "image/jpeg", "data": "https://example.com/cat.jpg"},
                {"type": "text", "text": "Describe it."},
            ],
        },
    ],
    "image-data-url": [
        {
            "role": "user",
            "content": [
                {"type": "file", "mediaType": "image/png", "data": f"data:image/png;base64,{PNG}"},
            ],
        },
    ],
    "pdf-base64": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarise the report."},
                {
                    "type": "file",
                    "mediaType": "application/pdf",
                    "data": PDF,
                    "filename": "report.pdf",
                },
            ],
        },
    ],
    "pdf-no-filename": [
        {
            "role": "user",
            "content": [{"type": "file", "mediaType": "application/pdf", "data": PDF}],
        },
    ],
    "text-file": [
        {
            "role": "user",
            "content": [
                {"type": "file", "mediaType": "text/plain", "data": TXT, "filename": "notes.txt"},
            ],
        },
    ],
    "audio-wav": [
        {"role": "user", "content": [{"type": "file", "mediaType": "audio/wav", "data": WAV}]},
    ],
    "tool-round-trip": ROUND_TRIP,
    "reasoning-replayed": [
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "reasoning",
                    "text": "Simple sum.",
                    "providerOptions": {"anthropic": {"signature": "sig-abc"}},
                },
                {"type": "text", "text": "4"},
            ],
        },
        {"role": "user", "content": "And 3+3?"},
    ],
    "system-and-multi-turn": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": [{"type": "text", "text": "Bye"}]},
    ],
}
#: settings the providers ignore: both sides must report the same warnings
SETTINGS: dict[str, dict[str, Any]] = {
    "warn-penalties-seed": {"frequencyPenalty": 0.5, "presencePenalty": 0.2, "seed": 7},
    "warn-topk": {"topK": 5},
    "warn-temperature-clamped": {"temperature": 1.5},
}
#: options only the AI SDK takes, per case: v7 refuses system messages inside ``messages``
#: unless told (a prompt-injection guard); aimux-ops takes them, as it always did (DESIGN.md)
AI_SDK_ONLY: dict[str, dict[str, Any]] = {"system-and-multi-turn": {"allowSystemInMessages": True}}

SCRIPT = r"""
import { generateText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
const cases = JSON.parse(process.env.CASES);
for (const c of cases) {
  const model = c.provider === 'openai'
    ? createOpenAI({ baseURL: c.url, apiKey: 'sk-test' }).chat('gpt-4o-mini')
    : createAnthropic({ baseURL: c.url, apiKey: 'sk-test' })('claude-3-haiku-20240307');
  try {
    const r = await generateText({ model, messages: c.messages, maxRetries: 0, ...c.settings });
    console.log(JSON.stringify({ key: c.key, provider: c.provider, warnings: r.warnings ?? [] }));
  } catch (e) {
    console.log(JSON.stringify({ key: c.key, provider: c.provider, error: e?.name ?? String(e) }));
  }
}
"""

PROVIDERS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-haiku-20240307"}


def _answer(provider: str) -> Any:
    if provider == "openai":
        return json_reply(
            {
                "id": "c",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
    return json_reply(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-3-haiku-20240307",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


ALL = [(p, k) for p in PROVIDERS for k in [*CASES, *SETTINGS]]


def _messages(key: str) -> list[dict[str, Any]]:
    return CASES.get(key) or [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], Any]]:
    if shutil.which("node") is None or not (PEERS / "@ai-sdk" / "anthropic").exists():
        pytest.fail("needs node and the AI SDK peers: run `make -C bench peers` (make test does)")
    server = ScenarioServer().start()
    try:
        cases = []
        for provider, key in ALL:
            for side in ("ai", "aimux"):
                server.add(f"{side}-{provider}-{key}", _answer(provider))
            cases.append(
                {
                    "key": key,
                    "provider": provider,
                    "url": server.url(f"ai-{provider}-{key}"),
                    "messages": _messages(key),
                    "settings": {**SETTINGS.get(key, {}), **AI_SDK_ONLY.get(key, {})},
                }
            )
        work = tmp_path_factory.mktemp("neutral-prompt")
        (work / "node_modules").symlink_to(PEERS)
        (work / "package.json").write_text('{"type": "module"}')
        (work / "prompt.mjs").write_text(SCRIPT)
        theirs = {
            (o["provider"], o["key"]): o
            for o in run_node_json_lines(
                work, ["prompt.mjs"], {**os.environ, "CASES": json.dumps(cases)}, timeout=120
            )
        }
        out: dict[tuple[str, str], Any] = {}
        for provider, key in ALL:
            mine: dict[str, Any] = {}
            params = {
                "model": {
                    "provider": provider,
                    "modelId": MODELS[provider],
                    "baseURL": server.url(f"aimux-{provider}-{key}"),
                    "apiKey": "sk-test",
                },
                "messages": _messages(key),
                "maxRetries": 0,
                **SETTINGS.get(key, {}),
            }
            try:
                mine["warnings"] = aimux_ops.call("generate_text", params).get("warnings", [])
            except AimuxError as exc:
                mine["error"] = exc.error_name
            out[(provider, key)] = {
                "theirs": theirs[(provider, key)],
                "mine": mine,
                "their_request": (server.requests.get(f"ai-{provider}-{key}") or [None])[0],
                "my_request": (server.requests.get(f"aimux-{provider}-{key}") or [None])[0],
            }
        yield out
    finally:
        server.stop()


def _prompt(provider: str, request: dict[str, Any]) -> dict[str, Any]:
    body = orjson.loads(request["body"])
    keep = ("messages", "system") if provider == "anthropic" else ("messages",)
    out = {k: body.get(k) for k in keep}
    out["beta"] = request["headers"].get("anthropic-beta")
    return out


@pytest.mark.parametrize(("provider", "key"), ALL, ids=[f"{p}-{k}" for p, k in ALL])
def test_the_prompt_each_side_sends_is_the_same(
    compared: dict[tuple[str, str], Any], provider: str, key: str
) -> None:
    got = compared[(provider, key)]
    theirs, mine = got["theirs"], got["mine"]
    if "error" in theirs or "error" in mine:
        # refused by both before anything is sent, as the same class
        assert theirs.get("error") == mine.get("error"), (theirs, mine)
        assert got["my_request"] is None
        return
    assert _prompt(provider, got["my_request"]) == _prompt(provider, got["their_request"])
    assert mine["warnings"] == theirs["warnings"]


def test_one_prompt_with_an_image_a_pdf_and_a_tool_round_trip_runs_on_both_providers(
    compared: dict[tuple[str, str], Any],
) -> None:
    """The issue's check: the same params, only ``model.provider`` changed."""
    for provider in PROVIDERS:
        for key in ("image-base64", "pdf-base64", "tool-round-trip"):
            assert "error" not in compared[(provider, key)]["mine"], (provider, key)


def test_a_part_in_the_wrong_role_is_an_invalid_prompt() -> None:
    params = {
        "model": {
            "provider": "openai",
            "modelId": "m",
            "baseURL": "http://127.0.0.1:1/v1",
            "apiKey": "k",
        },
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}}],
            }
        ],
        "maxRetries": 0,
    }
    with pytest.raises(AimuxError) as caught:
        aimux_ops.call("generate_text", params)
    assert caught.value.code == 6
    assert "messages[0].content[0]: a tool-call part cannot be in a user message" in str(
        caught.value
    )


def test_a_pdf_url_on_chat_completions_is_refused_without_a_download(tmp_path: Path) -> None:
    params = {
        "model": {
            "provider": "openai",
            "modelId": "m",
            "baseURL": "http://127.0.0.1:1/v1",
            "apiKey": "k",
        },
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "mediaType": "application/pdf",
                        "data": "https://example.com/x.pdf",
                    }
                ],
            }
        ],
        "maxRetries": 0,
    }
    with pytest.raises(AimuxError) as caught:
        aimux_ops.call("generate_text", params)
    assert caught.value.code == 8
    assert caught.value.functionality == "PDF file parts with URLs"
