"""Differential suite: the same scripted provider answers run through aimux-ops and through the real
AI SDK (``ai`` + ``@ai-sdk/openai`` pinned in ``bench/peers``), outcome by outcome.

The cases take their data and the behaviour under test from the AI SDK's own tests (the OpenAI
chat model's ``doGenerate`` / ``doStream`` tests and their fixtures, provider-utils' response
handlers, the retry tests) plus provider flavours seen in the wild (Azure, Mistral, Llama servers,
Groq-style repeated ids, ``choices: null``); each is replayed byte for byte by the scenario server
over real HTTP on 127.0.0.1, once per peer. One node process runs every case of the AI SDK.

Compared: text, finish reason, usage (input / output / total), tool calls (id, name, input,
invalid), response id and model, error class / status / retryability / message (a RetryError's
reason and last attempt), and the number of requests the server received. Each case is ``same``
(the outcomes must be equal), or a listed difference: ``better`` (aimux-ops reports more or
more correctly) or ``differs`` (a deliberate choice); both must still differ from the peer (a
stale entry fails), must satisfy the case's check of our outcome, and must have their key in the
table of ``docs/DESIGN.md`` ("Differences from the AI SDK"). The counts are printed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from helpers import CANARY, ROOT, run_node_json_lines
from scenario_server import Reply, ScenarioServer, encoded, json_reply, serve_scenarios, sse_reply

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json

PEERS = ROOT / "bench" / "peers" / "node_modules"
NODE = shutil.which("node")
DESIGN = ROOT / "docs" / "DESIGN.md"
TOOL_NAMES = (
    "test-tool",
    "searchGoogle",
    "search",
    "weather",
    "get_weather",
    "rollDie",
    "updateIssueList",
)
FIXTURES = ROOT / "tests" / "ai_sdk_fixtures"

# -- data from the AI SDK's tests ----------------------------------------------------------------

CMPL = "chatcmpl-96aZqmeDpA9IPD6tACY8djkMsJCMP"
LOGPROBS = {
    "content": [
        {
            "token": "Hello",
            "logprob": -0.0009994634,
            "top_logprobs": [{"token": "Hello", "logprob": -0.0009994634}],
        },
        {
            "token": "!",
            "logprob": -0.13410144,
            "top_logprobs": [{"token": "!", "logprob": -0.13410144}],
        },
    ]
}


def completion(
    message: dict[str, Any] | None = None, finish: Any = "stop", usage: Any = None, **top: Any
) -> dict[str, Any]:
    """A chat completion as in the AI SDK's doGenerate tests."""
    out: dict[str, Any] = {
        "id": "chatcmpl-95ZTZkhr0mHNKqerQfiwkuox3PHAd",
        "object": "chat.completion",
        "created": 1711115037,
        "model": "gpt-3.5-turbo-0125",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "", **(message or {})},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 4, "total_tokens": 34, "completion_tokens": 30}
        if usage is None
        else usage,
        "system_fingerprint": "fp_3bc1b5746c",
    }
    out.update(top)
    return out


def ch(
    delta: dict[str, Any] | None,
    finish: str | None = None,
    *,
    cid: str = CMPL,
    model: str = "gpt-3.5-turbo-0613",
    index: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """One stream chunk as in the AI SDK's doStream tests."""
    choice: dict[str, Any] = {"index": index, "delta": delta, "finish_reason": finish}
    choice.update(extra.pop("choice", {}))
    out: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1702657020,
        "model": model,
        "system_fingerprint": None,
        "choices": [choice],
    }
    out.update(extra)
    return out


def usage_chunk(
    prompt: Any = 17,
    completion_: Any = 227,
    total: Any = 244,
    *,
    cid: str = CMPL,
    model: str = "gpt-3.5-turbo-0613",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1702657020,
        "model": model,
        "system_fingerprint": "fp_3bc1b5746c",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "total_tokens": total,
            "completion_tokens": completion_,
            **extra,
        },
    }


def tc(
    index: int | None,
    cid: str | None = None,
    name: str | None = None,
    args: str | None = None,
    typ: str | None = "function",
) -> dict[str, Any]:
    """A tool-call delta (only the members given)."""
    out: dict[str, Any] = {}
    if index is not None:
        out["index"] = index
    if cid is not None:
        out["id"] = cid
    if typ is not None and (cid is not None or name is not None):
        out["type"] = typ
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    out["function"] = fn
    return out


HELLO_TEXT = [
    ch({"role": "assistant", "content": ""}),
    ch({"content": "Hello"}, index=1),
    ch({"content": ", "}, index=1),
    ch({"content": "World!"}, index=1),
    ch({}, "stop", choice={"logprobs": LOGPROBS}),
    usage_chunk(),
]

TOOL_MODEL = "gpt-3.5-turbo-0125"


def tool_stream(
    *deltas: list[dict[str, Any]],
    finish: str = "tool_calls",
    usage: bool = True,
    model: str = TOOL_MODEL,
) -> list[dict[str, Any]]:
    frames = [ch({"role": "assistant", "content": None, "tool_calls": deltas[0]}, model=model)]
    frames += [ch({"tool_calls": d}, model=model) for d in deltas[1:]]
    frames.append(ch({}, finish, model=model))
    if usage:
        frames.append(usage_chunk(53, 17, 70, model=model))
    return frames


