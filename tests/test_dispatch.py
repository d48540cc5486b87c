"""The dispatch boundary: wire errors, protocol errors, op modes, the stream-handle registry."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import assert_valid_envelope
from op_calls import wait_blocked_reader
from pydantic import BaseModel, ConfigDict

import aimux_ops
from aimux_ops import errors as E
from aimux_ops.boundary.dispatch import (
    call_json,
    stream_cancel,
    stream_free,
    stream_json,
    stream_next_json,
)
from aimux_ops.ops import registry


def env_of(reply: tuple[Any, bytes | None]) -> dict[str, Any]:
    result, envelope = reply
    assert result is None and envelope is not None
    return assert_valid_envelope(envelope)


class TickParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = 3
    fail_at: int | None = None
    block: bool = False


@pytest.fixture()
def tick_op() -> Iterator[threading.Event]:
    """A real stream op registered for the test: yields ``count`` events; can fail mid-stream
    or block until cancelled (the way a stalled network read blocks)."""
    woke = threading.Event()

    def handler(params: TickParams, ctx: registry.StreamContext) -> Iterator[dict[str, Any]]:
        for i in range(params.count):
            if params.fail_at == i:
                try:
                    raise ConnectionResetError(104, "Connection reset by peer")
                except ConnectionResetError as exc:
                    raise E.APICallError("stream cut", status_code=200, is_retryable=False) from exc
            if params.block and i == 1:
                # a stream op blocks its reader's thread: a cancel ends the wait
                if ctx.cancelled.wait(60):  # the bound only ends a broken run
                    woke.set()
                return
            yield {"type": "text-delta", "text": str(i)}
        yield {"type": "finish", "finishReason": "stop"}

    registry.register_op("test.tick", mode="stream", params=TickParams)(handler)
    yield woke
    registry.unregister_op("test.tick")


def test_version_and_manifest() -> None:
    result, err = call_json("aimux.version", b"{}")
    assert err is None and orjson.loads(result or b"") == {
        "name": "aimux-ops",
        "version": aimux_ops.__version__,
        "abiVersion": 1,
    }
    manifest = aimux_ops.call("aimux.manifest", {})
    codes = {(e["kind"], e["code"], e["name"]) for e in manifest["errors"]}
    assert ("aimux", 11, "AI_APICallError") in codes and (
        "protocol",
        302,
        "WrongModeError",
    ) in codes
    assert ("aimux", 3, "AI_TypeValidationError") in codes and (
        "aimux",
        3,
        "AI_InvalidResponseDataError",
    ) in codes
    assert 4 in manifest["retiredCodes"] and all(e["code"] != 4 for e in manifest["errors"])
    codes_by_domain = {(e["code"], e["name"]) for e in manifest["errors"]}
    assert len(codes_by_domain) == len(manifest["errors"])
    for op in manifest["ops"]:
        assert op["mode"] in ("call", "stream") and op["params"]["type"] == "object"


@pytest.mark.parametrize(
    ("op", "params", "kind", "code"),
    [
        ("aimux.version", b"{", "binding", 202),
        ("aimux.version", b"", "binding", 202),
        ("aimux.version", b"\xff\xfe{}", "binding", 201),
        (b"aimux.\xffversion", b"{}", "binding", 201),
        (None, b"{}", "binding", 204),
        ("aimux.version", None, "binding", 204),
        ("no.such.op", b"{}", "protocol", 300),
        ("", b"{}", "protocol", 300),
        ("aimux.version", b"[]", "protocol", 301),
        ("aimux.version", b'{"x": 1}', "protocol", 301),
    ],
)
def test_wire_and_protocol_errors(op: Any, params: Any, kind: str, code: int) -> None:
    env = env_of(call_json(op, params))
    assert (env["kind"], env["code"]) == (kind, code)
    assert env["retryable"] is False


def test_invalid_json_keeps_the_decoder_error() -> None:
    env = env_of(call_json("aimux.version", b'{"a": tru}'))
    assert env["cause"]["type"] == "orjson.JSONDecodeError" and "line 1" in env["cause"]["message"]


def test_invalid_params_lists_every_violation_without_values() -> None:
    secretish = "sk-should-not-appear-0123456789"
    env = env_of(call_json("aimux.version", orjson.dumps({"a": secretish, "b": [1], "c": None})))
    violations = env["error"]["violations"]
    assert {v["path"] for v in violations} == {"a", "b", "c"}
    assert all(v["reason"] == "Extra inputs are not permitted" for v in violations)
    assert env["cause"]["type"] == "pydantic_core.ValidationError"
    for path in ("a", "b", "c"):
        assert f"{path}: Extra inputs" in env["cause"]["message"]
    assert secretish not in orjson.dumps(env).decode()


def test_huge_params_are_answered() -> None:
    big = b'{"x": "' + b"a" * (100 * 1024 * 1024) + b'"}'
    env = env_of(call_json("aimux.version", big))
    assert env["code"] == 301


def test_unexpected_exception_is_internal_with_its_chain() -> None:
    def broken(params: Any) -> Any:
        try:
            {}["missing"]
        except KeyError as exc:
            raise RuntimeError("op blew up") from exc

    registry.register_op("test.broken", mode="call", params=TickParams)(broken)
    try:
        env = env_of(call_json("test.broken", b"{}"))
    finally:
        registry.unregister_op("test.broken")
    assert env["code"] == 208 and env["cause"]["type"] == "RuntimeError"
    assert env["cause"]["cause"] == {"message": "'missing'", "type": "KeyError"}


def test_unserializable_result_is_205() -> None:
    registry.register_op("test.unserializable", mode="call", params=TickParams)(
        lambda p: {"x": object()}
    )
    try:
        env = env_of(call_json("test.unserializable", b"{}"))
    finally:
        registry.unregister_op("test.unserializable")
    assert env["code"] == 205 and env["cause"]["type"] == "TypeError"


def test_wrong_mode_both_ways(tick_op: threading.Event) -> None:
    env = env_of(call_json("test.tick", b"{}"))
    assert (env["code"], env["error"]["expected"]) == (302, "stream")
    handle, err = stream_json("aimux.version", b"{}")
    assert handle is None and err is not None
    assert assert_valid_envelope(err)["error"]["expected"] == "call"


def test_stream_events_then_end_then_stale(tick_op: threading.Event) -> None:
    handle, err = stream_json("test.tick", b'{"count": 2}')
    assert err is None and handle is not None
    events = []
    while True:
        event, err = stream_next_json(handle)
        assert err is None
        if event is None:
            break
        events.append(orjson.loads(event))
    assert [e["type"] for e in events] == ["text-delta", "text-delta", "finish"]
    assert stream_next_json(handle) == (None, None)
    stream_free(handle)
    event, err = stream_next_json(handle)
    assert event is None and assert_valid_envelope(err or b"")["code"] == 203
    stream_free(handle)  # double free: harmless
    stream_cancel(handle)


def test_handles_are_never_reused(tick_op: threading.Event) -> None:
    seen = set()
    for _ in range(50):
        handle, _ = stream_json("test.tick", b'{"count": 0}')
        assert handle not in seen
        seen.add(handle)
        stream_free(handle or 0)
    for bogus in (0, 2**64 - 1, -1, max(seen) + 10_000):
        assert env_of(stream_next_json(bogus))["code"] == 203


def test_failure_mid_stream_is_one_terminal_error_event(tick_op: threading.Event) -> None:
    events = list(aimux_ops.stream("test.tick", {"count": 3, "fail_at": 2}))
    assert [e["type"] for e in events] == ["text-delta", "text-delta", "error"]
    env = assert_valid_envelope(events[-1]["error"])
    assert env["error"]["statusCode"] == 200
    assert env["cause"]["type"] == "ConnectionResetError"


def test_failure_before_first_event_raises(tick_op: threading.Event) -> None:
    with pytest.raises(E.APICallError) as info:
        aimux_ops.stream("test.tick", {"count": 3, "fail_at": 0})
    assert isinstance(info.value.__cause__, E.SourceError)


def test_cancel_wakes_a_blocked_next(tick_op: threading.Event) -> None:
    handle, _ = stream_json("test.tick", b'{"count": 5, "block": true}')
    assert handle is not None
    assert orjson.loads(stream_next_json(handle)[0] or b"")["text"] == "0"
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(stream_next_json(handle)))
    t.start()
    wait_blocked_reader(handle)  # the read waits on the blocked op (not a head-start sleep)
    assert t.is_alive(), "next should block"
    stream_cancel(handle)
    t.join(60)
    assert not t.is_alive() and result == [(None, None)]
    assert tick_op.is_set()
    stream_free(handle)


def test_python_stream_close_frees_the_handle(tick_op: threading.Event) -> None:
    it = aimux_ops.stream("test.tick", {"count": 10})
    first = next(it)
    assert first["type"] == "text-delta"
    it.close()  # type: ignore[attr-defined]
    # the next handle is fresh; the old one is stale
    handle, _ = stream_json("test.tick", b"{}")
    assert env_of(stream_next_json((handle or 2) - 1))["code"] == 203
    stream_free(handle or 0)


def test_concurrent_calls_from_threads() -> None:
    errors: list[str] = []

    def work(i: int) -> None:
        for j in range(200):
            if (i + j) % 3 == 0:
                r, e = call_json("no.such", b"{}")
                if e is None or orjson.loads(e)["code"] != 300:
                    errors.append("300")
            else:
                r, e = call_json("aimux.version", b"{}")
                if r is None or orjson.loads(r)["abiVersion"] != 1:
                    errors.append("version")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("bad", [{"x": {1, 2}}, {"x": "\ud800"}, {"x": 2**70}])
def test_python_params_that_cannot_be_json_are_202(bad: Any) -> None:
    with pytest.raises(E.InvalidWireJSONError) as info:
        aimux_ops.call("aimux.version", bad)
    assert isinstance(info.value.__cause__, E.SourceError)


def test_non_string_op_is_unknown() -> None:
    with pytest.raises(E.UnknownOpError):
        aimux_ops.call(123, {})  # type: ignore[arg-type]


def test_python_stream_events_equal_the_wire_events() -> None:
    """The Python binding hands over the op's event dicts without a JSON round trip: they must be
    exactly what every other binding parses from the wire."""
    from helpers import demo_replay_params

    p = demo_replay_params()
    in_process = list(aimux_ops.stream("stream_text", p))
    handle, err = stream_json("stream_text", orjson.dumps(p))
    assert err is None and handle is not None
    wire = []
    while (event := stream_next_json(handle)[0]) is not None:
        wire.append(orjson.loads(event))
    stream_free(handle)
    assert in_process == wire
    assert [e["type"] for e in wire] == ["text-delta", "text-delta", "finish"]


def test_precomputed_version_is_what_the_op_answers() -> None:
    """dispatch answers aimux.version {} without loading the op: the bytes must be the op's."""
    from aimux_ops.boundary import dispatch
    from aimux_ops.ops import meta

    spec = registry.get_op("aimux.version")
    assert spec is not None and spec.handler is meta.version
    assert dispatch._VERSION == orjson.dumps(spec.handler(spec.params()))
    assert dispatch.call_json(b"aimux.version", b"{}") == (dispatch._VERSION, None)


def test_ops_load_lazily_in_the_declared_order() -> None:
    """A fresh interpreter: importing dispatch loads no op module, pydantic or httpx; aimux.version
    answers without them; all_ops lists the ops in the declared order whatever loaded first."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from aimux_ops.boundary import dispatch\n"
        "assert dispatch.call_json(b'aimux.version', b'{}')[1] is None\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pydantic', 'httpx', 'jsonschema')"
        " or m.startswith(('aimux_ops.ops.generate', 'aimux_ops.ops.meta', 'aimux_ops.errors'))]\n"
        "assert not heavy, heavy\n"
        "assert dispatch.call_json(b'aimux.version', b'{ }')[1] is None\n"
        "from aimux_ops.ops import all_ops\n"
        "print(','.join(s.name for s in all_ops()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "generate_text,generate_object,stream_text,aimux.version,aimux.manifest"
    )
