"""atheris: the provider's response parsing and the recording reader, fed from a fuzzed recording.

Input: the bytes of a recording file (seeded with the shipped ``recordings/demo.jsonl`` records and
variants of their responses: error statuses, bodies of the wrong shape, cut streams, error frames,
tool calls). The harness writes it to a scratch file and replays ``generate_text`` and
``stream_text`` from it with the demo params — no network. A mutated response exercises the
OpenAI wire parsing (status mapping, JSON / shape errors, SSE events, tool-call assembly, retry
over recorded attempts); a mutated line exercises the recording errors (corrupt, unsupported
schema, no match). Every answer must be a valid result / event / envelope (``common``).
Run: ``python fuzz/fuzz_replay.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["aimux_ops"]):
    from aimux_ops.boundary import dispatch

import common
import orjson

PATH = common.SCRATCH / "replay.jsonl"


def params(op: str) -> bytes:
    return orjson.dumps({
        "model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": common.CLOSED},
        "prompt": "Say hello in one word.",
        "maxRetries": 2, "retry": {"initialDelayMs": 0, "backoffFactor": 0},
        "timeoutMs": 5000,
        "recording": {"mode": "replay", "path": str(PATH)},
    })


GENERATE, STREAM = params("generate_text"), params("stream_text")


def TestOneInput(data: bytes) -> None:
    PATH.write_bytes(data)
    result, env = dispatch.call_json("generate_text", GENERATE)
    common.check_reply("generate_text", result, env)
    common.drain_stream("stream_text", STREAM, 500)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    try:
        atheris.Fuzz()
    finally:
        common.cleanup()


if __name__ == "__main__":
    main()