SPARKLE = ['{"', "value", '":"', "Spark", "le", " Day", '"}']
SERVER_ERROR = (
    "The server had an error processing your request. Sorry about that! You can "
    "retry your request, or contact us through our help center at help.openai.com "
    "if you keep seeing this error."
)
LEGACY_PARAM = {
    "error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
        "'max_completion_tokens' instead.",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }
}
RATE = {
    "error": {
        "message": "Rate limit reached for requests",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
FAST = {"retry-after-ms": "1"}
AZURE_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
}


# -- the cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    kind: str  # "gen" | "stream"
    replies: list[Reply]
    expect: str = "same"  # "same" | "better:<key>" | "differs:<key>"
    check: Callable[[dict[str, Any]], bool] | None = None  # on our outcome, for a difference
    max_retries: int = 0
    tools: bool = False
    timeout_ms: int | None = None
    ids: bool = True  # compare tool-call ids (False: the wire gave none, both peers invent one)
    redirect_elsewhere: str | None = None  # a 3xx whose location is on the other server
    extra: dict[str, Any] = field(default_factory=dict)
    provider: str = "openai"  # "openai" (Chat Completions) | "anthropic" (Messages API)
    #: tools the provider runs: name → (the AI SDK's ``anthropic.tools`` factory, aimux's id)
    provider_tools: dict[str, tuple[str, str]] = field(default_factory=dict)


def _err(o: dict[str, Any]) -> dict[str, Any]:
    return o["error"] or {}


def G(name: str, *replies: Reply, **kw: Any) -> Case:
    return Case(name, "gen", list(replies), **kw)


def S(name: str, *replies: Reply, **kw: Any) -> Case:
    return Case(name, "stream", list(replies), **kw)


def J(obj: Any, status: int = 200, **headers: str) -> Reply:
    return json_reply(obj, status, **headers)


def E(frames: list[Any], **kw: Any) -> Reply:
    return sse_reply(frames, **kw)


CASES: list[Case] = [
    # doGenerate: results
    G("g-text", J(completion({"content": "Hello, World!"}))),
    G(
        "g-usage-partial",
        J(completion(usage={"prompt_tokens": 20, "total_tokens": 20})),
        expect="differs:usage-missing-count",
        check=lambda o: o["usage"] == [20, None, 20],
    ),
    G("g-usage-null", J(completion({"content": "x"}, usage=None) | {"usage": None})),
    G("g-usage-absent", J({k: v for k, v in completion({"content": "x"}).items() if k != "usage"})),
    G(
        "g-usage-float",
        J(
            completion(
                {"content": "x"},
                usage={"prompt_tokens": 20.0, "completion_tokens": 5.0, "total_tokens": 25.0},
            )
        ),
    ),
    G(
        "g-usage-details",
        J(
            completion(
                {"content": "x"},
                usage={
                    "prompt_tokens": 15,
                    "completion_tokens": 20,
                    "total_tokens": 35,
                    "prompt_tokens_details": {"cached_tokens": 1152},
                    "completion_tokens_details": {
                        "reasoning_tokens": 10,
                        "accepted_prediction_tokens": 123,
                        "rejected_prediction_tokens": 456,
                    },
                },
            )
        ),
    ),
    G(
        "g-logprobs",
        J(
            completion({"content": "Hello!"})
            | {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Hello!"},
                        "logprobs": LOGPROBS,
                        "finish_reason": "stop",
                    }
                ]
            }
        ),
    ),
    G("g-finish-length", J(completion({"content": "Hello"}, "length"))),
    G("g-finish-content-filter", J(completion({"content": None}, "content_filter"))),
    G("g-finish-unknown", J(completion({"content": "x"}, "eos"))),
    G("g-finish-function-call", J(completion({"content": "x"}, "function_call"))),
    G(
        "g-finish-null",
        J(completion({"content": "x"}, None)),
        expect="differs:finish-unreported",
        check=lambda o: o["finishReason"] == "unknown",
    ),
    G(
        "g-tool-calls",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_O17Uplv4lJvD6DVdIvFFeRMw",
                            "type": "function",
                            "function": {"name": "test-tool", "arguments": '{"value":"Spark"}'},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
    ),
    G(
        "g-tool-calls-parallel",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"q":"news"}'},
                        },
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
    ),
    G(
        "g-tool-call-no-id",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": None,
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
        ids=False,
    ),
    G(
        "g-tool-call-bad-json",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city": "Par'},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
    ),
    G(
        "g-tool-call-unknown-tool",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "launch", "arguments": "{}"},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
    ),
    G(
        "g-refusal",
        J(completion({"content": None, "refusal": "I'm sorry, I cannot help with that."})),
    ),
    G("g-refusal-length", J(completion({"content": None, "refusal": "I'm sorry"}, "length"))),
    G(
        "g-annotations",
        J(
            completion(
                {
                    "content": "Based on the search results [doc1], ...",
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url_citation": {
                                "start_index": 24,
                                "end_index": 29,
                                "url": "https://example.com/doc1.pdf",
                                "title": "Document 1",
                            },
                        }
                    ],
                }
            )
        ),
    ),
    G(
        "g-audio-transcript",
        J(completion({"content": None, "audio": {"id": "a1", "transcript": "Hi there"}})),
    ),
    G(
        "g-reasoning-content",
        J(completion({"content": "42", "reasoning_content": "Let me think..."})),
    ),
    G("g-unicode", J(completion({"content": "héllo wörld ✓ 你好 🎉"}))),
    G("g-leading-whitespace", Reply(200, b"\n\n  " + orjson.dumps(completion({"content": "ok"})))),
    G(
        "g-text-plain-content-type",
        Reply(200, orjson.dumps(completion({"content": "ok"})), content_type="text/plain"),
    ),
    G(
        "g-empty-choices",
        J(completion() | {"choices": []}),
        expect="differs:no-choices",
        check=lambda o: (
            _err(o).get("name") == "AI_APICallError" and _err(o).get("statusCode") == 200
        ),
    ),
    G("g-wrong-shape", J({"id": "chatcmpl-1", "object": "chat.completion", "choices": "none"})),
    G("g-not-json-200", Reply(200, b'{"id": "chatcmpl-1", "choices": [ this is not json')),
    G(
        "g-error-object-200",
        J(LEGACY_PARAM),
        expect="better:error-object-in-200",
        check=lambda o: _err(o).get("message") == LEGACY_PARAM["error"]["message"],
    ),
    # provider-utils response handlers: error bodies of every shape
    G("g-400-openai-error", J(LEGACY_PARAM, 400)),
    G(
        "g-401-invalid-key",
        J(
            {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            401,
        ),
    ),
    G(
        "g-404-model",
        J(
            {
                "error": {
                    "message": "The model `gpt-9` does not exist",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
            404,
        ),
    ),
    G(
        "g-400-numeric-code",
        J({"error": {"message": "bad request", "type": None, "code": 400}}, 400),
    ),
    G("g-400-minimal-error", J({"error": {"message": "only a message"}}, 400)),
    G("g-400-error-string", J({"error": "some string"}, 400)),
    G("g-400-error-array", J([{"error": {"message": "in an array"}}], 400)),
    G("g-422-other-json", J({"detail": "something else"}, 422)),
    G("g-400-not-json", Reply(400, b"Bad Request: nope", content_type="text/plain")),
    G("g-500-empty-body", Reply(500, b"")),
    G(
        "g-502-html",
        Reply(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"),
    ),
    G(
        "g-413-too-large",
        J(
            {
                "error": {
                    "message": "Request too large",
                    "type": "invalid_request",
                    "code": "request_too_large",
                }
            },
            413,
        ),
    ),
    G("g-409-conflict", J({"error": {"message": "conflict"}}, 409)),
    G("g-400-message-not-string", J({"error": {"message": 42, "type": "x"}}, 400)),
    G("g-400-message-null", J({"error": {"message": None}}, 400)),
    G("g-400-top-level-message", J({"message": "top-level", "code": "bad"}, 400)),
    G(
        "g-400-rich-param",
        J(
            {
                "error": {
                    "message": "bad param",
                    "type": "invalid_request_error",
                    "param": {"path": ["messages", 0]},
                    "code": 123,
                }
            },
            400,
        ),
    ),
    G("g-200-empty-body", Reply(200, b"")),
    G("g-204-no-content", Reply(204, b"", content_type=None)),
    G(
        "g-multiple-choices",
        J(
            completion({"content": "first"})
            | {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "first"},
                        "finish_reason": "stop",
                    },
                    {
                        "index": 1,
                        "message": {"role": "assistant", "content": "second"},
                        "finish_reason": "length",
                    },
                ]
            }
        ),
    ),
    G(
        "g-tool-args-object",
        J(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": {"city": "Paris"}},
                        }
                    ],
                },
                "tool_calls",
            )
        ),
        tools=True,
    ),
    # retry (the AI SDK's retry tests: retryable statuses, retry-after, giving up)
    G(
        "r-429-then-ok",
        J(RATE, 429, **FAST),
        J(completion({"content": "after retry"})),
        max_retries=2,
    ),
    G(
        "r-500-exhausted",
        J({"error": {"message": SERVER_ERROR, "type": "server_error"}}, 500, **FAST),
        max_retries=2,
        expect="differs:retry-message",
        check=lambda o: (
            _err(o)["message"] == "Failed after 3 attempts. Last error: " + SERVER_ERROR
            and _err(o)["last"]["statusCode"] == 500
        ),
    ),
    G(
        "r-503-then-400",
        J({"error": {"message": "overloaded"}}, 503, **FAST),
        J(LEGACY_PARAM, 400),
        max_retries=3,
        expect="differs:retry-message",
        check=lambda o: (
            _err(o)["reason"] == "errorNotRetryable" and _err(o)["last"]["statusCode"] == 400
        ),
    ),
    G("r-400-first", J(LEGACY_PARAM, 400), max_retries=3),
    G(
        "r-408-then-ok",
        J({"error": {"message": "timeout"}}, 408, **FAST),
        J(completion({"content": "ok"})),
        max_retries=1,
    ),
    G(
        "r-429-retry-after-seconds",
        J(RATE, 429, **{"retry-after": "0"}),
        J(completion({"content": "ok"})),
        max_retries=1,
    ),
    G(
        "r-prefer-retry-after-ms",
        J(RATE, 429, **{"retry-after-ms": "1", "retry-after": "10"}),
        J(completion({"content": "ok"})),
        max_retries=1,
        timeout_ms=8000,
    ),
    G(
        "r-hint-over-60s-uses-backoff",
        J(RATE, 429, **{"retry-after-ms": "70000"}),
        J(completion({"content": "ok"})),
        max_retries=1,
        timeout_ms=15000,
    ),
    G(
        "r-invalid-hints-use-backoff",
        J(RATE, 429, **{"retry-after-ms": "invalid", "retry-after": "not-a-number"}),
        J(completion({"content": "ok"})),
        max_retries=1,
        timeout_ms=15000,
    ),
    G(
        "r-deadline-in-backoff",
        J(RATE, 429, **{"retry-after": "30"}),
        max_retries=2,
        timeout_ms=500,
        expect="better:timeout-keeps-attempts",
        check=lambda o: _err(o).get("name") == "AI_TimeoutError" and o["causeStatus"] == 429,
    ),
    # redirects
    G(
        "x-redirect-307",
        Reply(307, b"", {"location": "/c/{case}/v2/chat/completions"}),
        J(completion({"content": "moved"})),
    ),
    G(
        "x-redirect-308",
        Reply(308, b"", {"location": "/c/{case}/v2/chat/completions"}),
        J(completion({"content": "moved"})),
    ),
    G(
        "x-redirect-302",
        Reply(302, b"", {"location": "/c/{case}/v2/chat/completions"}),
        J(completion({"content": "moved by GET"})),
        expect="differs:redirect-not-307",
        check=lambda o: _err(o).get("statusCode") == 302,
    ),
    G(
        "x-redirect-other-origin",
        Reply(307, b""),
        redirect_elsewhere="ok",
        expect="differs:redirect-other-origin",
        check=lambda o: _err(o).get("statusCode") == 307 and o["elsewhere"] == 0,
    ),
    # doStream: text and metadata
    S("s-text", E(HELLO_TEXT)),
    S(
        "s-azure-content-filter",
        E(
            [
                AZURE_FILTER,
                ch({"content": "", "role": "assistant"}, cid="chatcmpl-test", model="gpt-4o"),
                ch({"content": "Hello"}, cid="chatcmpl-test", model="gpt-4o"),
                ch({}, "stop", cid="chatcmpl-test", model="gpt-4o"),
                {
                    "choices": [
                        {
                            "content_filter_offsets": {},
                            "content_filter_results": {},
                            "finish_reason": None,
                            "index": 0,
                        }
                    ],
                    "created": 0,
                    "id": "",
                    "model": "",
                    "object": "",
                },
            ]
        ),
    ),
    S(
        "s-azure-model-router",
        E(
            [
                AZURE_FILTER
                | {
                    "prompt_filter_results": [
                        {
                            "prompt_index": 0,
                            "content_filter_results": {
                                "hate": {"filtered": False, "severity": "safe"}
                            },
                        }
                    ]
                },
                ch(
                    {"content": "", "refusal": None, "role": "assistant"},
                    cid="chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt",
                    model="gpt-5-nano-2025-08-07",
                    choice={"content_filter_results": {}, "logprobs": None},
                    usage=None,
                ),
                *[
                    ch(
                        {"content": t},
                        cid="chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt",
                        model="gpt-5-nano-2025-08-07",
                        usage=None,
                    )
                    for t in ("Capital", " of", " Denmark", ".")
                ],
                ch(
                    {},
                    "stop",
                    cid="chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt",
                    model="gpt-5-nano-2025-08-07",
                    usage=None,
                ),
                usage_chunk(
                    15,
                    78,
                    93,
                    cid="chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt",
                    model="gpt-5-nano-2025-08-07",
                    completion_tokens_details={"reasoning_tokens": 64},
                ),
            ]
        ),
    ),
    S(
        "s-annotations",
        E(
            [
                ch({"role": "assistant", "content": ""}, model=TOOL_MODEL),
                ch({"content": "Based on search results"}, model=TOOL_MODEL, index=1),
                ch(
                    {
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url_citation": {
                                    "start_index": 24,
                                    "end_index": 29,
                                    "url": "https://example.com/doc1.pdf",
                                    "title": "Document 1",
                                },
                            }
                        ]
                    },
                    model=TOOL_MODEL,
                    index=1,
                ),
                ch({}, "stop", model=TOOL_MODEL),
                usage_chunk(model=TOOL_MODEL),
            ]
        ),
    ),
    S(
        "s-reasoning-model",
        E(
            [
                ch({"role": "assistant", "content": ""}, model="o4-mini"),
                ch({"content": "Hello, World!"}, model="o4-mini", index=1),
                ch({}, "stop", model="o4-mini", choice={"logprobs": None}),
                usage_chunk(
                    15, 20, 35, model="o4-mini", completion_tokens_details={"reasoning_tokens": 10}
                ),
            ]
        ),
    ),
    S(
        "s-logprobs",
        E(
            [
                ch({"content": "Hello!"}, choice={"logprobs": LOGPROBS}),
                ch({}, "stop", choice={"logprobs": LOGPROBS}),
                usage_chunk(),
            ]
        ),
    ),
    S(
        "s-refusal",
        E(
            [
                ch({"role": "assistant", "content": None, "refusal": ""}),
                ch({"refusal": "I'm sorry, "}),
                ch({"refusal": "I can't."}),
                ch({}, "stop"),
                usage_chunk(5, 4, 9),
            ]
        ),
    ),
    S(
        "s-reasoning-fields",
        E(
            [
                ch({"role": "assistant", "content": None, "reasoning_content": "think"}),
                ch({"reasoning": "more", "reasoning_details": [{"t": 1}]}),
                ch({"content": "42"}),
                ch({}, "stop"),
                usage_chunk(3, 9, 12),
            ]
        ),
    ),
    S("s-finish-length", E([ch({"content": "Hel"}), ch({}, "length"), usage_chunk(1, 1, 2)])),
    S("s-finish-content-filter", E([ch({"content": "x"}), ch({}, "content_filter")])),
    S("s-usage-float", E([ch({"content": "x"}, "stop"), usage_chunk(20.0, 5.0, 25.0)])),
    S(
        "s-usage-in-finish-chunk",
        E(
            [
                ch({"content": "x"}),
                ch(
                    {},
                    "stop",
                    usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                ),
            ]
        ),
    ),
    S(
        "s-unicode-split",
        E([ch({"content": "héllo wörld ✓ "}), ch({"content": "你好 🎉"}), ch({}, "stop")], split=5),
    ),
    # SSE quirks
    S("s-crlf", E(HELLO_TEXT, crlf=True)),
    S(
        "s-comments-and-fields",
        E(
            [
                ": keep-alive",
                "event: message\nid: 1\nretry: 100\ndata: " + json.dumps(ch({"content": "Hi"})),
                ":",
                ch({}, "stop"),
                usage_chunk(1, 1, 2),
            ]
        ),
    ),
    S("s-split-frames", E(HELLO_TEXT, split=7)),
    S("s-split-one-byte", E([ch({"content": "ab"}), ch({}, "stop")], split=1)),
    S(
        "s-crlf-split-one-byte",
        E(
            [ch({"content": "ab"}), ch({"content": "cd"}), ch({}, "stop"), usage_chunk(1, 2, 3)],
            crlf=True,
            split=1,
        ),
    ),
    S(
        "s-data-no-space",
        E(["data:" + json.dumps(ch({"content": "tight"})), "data:" + json.dumps(ch({}, "stop"))]),
    ),
    S(
        "s-multiline-data",
        E(
            [
                "data: " + json.dumps(ch({"content": "two"}), indent=1).replace("\n", "\ndata: "),
                ch({}, "stop"),
            ]
        ),
    ),
    S(
        "s-empty-deltas",
        E(
            [
                ch({"role": "assistant", "content": ""}),
                ch({}),
                ch({"content": ""}),
                ch({"content": "x"}),
                ch({}),
                ch({}, "stop"),
                usage_chunk(1, 1, 2),
            ]
        ),
    ),
    S("s-null-delta", E([ch(None), ch({"content": "x"}), ch(None, "stop")])),
    S(
        "s-usage-only-chunks",
        E([usage_chunk(1, 0, 1), ch({"content": "x"}), ch({}, "stop"), usage_chunk(1, 1, 2)]),
    ),
    S(
        "s-choices-null",
        E([ch({"content": "x"}), ch({}, "stop"), usage_chunk(1, 1, 2) | {"choices": None}]),
        expect="better:choices-null",
        check=lambda o: o["error"] is None and o["usage"] == [1, 1, 2],
    ),
    S(
        "s-error-null",
        E(
            [
                ch({"content": "Hel"}) | {"error": None},
                ch({"content": "lo"}) | {"error": None},
                ch({}, "stop") | {"error": None},
            ]
        ),
    ),
    S(
        "s-no-done-after-finish",
        E([ch({"content": "Hi"}), ch({}, "stop"), usage_chunk(1, 1, 2)], done=False),
    ),
    S(
        "s-no-done-no-finish",
        E([ch({"content": "Hi"})], done=False),
        expect="better:end-before-terminal-event",
        check=lambda o: (
            _err(o).get("name") == "AI_APICallError"
            and _err(o).get("isRetryable") is True
            and o["text"] == "Hi"
        ),
    ),
    S(
        "s-empty-body",
        E([], done=False),
        expect="better:end-before-terminal-event",
        check=lambda o: _err(o).get("name") == "AI_APICallError",
    ),
    S(
        "s-json-completion-200",
        J(completion({"content": "whole"})),
        expect="better:json-to-stream",
        check=lambda o: o["text"] == "whole" and o["finishReason"] == "stop",
    ),
    S(
        "s-html-200",
        Reply(200, b"<html>login</html>", content_type="text/html"),
        expect="better:html-to-stream",
        check=lambda o: _err(o).get("isRetryable") is False and "text/html" in _err(o)["message"],
    ),
    S(
        "s-bom",
        Reply(
            200,
            ["\ufeff".encode() + sse_reply([ch({"content": "bom"}), ch({}, "stop")]).body[0]],
            content_type="text/event-stream",
        ),
    ),
    S(
        "s-cr-only-line-endings",
        Reply(
            200,
            [sse_reply([ch({"content": "cr"}), ch({}, "stop")]).body[0].replace(b"\n", b"\r")],
            content_type="text/event-stream",
        ),
    ),
    S(
        "s-junk-after-done",
        Reply(
            200,
            [sse_reply([ch({"content": "x"}), ch({}, "stop")]).body[0] + b"data: {not json\n\n"],
            content_type="text/event-stream",
        ),
        expect="better:after-done",
        check=lambda o: o["error"] is None and o["text"] == "x",
    ),
    S(
        "s-multiple-choices",
        E(
            [
                ch({"content": "a"})
                | {
                    "choices": [
                        {"index": 0, "delta": {"content": "a"}, "finish_reason": None},
                        {"index": 1, "delta": {"content": "b"}, "finish_reason": None},
                    ]
                },
                ch({}, "stop"),
            ]
        ),
    ),
    S(
        "s-event-stream-charset",
        E([ch({"content": "x"}), ch({}, "stop")], content_type="text/event-stream; charset=utf-8"),
    ),
    S(
        "s-sse-labelled-json",
        E([ch({"content": "x"}), ch({}, "stop")], content_type="application/json"),
    ),
    S(
        "s-sse-labelled-text-plain",
        E([ch({"content": "y"}), ch({}, "stop")], content_type="text/plain; charset=utf-8"),
    ),
    S("s-sse-no-content-type", E([ch({"content": "x"}), ch({}, "stop")], content_type=None)),
    # doStream: errors
    S(
        "s-error-first-chunk",
        E(
            [
                {
                    "error": {
                        "message": SERVER_ERROR,
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            ]
        ),
        expect="differs:stream-error-status",
        check=lambda o: _err(o).get("statusCode") == 200 and _err(o).get("isRetryable") is True,
    ),
    S(
        "s-error-first-numeric-400",
        E(
            [
                {
                    "error": {
                        "message": "bad request",
                        "type": "provider_error",
                        "param": None,
                        "code": 400,
                    }
                }
            ]
        ),
    ),
    S(
        "s-error-after-output",
        E(
            [
                ch({"role": "assistant", "content": "Hello"}),
                {
                    "error": {
                        "message": "stream failed after output",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
            ]
        ),
        expect="differs:stream-error-status",
        check=lambda o: _err(o).get("statusCode") == 200 and o["text"] == "Hello",
    ),
    S(
        "s-error-string-frame",
        E([ch({"content": "a"}), {"error": "plain string error"}]),
        expect="better:error-frame-shapes",
        check=lambda o: _err(o).get("message") == "plain string error" and o["text"] == "a",
    ),
    S(
        "s-event-error-frame",
        E([ch({"content": "a"}), 'event: error\ndata: {"message":"boom"}']),
        expect="better:event-error",
        check=lambda o: _err(o).get("name") == "AI_APICallError" and _err(o)["message"] == "boom",
    ),
    S(
        "s-unparsable",
        E(["{unparsable}"]),
        expect="better:bad-chunk-status",
        check=lambda o: (
            _err(o).get("name") == "AI_APICallError" and _err(o).get("statusCode") == 200
        ),
    ),
    S(
        "s-bad-shape",
        E([ch({"content": "a"}), {"id": "x", "choices": [{"delta": {"content": 5}}]}]),
        expect="better:bad-chunk-status",
        check=lambda o: _err(o).get("statusCode") == 200 and o["text"] == "a",
    ),
    S("s-500-json", J({"error": {"message": SERVER_ERROR, "type": "server_error"}}, 500)),
    S("s-429-then-ok", J(RATE, 429, **FAST), E(HELLO_TEXT), max_retries=1),
    S(
        "s-redirect-307",
        Reply(307, b"", {"location": "/c/{case}/v2/chat/completions"}),
        E(HELLO_TEXT),
    ),
    # doStream: tool-call deltas of every flavour
    S(
        "t-tool-deltas",
        E(
            tool_stream(
                [tc(0, "call_O17Uplv4lJvD6DVdIvFFeRMw", "test-tool", "")],
                *[[tc(0, args=a)] for a in SPARKLE],
            )
        ),
        tools=True,
    ),
    S(
        "t-args-in-first-chunk",
        E(
            tool_stream(
                [tc(0, "call_O17Uplv4lJvD6DVdIvFFeRMw", "test-tool", '{"')],
                *[[tc(0, args=a)] for a in ["va", "lue", '":"', "Spark", "le", " Day", '"}']],
            )
        ),
        tools=True,
    ),
    S(
        "t-empty-chunk-after-completion",
        E(
            [
                ch(
                    {"role": "assistant", "content": ""},
                    model="meta/llama-3.1-8b-instruct:fp8",
                    usage={"prompt_tokens": 226, "total_tokens": 226, "completion_tokens": 0},
                ),
                ch(
                    {
                        "tool_calls": [
                            tc(0, "chatcmpl-tool-b3b307239370432d9910d4b79b4dbbaa", "searchGoogle")
                        ]
                    },
                    model="meta/llama-3.1-8b-instruct:fp8",
                ),
                *[
                    ch({"tool_calls": [tc(0, args=a)]}, model="meta/llama-3.1-8b-instruct:fp8")
                    for a in ['{"query": "', "latest", " news", " on", ' ai"}']
                ],
                ch({"tool_calls": [tc(0, args="")]}, model="meta/llama-3.1-8b-instruct:fp8"),
                ch(
                    {},
                    "tool_calls",
                    model="meta/llama-3.1-8b-instruct:fp8",
                    usage={"prompt_tokens": 226, "total_tokens": 246, "completion_tokens": 20},
                ),
            ]
        ),
        tools=True,
    ),
    S(
        "t-partial-json-parsable",
        E(
            tool_stream(
                [tc(0, "call_early123", "search", "")],
                [tc(0, args='{"query": "test"}')],
                [tc(0, args="")],
                [tc(0, args=', "limit": 10}')],
                model="gpt-4",
            )
        ),
        tools=True,
    ),
    S(
        "t-missing-type-mistral",
        E(
            tool_stream(
                [tc(0, "call_abc123", "test-tool", "", typ=None)],
                [tc(0, args='{"value"')],
                [tc(0, args=':"hello"}')],
                model="mistral-large",
            )
        ),
        tools=True,
    ),
    S(
        "t-one-chunk",
        E(
            tool_stream(
                [tc(0, "call_O17Uplv4lJvD6DVdIvFFeRMw", "test-tool", '{"value":"Sparkle Day"}')]
            )
        ),
        tools=True,
    ),
    S(
        "t-two-ids-same-index",
        E(
            tool_stream(
                [tc(0, "call_a", "weather", "")],
                [tc(0, args='{"city":"Paris"}')],
                [tc(0, "call_b", "weather", '{"city":"Rome"}')],
            )
        ),
        tools=True,
    ),
    S(
        "t-parallel-interleaved",
        E(
            tool_stream(
                [tc(0, "call_1", "weather", ""), tc(1, "call_2", "search", "")],
                [tc(0, args='{"city":')],
                [tc(1, args='{"q":')],
                [tc(0, args='"Oslo"}')],
                [tc(1, args='"x"}')],
            )
        ),
        tools=True,
    ),
    S(
        "t-parallel-out-of-order-index",
        E(
            tool_stream(
                [tc(1, "call_2", "search", '{"q":"b"}')], [tc(0, "call_1", "weather", '{"c":"a"}')]
            )
        ),
        tools=True,
    ),
    S(
        "t-no-index-gemini",
        E(
            tool_stream(
                [tc(None, "call_1", "weather", '{"city":"Paris"}')],
                [tc(None, "call_2", "search", '{"q":"x"}')],
            )
        ),
        tools=True,
        expect="better:tool-call-without-index",
        check=lambda o: [c["id"] for c in o["toolCalls"]] == ["call_1", "call_2"],
    ),
    S(
        "t-id-repeated-every-chunk",
        E(
            tool_stream(
                [tc(0, "call_1", "weather", "")],
                [tc(0, "call_1", args='{"city":')],
                [tc(0, "call_1", args='"Lima"}')],
            )
        ),
        tools=True,
    ),
    S(
        "t-no-id",
        E(tool_stream([tc(0, None, "weather", '{"city":')], [tc(0, args='"Kyiv"}')])),
        tools=True,
        ids=False,
    ),
    S(
        "t-blank-id",
        E(tool_stream([tc(0, "", "weather", '{"city":"Rome"}')])),
        tools=True,
        ids=False,
    ),
    S(
        "t-name-in-later-chunk",
        E(tool_stream([tc(0, "call_1", None, "")], [tc(0, None, "weather", '{"city":"Nice"}')])),
        tools=True,
        expect="better:bad-chunk-status",
        check=lambda o: (
            _err(o).get("name") == "AI_APICallError" and _err(o).get("statusCode") == 200
        ),
    ),
    S("t-bad-json-args", E(tool_stream([tc(0, "call_1", "weather", '{"city": "Par')])), tools=True),
    S("t-unknown-tool", E(tool_stream([tc(0, "call_1", "launch", "{}")])), tools=True),
    S(
        "t-text-then-tool",
        E(
            [
                ch({"role": "assistant", "content": "Let me check. "}),
                ch({"tool_calls": [tc(0, "call_1", "weather", '{"city":"Bern"}')]}),
                ch({}, "tool_calls"),
                usage_chunk(5, 5, 10),
            ]
        ),
        tools=True,
    ),
    S(
        "t-args-object",
        E(
            tool_stream(
                [
                    tc(0, "call_1", "weather", None)
                    | {"function": {"name": "weather", "arguments": {"city": "Oslo"}}}
                ]
            )
        ),
        tools=True,
        expect="better:bad-chunk-status",
        check=lambda o: (
            _err(o).get("name") == "AI_APICallError" and _err(o).get("statusCode") == 200
        ),
    ),
    S(
        "t-finish-stop-with-tools",
        E(tool_stream([tc(0, "call_1", "weather", "{}")], finish="stop")),
        tools=True,
    ),
]


# -- real streams: recorded chunk files, compression, the Anthropic message lifecycle -------------

#: the model id both peers ask the Anthropic cases' server for
CLAUDE = "claude-sonnet-4-5"


def fixture_chunks(name: str, lines: slice = slice(None)) -> list[Any]:
    """A recorded chunk file of the AI SDK's repository (``tests/ai_sdk_fixtures``): one chunk
    per line (``lines``: a part of it)."""
    text = (FIXTURES / f"{name}.chunks.txt").read_text()
    return [orjson.loads(line) for line in text.splitlines() if line.strip()][lines]


#: the AI SDK's recorded answers with provider-run tools (web search, web fetch, code execution,
#: tool search, MCP) and a compaction block, each as a stream and as a message
PROVIDER_RUN_FIXTURES: dict[str, dict[str, Any]] = {
    "anthropic-web-search-tool.1": {
        "provider_tools": {"web_search": ("webSearch_20250305", "anthropic.web_search_20250305")}
    },
    "anthropic-web-fetch-tool.1": {
        "provider_tools": {"web_fetch": ("webFetch_20250910", "anthropic.web_fetch_20250910")}
    },
    "anthropic-code-execution-20250825.1": {
        "provider_tools": {
            "code_execution": ("codeExecution_20250825", "anthropic.code_execution_20250825")
        }
    },
    "anthropic-tool-search-regex.1": {
        "lines": slice(0, 32),  # its first message
        "tools": True,
        "provider_tools": {
            "tool_search_tool_regex": (
                "toolSearchRegex_20251119",
                "anthropic.tool_search_regex_20251119",
            )
        },
    },
    # the AI SDK reports an MCP call's input as the block's start gave it ({}), not as it streamed
    "anthropic-mcp.1": {
        "stream": {
            "expect": "better:provider-run-input",
            "check": lambda o: o["toolCalls"][0]["input"] == {"message": "hello world"},
        }
    },
    "anthropic-compaction.1": {},
}


#: OpenAI's web search annotations
URL_CITATIONS = [
    {
        "type": "url_citation",
        "url_citation": {
            "start_index": 0,
            "end_index": 3,
            "url": "https://example.com/docs",
            "title": "Docs",
        },
    },
    {
        "type": "url_citation",
        "url_citation": {
            "start_index": 4,
            "end_index": 8,
            "url": "https://example.com/2",
            "title": "Two",
        },
    },
]


def fixture_message(name: str) -> Any:
    """A recorded non-stream answer of the AI SDK's repository (``<name>.json``)."""
    return orjson.loads((FIXTURES / f"{name}.json").read_bytes())


def anthropic_stream(chunks: list[Any], encoding: str | None = None) -> Reply:
    """Messages API events as the real API writes them: ``event: <type>`` then ``data: <json>``
    (compact), one write per event; ``encoding``: compressed as it sends them."""
    frames = [
        b"event: " + str(c["type"]).encode() + b"\ndata: " + orjson.dumps(c) + b"\n\n"
        for c in chunks
    ]
    reply = Reply(200, frames, {"cache-control": "no-cache"}, "text/event-stream; charset=utf-8")
    return reply if encoding is None else encoded(reply, encoding)


def A(name: str, chunks: list[Any], **kw: Any) -> list[Case]:
    """An Anthropic stream case, sent as is and gzip-compressed (``<name>-gzip``)."""
    return [
        Case(name, "stream", [anthropic_stream(chunks)], provider="anthropic", **kw),
        Case(
            f"{name}-gzip",
            "stream",
            [anthropic_stream(chunks, "gzip")],
            provider="anthropic",
            **kw,
        ),
    ]


def O(name: str, chunks: list[Any], **kw: Any) -> list[Case]:  # noqa: E743
    """An OpenAI stream case, sent as is (one write) and gzip-compressed (``<name>-gzip``: one
    write per event)."""
    return [
        Case(name, "stream", [sse_reply(chunks, split=0)], **kw),
        Case(f"{name}-gzip", "stream", [sse_reply(chunks, encoding="gzip")], **kw),
    ]


def msg_start(
    mid: str = "msg_01",
    content: list[Any] | None = None,
    stop: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": content or [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 25, "output_tokens": 1},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}  # fmt: skip


def json_delta(index: int, piece: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}  # fmt: skip


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def msg_delta(stop: str | None = "end_turn", output: int = 12) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }


MSG_STOP = {"type": "message_stop"}
ROLL_DIE = {
    "type": "tool_use",
    "id": "toolu_015dGLMbwBKv1ZRQr6KdJzeH",
    "name": "rollDie",
    "input": {"player": "player2"},
}
#: a first message that stops mid tool call, then another message's start (a spliced stream)
SPLICED = [
    msg_start("msg_01A"),
    block_start(0, {"type": "text", "text": ""}),
    text_delta(0, "Let me check."),
    block_stop(0),
    block_start(1, {"type": "tool_use", "id": "toolu_01A", "name": "weather", "input": {}}),
    json_delta(1, '{"city": "Os'),
    msg_start("msg_01B"),
    block_start(0, {"type": "text", "text": ""}),
    text_delta(0, "Hello from another answer"),
    block_stop(0),
    msg_delta(),
    MSG_STOP,
]


def _spliced_rejected(o: dict[str, Any]) -> bool:
    err = _err(o)
    return (
        err.get("name") == "AI_APICallError"
        and err.get("statusCode") == 200
        and err.get("isRetryable") is False
        and o.get("causeName") == "AI_InvalidResponseDataError"
        and 'while message "msg_01A" is still open' in err.get("message", "")
        and o["text"] == "Let me check."
        and o["toolCalls"] == []
    )


REAL_STREAMS: list[Case] = [
    # the AI SDK's recorded chunk files, plain and gzip-compressed
    *A("fx-anthropic-text", fixture_chunks("anthropic-text")),
    *A("fx-anthropic-tool-no-args", fixture_chunks("anthropic-tool-no-args"), tools=True),
    *A("fx-anthropic-refusal", fixture_chunks("anthropic-refusal")),
    *A("fx-anthropic-delta-input-tokens", fixture_chunks("anthropic-message-delta-input-tokens")),
    # its second message: a tool call and the stop reason inside message_start, nothing else (its
    # first holds a server-run tool: provider-executed tools are not reported yet, issue 27)
    *A(
        "fx-anthropic-programmatic-message-2",
        fixture_chunks("anthropic-programmatic-tool-calling.1", slice(167, 169)),
        tools=True,
    ),
    # provider-run tools, sources, citations and compaction: stream (plain and gzip) and the
    # same answer's non-stream message
    *(
        case
        for fx, how in PROVIDER_RUN_FIXTURES.items()
        for case in (
            *A(
                f"fx-{fx}",
                fixture_chunks(fx, how.get("lines", slice(None))),
                tools=how.get("tools", False),
                provider_tools=how.get("provider_tools", {}),
                **how.get("stream", {}),
            ),
            Case(
                f"fx-{fx}-gen",
                "gen",
                [J(fixture_message(fx))],
                provider="anthropic",
                tools=how.get("tools", False),
                provider_tools=how.get("provider_tools", {}),
            ),
        )
    ),
    G(
        "g-openai-url-citations",
        J(completion({"content": "See the docs.", "annotations": URL_CITATIONS})),
    ),
    S(
        "s-openai-url-citations",
        E(
            [
                ch({"role": "assistant", "content": "See"}),
                ch({"content": " the docs.", "annotations": URL_CITATIONS[:1]}),
                ch({"annotations": URL_CITATIONS[1:]}, "stop"),
            ]
        ),
    ),
    Case(
        "fx-anthropic-text-deflate",
        "stream",
        [anthropic_stream(fixture_chunks("anthropic-text"), "deflate")],
        provider="anthropic",
    ),
    S(
        "fx-azure-model-router-deflate",
        sse_reply(fixture_chunks("azure-model-router.1"), encoding="deflate"),
    ),
    *O("fx-openai-text", fixture_chunks("openai-text")),
    *O("fx-azure-model-router", fixture_chunks("azure-model-router.1")),
    # what message_start holds
    *A(
        "ms-tool-call-then-deltas",
        [
            msg_start(content=[ROLL_DIE]),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Rolling."),
            block_stop(0),
            msg_delta("tool_use"),
            MSG_STOP,
        ],
        tools=True,
    ),
    *A(
        "ms-stop-reason-only",
        [
            msg_start(stop="max_tokens", usage={"input_tokens": 9, "output_tokens": 0}),
            MSG_STOP,
        ],
    ),
    *A(
        "ms-stop-reason-then-delta",
        [
            msg_start(stop="end_turn"),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Hi"),
            block_stop(0),
            msg_delta("max_tokens", 7),
            MSG_STOP,
        ],
    ),
    *A(
        "ms-cache-usage",
        [
            msg_start(
                usage={
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 1,
                }
            ),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "cached"),
            block_stop(0),
            msg_delta("end_turn", 3),
            MSG_STOP,
        ],
    ),
    *A(
        "ms-output-tokens-only-in-start",
        [
            msg_start(
                content=[ROLL_DIE],
                stop="tool_use",
                usage={"input_tokens": 40, "output_tokens": 17},
            ),
            MSG_STOP,
        ],
        tools=True,
        expect="better:start-output-tokens",
        check=lambda o: o["usage"] == [40, 17, 57] and o["finishReason"] == "tool-calls",
    ),
    *A(
        "ms-stop-reason-then-null-delta",
        [
            msg_start(stop="end_turn"),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "Hi"),
            block_stop(0),
            msg_delta(None, 4),
            MSG_STOP,
        ],
        expect="better:null-stop-keeps-start",
        check=lambda o: o["finishReason"] == "stop",
    ),
    # the open message's start again (same id): ignored by both
    *A(
        "ms-repeated-same-id",
        [
            msg_start("msg_same"),
            block_start(0, {"type": "text", "text": ""}),
            text_delta(0, "one "),
            msg_start("msg_same"),
            text_delta(0, "answer"),
            block_stop(0),
            msg_delta(),
            MSG_STOP,
        ],
    ),
    # another message's start while the first is open: rejected
    *A(
        "ms-spliced",
        SPLICED,
        tools=True,
        expect="better:bad-chunk-status",
        check=_spliced_rejected,
    ),
]
CASES += REAL_STREAMS


# -- running the AI SDK --------------------------------------------------------------------------

SCRIPT = r"""
import { readFileSync } from 'node:fs';
import { generateText, streamText, tool, jsonSchema } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic, anthropic } from '@ai-sdk/anthropic';
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const KEY = process.env.KEY;
const tools = Object.fromEntries(JSON.parse(process.env.TOOLS).map(
  n => [n, tool({ description: n, inputSchema: jsonSchema({ type: 'object' }) })]));
function summary(e) {
  if (e == null || typeof e !== 'object') return { name: typeof e, message: String(e) };
  const one = x => ({ name: x?.name ?? null, statusCode: x?.statusCode ?? null,
                      isRetryable: x?.isRetryable ?? null, message: String(x?.message ?? '') });
  const out = one(e);
  if (e.name === 'AI_RetryError') { out.reason = e.reason; out.last = one(e.lastError); }
  return out;
}
const u = x => x == null ? null : [x.inputTokens ?? null, x.outputTokens ?? null,
                                   x.totalTokens ?? null];
const call = p => ({ id: p.toolCallId, name: p.toolName, input: p.input,
                     invalid: p.invalid === true, ran: p.providerExecuted === true });
const source = p => [p.sourceType, p.url ?? null, p.title ?? null, p.mediaType ?? null];
const ranResult = p => [p.toolCallId, p.toolName, p.type === 'tool-error'];
for (const c of cases) {
  const model = c.provider === 'anthropic'
    ? createAnthropic({ baseURL: c.url, apiKey: KEY })(c.modelId)
    : createOpenAI({ baseURL: c.url, apiKey: KEY }).chat(c.modelId);
  const ran = Object.fromEntries(Object.entries(c.providerTools).map(
    ([name, [factory]]) => [name, anthropic.tools[factory]({})]));
  const all = { ...(c.tools ? tools : {}), ...ran };
  const common = { model, prompt: 'hi', maxRetries: c.maxRetries,
    tools: Object.keys(all).length ? all : undefined,
    abortSignal: c.timeoutMs ? AbortSignal.timeout(c.timeoutMs) : undefined };
  const out = { name: c.name, text: '', finishReason: null, usage: null, toolCalls: [],
                response: null, error: null, sources: [], ranResults: [] };
  const take = p => {
    if (p.type === 'source') out.sources.push(source(p));
    else if ((p.type === 'tool-result' || p.type === 'tool-error') && p.providerExecuted)
      out.ranResults.push(ranResult(p));
  };
  if (c.kind === 'gen') {
    try {
      const r = await generateText(common);
      out.text = r.text; out.finishReason = r.finishReason; out.usage = u(r.usage);
      out.toolCalls = r.content.filter(p => p.type === 'tool-call').map(call);
      r.content.forEach(take);
      out.response = { id: r.response?.id ?? null, modelId: r.response?.modelId ?? null };
    } catch (e) { out.error = summary(e); }
  } else {
    try {
      const r = streamText({ ...common, onError: () => {} });
      for await (const p of r.fullStream) {
        if (p.type === 'text-delta') { if (!out.error) out.text += p.text; }
        else if (p.type === 'tool-call') out.toolCalls.push(call(p));
        else if (p.type === 'source' || p.type === 'tool-result' || p.type === 'tool-error')
          take(p);
        else if (p.type === 'error') { if (!out.error) out.error = summary(p.error); }
        else if (p.type === 'finish') { out.finishReason = p.finishReason;
                                        out.usage = u(p.totalUsage); }
      }
      try { const resp = await r.response;
            out.response = { id: resp?.id ?? null, modelId: resp?.modelId ?? null }; }
      catch (e) { /* no response after an error */ }
    } catch (e) { if (!out.error) out.error = summary(e); }
  }
  console.log(JSON.stringify(out));
}
"""


@dataclass
class Servers:
    main: ScenarioServer
    other: ScenarioServer


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with serve_scenarios() as main, serve_scenarios() as other:
        yield Servers(main, other)


def _register(srv: Servers, case: Case, peer: str) -> str:
    name = f"{peer}-{case.name}"
    replies = []
    for r in case.replies:
        headers = {k: v.replace("{case}", name) for k, v in r.headers.items()}
        if case.redirect_elsewhere is not None and 300 <= r.status < 400:
            headers["location"] = f"{srv.other.url(name)}/chat/completions"
        replies.append(Reply(r.status, r.body, headers, r.content_type))
    if case.redirect_elsewhere is not None:
        srv.other.add(name, json_reply(completion({"content": "elsewhere"})))
    return srv.main.add(name, *replies)


@pytest.fixture(scope="module")
def peers_installed() -> None:
    if (
        NODE is None
        or not (PEERS / "ai" / "package.json").exists()
        or not (PEERS / "@ai-sdk" / "openai" / "package.json").exists()
    ):
        pytest.fail("needs node and the AI SDK peers: run `make peers` (make test does)")


@pytest.fixture(scope="module")
def theirs(
    servers: Servers, peers_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Every case through the AI SDK, in one node process: name → its outcome."""
    work = tmp_path_factory.mktemp("aisdk-diff")
    (work / "node_modules").symlink_to(PEERS)
    (work / "package.json").write_text('{"type": "module"}')
    (work / "diff.mjs").write_text(SCRIPT)
    cases = [
        {
            "name": c.name,
            "kind": c.kind,
            "url": _register(servers, c, "ai"),
            "maxRetries": c.max_retries,
            "tools": c.tools,
            "timeoutMs": c.timeout_ms,
            "provider": c.provider,
            "modelId": _model_id(c),
            "providerTools": c.provider_tools,
        }
        for c in CASES
    ]
    (work / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "KEY": CANARY, "TOOLS": json.dumps(TOOL_NAMES)}
    assert NODE is not None
    out = {}
    for item in run_node_json_lines(work, ["diff.mjs", "cases.json"], env, timeout=120):
        name = item.pop("name")
        item["attempts"] = servers.main.count(f"ai-{name}")
        if servers.other.count(f"ai-{name}") or any(
            c.redirect_elsewhere for c in CASES if c.name == name
        ):
            item["elsewhere"] = servers.other.count(f"ai-{name}")
        out[name] = item
    return out


# -- running aimux-ops ---------------------------------------------------------------------------


def _summary_of(env: dict[str, Any]) -> dict[str, Any]:
    def one(node: dict[str, Any]) -> dict[str, Any]:
        err = node.get("error") or {}
        return {
            "name": err.get("name"),
            "statusCode": err.get("statusCode"),
            "isRetryable": err.get("isRetryable"),
            "message": node.get("message", ""),
        }

    out = one(env)
    if out["name"] == "AI_RetryError":
        out["reason"] = env["error"].get("reason")
        out["last"] = one(env["error"]["errors"][-1])
    return out


def _call_out(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": c["toolCallId"],
        "name": c["toolName"],
        "input": c.get("input"),
        "invalid": bool(c.get("invalid")),
        "ran": bool(c.get("providerExecuted")),
    }


def _take(out: dict[str, Any], part: dict[str, Any]) -> None:
    """A source or a provider-run tool's result, as the peer's script collects them."""
    if part["type"] == "source":
        out["sources"].append(
            [part["sourceType"], part.get("url"), part.get("title"), part.get("mediaType")]
        )
    elif part["type"] in ("tool-result", "tool-error") and part.get("providerExecuted"):
        out["ranResults"].append(
            [part["toolCallId"], part["toolName"], part["type"] == "tool-error"]
        )


def _model_id(case: Case) -> str:
    return CLAUDE if case.provider == "anthropic" else "gpt-4o-mini"


def ours(srv: Servers, case: Case) -> dict[str, Any]:
    url = _register(srv, case, "ax")
    p: dict[str, Any] = {
        "model": {
            "provider": case.provider,
            "modelId": _model_id(case),
            "baseURL": url,
            "apiKey": CANARY,
        },
        "prompt": "hi",
        "maxRetries": case.max_retries,
    }
    if case.timeout_ms:
        p["timeoutMs"] = case.timeout_ms
    if case.tools:
        p["tools"] = {n: {"description": n, "inputSchema": {"type": "object"}} for n in TOOL_NAMES}
    for name, (_factory, tool_id) in case.provider_tools.items():
        p.setdefault("tools", {})[name] = {"type": "provider", "id": tool_id}
    out: dict[str, Any] = {
        "text": "",
        "finishReason": None,
        "usage": None,
        "toolCalls": [],
        "response": None,
        "error": None,
        "sources": [],
        "ranResults": [],
    }
    env: dict[str, Any] | None = None
    if case.kind == "gen":
        result, raw_env = call_json("generate_text", orjson.dumps(p))
        if raw_env:
            env = orjson.loads(raw_env)
        else:
            r = orjson.loads(result or b"null")
            usage = r["usage"]
            out.update(
                text=r["text"],
                finishReason=r["finishReason"],
                usage=[usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]],
                toolCalls=[_call_out(c) for c in r["toolCalls"]],
                response=r["response"],
            )
            for part in r.get("content") or ():
                _take(out, part)
    else:
        handle, raw_env = stream_json("stream_text", orjson.dumps(p))
        if handle is None:
            env = orjson.loads(raw_env or b"null")
        else:
            try:
                while True:
                    event, err = stream_next_json(handle)
                    assert err is None
                    if event is None:
                        break
                    e = orjson.loads(event)
                    if e["type"] == "text-delta":
                        out["text"] += e["text"]
                    elif e["type"] == "tool-call":
                        out["toolCalls"].append(_call_out(e))
                    elif e["type"] in ("source", "tool-result", "tool-error"):
                        _take(out, e)
                    elif e["type"] == "error":
                        env = e["error"]
                    elif e["type"] == "finish":
                        usage = e["usage"]
                        out.update(
                            finishReason=e["finishReason"],
                            usage=[
                                usage["inputTokens"],
                                usage["outputTokens"],
                                usage["totalTokens"],
                            ],
                            response=e.get("response"),
                        )
            finally:
                stream_free(handle)
    if env is not None:
        out["error"] = _summary_of(env)
        cause = env.get("cause") or {}
        out["causeStatus"] = (cause.get("error") or {}).get("statusCode")
        out["causeName"] = (cause.get("error") or {}).get("name")
    out["attempts"] = srv.main.count(f"ax-{case.name}")
    if case.redirect_elsewhere is not None:
        out["elsewhere"] = srv.other.count(f"ax-{case.name}")
    return out


# -- comparing -----------------------------------------------------------------------------------


def _norm_input(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def comparable(o: dict[str, Any], case: Case) -> dict[str, Any]:
    """The compared view of one outcome (the peer's or ours)."""
    err = o["error"]
    out: dict[str, Any] = {"attempts": o["attempts"], "text": o["text"]}
    if err is not None:
        keep = ("name", "statusCode", "isRetryable", "message", "reason")
        out["error"] = {k: err.get(k) for k in keep if k in err}
        if "last" in err:
            out["error"]["last"] = {k: err["last"].get(k) for k in keep}
        return out
    out["finishReason"] = o["finishReason"]
    out["usage"] = o["usage"]
    out["toolCalls"] = [
        {
            "name": c["name"],
            "input": _norm_input(c["input"]),
            "invalid": c["invalid"],
            **({"id": c["id"]} if case.ids else {}),
            **({"ran": True} if c.get("ran") else {}),
        }
        for c in o["toolCalls"]
    ]
    if o.get("sources"):
        out["sources"] = o["sources"]
    if o.get("ranResults"):
        out["ranResults"] = o["ranResults"]
    return out


def _response_agrees(mine: dict[str, Any], their: dict[str, Any]) -> bool:
    """Where we report a response id / model, it is the one the AI SDK reports (it invents
    one where the wire has none; we report null)."""
    if mine.get("error") is not None or mine.get("response") is None:
        return True
    r, t = mine["response"], their.get("response") or {}
    return all(r.get(k) is None or r.get(k) == t.get(k) for k in ("id", "modelId"))


def _design_keys() -> set[str]:
    text = DESIGN.read_text()
    return {
        line.split("`")[1]
        for line in text.splitlines()
        if line.startswith("| `") and line.count("`") >= 2
    }


def _difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The keys the two outcomes disagree on, each value cut to a readable length."""
    lines = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, list) and isinstance(y, list) and x != y:
            at = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), None)
            if at is None:
                at = min(len(x), len(y))
            x, y = (
                [f"{len(x)} items; at [{at}]:", *x[at : at + 1]],
                [f"{len(y)} items", *y[at : at + 1]],
            )
        if a.get(key) != b.get(key):
            a, b = {**a, key: x}, {**b, key: y}
            lines.append(
                f"{key}:\n  ours:   {str(a.get(key))[:600]}\n  theirs: {str(b.get(key))[:600]}"
            )
    return "\n" + "\n".join(lines)


TALLY: dict[str, int] = {"same": 0, "better": 0, "differs": 0}


def summary_line() -> str:
    """The tally (``tests/conftest.py`` writes it in pytest's terminal summary)."""
    return (
        f"AI SDK differential: {sum(TALLY.values())} of {len(CASES)} cases passed: "
        f"{TALLY['same']} same, {TALLY['better']} better, "
        f"{TALLY['differs']} different-with-reason"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_against_the_ai_sdk(
    servers: Servers, theirs: dict[str, dict[str, Any]], case: Case
) -> None:
    their = theirs[case.name]
    mine = ours(servers, case)
    a, b = comparable(mine, case), comparable(their, case)
    if "elsewhere" in mine:
        a["elsewhere"], b["elsewhere"] = mine["elsewhere"], their.get("elsewhere")
    if case.expect == "same":
        assert _response_agrees(mine, their), (mine, their)
        assert a == b, _difference(a, b)
        TALLY["same"] += 1
        return
    kind, _, key = case.expect.partition(":")
    assert key in _design_keys(), f"{key} is not in the DESIGN.md table"
    assert a != b, f"listed as a difference but the peers agree now: {a}"
    assert case.check is not None and case.check({**mine, **a}), f"\nours:   {a}\ntheirs: {b}"
    if os.environ.get("AIMUX_DIFF_SHOW"):
        print(f"\n{case.name}\n  ours:   {a}\n  theirs: {b}")
    TALLY[kind] += 1
