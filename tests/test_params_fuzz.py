"""A params fuzz of the boundary the shim calls (issue 32): valid JSON params drawn from the op's
own JSON Schema (``schema/ops/*.params.schema.json``, walked by ``schema_strategy``: the
hypothesis-jsonschema release of PyPI, 0.23.1, fails on the pinned hypothesis, whose internals it
reads) through
``call_json`` / ``stream_json`` in-process, against a closed local port: never a 208 ("unexpected
… inside the core"), every answer a typed one.

Bounded and seeded (``derandomize``): the examples are the same every run. What is changed of a
drawn params, so that a run neither hangs nor writes outside its temporary folder: a usable
``baseURL`` points at the closed port (the drawn one is kept when it is empty, relative, or of
another scheme: those must be refused), the retry loop is short (``maxRetries`` ≤ 2,
``initialDelayMs`` ≤ 5), and a recording's path is in ``tmp_path``; most draws keep either the
prompt or the messages and get a key (else nearly every one stops at InvalidPromptError).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategy import from_schema

from aimux_ops.boundary.dispatch import call_json, stream_free, stream_json, stream_next_json

SCHEMAS = Path(__file__).resolve().parents[1] / "schema" / "ops"
OPS = {"generate_text": "call", "generate_object": "call", "stream_text": "stream"}


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()  # nothing listens there now: a connect is refused at once
    return port


CLOSED = f"http://127.0.0.1:{_closed_port()}/v1"

#: baseURLs the fuzz keeps as drawn (each must be an invalid argument, never the default origin)
ODD_URLS = ["", "/v1", "v1", "ftp://127.0.0.1/v1", "http://", "http:///v1", " http://x/v1"]


def _params(op: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = json.loads((SCHEMAS / f"{op}.params.schema.json").read_text())
    return from_schema(schema)


def _tamed(params: dict[str, Any], base_url: str | None, shape: str, tmp: Path) -> dict[str, Any]:
    model = params.get("model")
    if isinstance(model, dict):
        model["baseURL"] = CLOSED if base_url is None else base_url
        if shape != "as drawn":
            model.setdefault("apiKey", "sk-fuzz-key-0123456789")
    # most draws hold both a prompt and messages, or neither (InvalidPromptError): keep one
    if shape == "prompt":
        params.pop("messages", None)
        params.setdefault("prompt", "hello")
    elif shape == "messages":
        params.pop("prompt", None)
        params.setdefault("messages", [{"role": "user", "content": "hello"}])
    if isinstance(params.get("maxRetries"), int):
        params["maxRetries"] = min(params["maxRetries"], 2)
    retry = params.get("retry")
    if not isinstance(retry, dict):
        retry = params["retry"] = {}  # (the default waits 2 s, then 4 s)
    delay = retry.get("initialDelayMs")
    retry["initialDelayMs"] = min(delay, 5) if isinstance(delay, (int, float)) else 0
    rec = params.get("recording")
    if isinstance(rec, dict):
        rec["path"] = str(tmp / "rec.jsonl")
    return params


def _code(envelope: bytes) -> int:
    decoded = orjson.loads(envelope)
    code: int = decoded["code"]
    if code == 208:
        print("208:", envelope[:4000].decode())
    return code


def _answer_codes(op: str, params_json: bytes) -> list[int]:
    """Every error code the op answers for ``params_json`` (the call's, or the stream's open,
    its error events and a failed read)."""
    if OPS[op] == "call":
        _result, err = call_json(op, params_json)
        return [] if err is None else [_code(err)]
    handle, err = stream_json(op, params_json)
    if err is not None:
        return [_code(err)]
    assert handle is not None
    codes: list[int] = []
    try:
        for _ in range(10_000):
            event, err = stream_next_json(handle)
            if err is not None:
                codes.append(_code(err))
                break
            if event is None:
                break
            decoded = orjson.loads(event)
            if decoded.get("type") == "error":
                codes.append(decoded["error"]["code"])
    finally:
        stream_free(handle)
    return codes


@pytest.mark.parametrize("op", sorted(OPS))
def test_valid_params_are_never_answered_208(
    op: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp(op)
    seen: dict[int, int] = {}

    @settings(
        max_examples=400,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        params=_params(op),
        base_url=st.one_of(
            st.none(), st.none(), st.none(), st.sampled_from(ODD_URLS), st.text(max_size=12)
        ),
        shape=st.sampled_from(["prompt", "messages", "as drawn"]),
    )
    def run(params: dict[str, Any], base_url: str | None, shape: str) -> None:
        # the stdlib's dump: integers past 64 bits and any nesting are valid JSON too
        params_json = json.dumps(_tamed(params, base_url, shape, tmp), allow_nan=False).encode()
        codes = _answer_codes(op, params_json)
        for code in codes:
            seen[code] = seen.get(code, 0) + 1
        internal = [c for c in codes if c == 208]
        assert not internal, f"208 for valid params of {op}: {params_json[:2000]!r}"

    run()
    print(op, sorted(seen.items()))
    # not vacuous: some draws got through every check to the (closed) port and its retries
    assert seen.get(11, 0) + seen.get(14, 0) > 0, seen
