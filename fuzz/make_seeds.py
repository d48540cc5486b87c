"""Write the seed corpora of the fuzzers into <out>/{call_json,decode_error,cabi}/ (one file each):
params of every op (valid, edge and broken), and every contract vector's envelope plus envelopes
the core projects for real failures.  python fuzz/make_seeds.py fuzz/build/seeds
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
OPS = ["generate_text", "stream_text", "generate_object", "aimux.version", "aimux.manifest"]


def params_seeds() -> list[tuple[str, bytes]]:
    model = {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1",
             "apiKey": "sk-fuzz"}
    replay = {"mode": "replay", "path": "recordings/demo.jsonl"}
    docs = [
        {},
        {"model": model, "prompt": "hi"},
        {"model": {**model, "apiKey": None}, "prompt": "Say hello in one word.",
         "recording": replay},
        {"model": model, "messages": [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": "yo"}], "system": "s"},
        {"model": model, "prompt": "hi", "tools": {"weather": {"inputSchema": {
            "type": "object", "properties": {"city": {"type": "string"}}}}},
         "toolChoice": "auto"},
        {"model": model, "prompt": "hi", "schema": {"type": "object"}},
        {"model": model, "prompt": "hi", "maxRetries": 3, "retry": {"initialDelayMs": 1,
                                                                    "backoffFactor": 2}},
        {"model": model, "prompt": "hi", "recording": {"mode": "record", "path": "x.jsonl"}},
        {"model": {"provider": "nope", "modelId": "m"}, "prompt": "hi"},
        {"model": {**model, "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
         "system": "s", "prompt": "hi", "tools": {"weather": {}}, "toolChoice": "required"},
        {"model": {"provider": "anthropic", "modelId": "claude-sonnet-4-5",
                   "baseURL": "http://127.0.0.1:1/v1"}, "prompt": "Say hello in one word.",
         "recording": {"mode": "replay", "path": "recordings/anthropic.jsonl"}},
        {"model": model, "prompt": 5, "temperature": "hot", "maxOutputTokens": -1},
        {"model": model, "prompt": "hi", "messages": []},
    ]
    out: list[tuple[str, bytes]] = []
    for i, op in enumerate(OPS):
        for doc in docs:
            out.append(("call_json", bytes([i]) + orjson.dumps(doc)))
            out.append(("cabi", op.encode() + b"\0" + orjson.dumps(doc)))
    for raw in (b"", b"null", b"[]", b"{", b"\xff\xfe{}", b'{"model": "\xc3\x28"}', b"1e999999"):
        out.append(("call_json", bytes([0]) + raw))
        out.append(("cabi", b"generate_text\0" + raw))
    out.append(("call_json", b"\xf0no.such.op\0{}"))
    out.append(("cabi", b"no.such.op\0{}"))
    out.append(("cabi", b"\xff\xfe\0{}"))
    return out


def envelope_seeds() -> list[tuple[str, bytes]]:
    out = []
    for path in sorted((ROOT / "contract-tests" / "vectors").glob("*.json")):
        vec = orjson.loads(path.read_bytes())
        out.append(("decode_error", orjson.dumps(vec["envelope"])))
        out.append(("cabi", b"decode\0" + orjson.dumps(vec["envelope"])))
    sys.path.insert(0, str(ROOT))
    from aimux_ops.boundary.dispatch import call_json

    for op, params in (("no.such.op", b"{}"), ("generate_text", b"{"),
                       ("generate_text", b'{"model": {"provider": "openai", "modelId": "m", '
                        b'"baseURL": "http://127.0.0.1:1/v1", "apiKey": "k"}, "prompt": "hi", '
                        b'"maxRetries": 1, "retry": {"initialDelayMs": 1}}')):
        _, env = call_json(op, params)
        if env is not None:
            out.append(("decode_error", env))
    # forward compatibility: a kind this version does not know, and nothing at all
    out += [("decode_error", b'{"kind":"future"}'), ("decode_error", b"{}")]
    return out


ERROR_FRAME = '{"error": {"message": "boom", "code": 500}}'


def replay_seeds() -> list[tuple[str, bytes]]:
    """The shipped records, and variants of their responses (what a provider could answer)."""
    lines = [orjson.loads(x) for x in (ROOT / "recordings" / "demo.jsonl").read_bytes().splitlines()
             if x.strip()]
    out = [("replay", orjson.dumps(rec) + b"\n") for rec in lines]
    both = b"".join(orjson.dumps(rec) + b"\n" for rec in lines)
    out.append(("replay", both))

    def variant(rec: dict, **response: object) -> bytes:
        rec = orjson.loads(orjson.dumps(rec))
        for ex in rec.get("exchanges", []):
            if isinstance(ex.get("response"), dict):
                ex["response"].update(response)
        return orjson.dumps(rec) + b"\n"

    for rec in lines:
        resp = (rec.get("exchanges") or [{}])[0].get("response") or {}
        out += [
            ("replay", variant(rec, status=429, headers={"retry-after-ms": "0"},
                               body={"error": {"message": "slow down", "type": "rate_limit"}})),
            ("replay", variant(rec, status=500, bodyText="<html>oops</html>")),
            ("replay", variant(rec, status=200, body={"choices": "none"})),
            ("replay", variant(rec, status=200, bodyText='{"id": "x", "choices": [')),
        ]
        events = resp.get("events")
        if isinstance(events, list):
            out += [
                ("replay", variant(rec, events=events[:-1])),
                ("replay", variant(rec, events=[*events[:2], {"data": ERROR_FRAME}])),
                ("replay", variant(rec, events=[*events[:2], {"data": "{not json"}])),
                ("replay", variant(rec, events=[events[0], {"data": orjson.dumps({
                    "id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{
                        "index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":'}}]}}]}).decode()},
                    events[-1]])),
            ]
    out.append(("replay", b'{"schemaVersion": 99}\n'))
    out.append(("replay", b"not json at all\n"))
    return out


def main() -> None:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "fuzz" / "build" / "seeds")
    for target, data in params_seeds() + envelope_seeds() + replay_seeds():
        d = base / target
        d.mkdir(parents=True, exist_ok=True)
        (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"seeds in {base}")


if __name__ == "__main__":
    main()
