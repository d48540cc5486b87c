"""The error path of a call: an unknown op or a wrong mode is the error its constructor builds,
with the registry's op names as they are at the call, projected once by ``envelope.project``
(the same envelope whether or not an exception is being handled), and no remembered secret in
it."""

from __future__ import annotations

import pickle
import sys
import threading

import orjson
import pytest
from pydantic import BaseModel

from aimux_ops.boundary import dispatch
from aimux_ops.errors import UnknownOpError, WrongModeError
from aimux_ops.ops import registry
from aimux_ops.wire.envelope import project
from aimux_ops.wire.redact import remember_secret


def _names() -> list[str]:
    return list(dispatch._op_names())


def _same(a: UnknownOpError, b: UnknownOpError) -> None:
    assert type(a) is type(b)
    # pickled before the payload view exists (a view's model class does not pickle, either way)
    c, d = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))
    assert (repr(c), c.available_ops, project(c)) == (repr(d), d.available_ops, project(d))
    assert (a.op, a.available_ops, a.message, str(a), repr(a), a.args) == (
        b.op,
        b.available_ops,
        b.message,
        str(b),
        repr(b),
        b.args,
    )
    assert a.payload.model_dump() == b.payload.model_dump()
    assert a.payload.model_fields_set == b.payload.model_fields_set
    assert a.payload_fields() == b.payload_fields()
    assert project(a) == project(b)


@pytest.mark.parametrize("op", ["no.such.op", "", "x" * 300, "naïve.op"])
def test_unknown_op_error_is_the_constructors(op: str) -> None:
    with pytest.raises(UnknownOpError) as raised:
        dispatch._resolve(op, "call")
    shown = op[:200]
    built = UnknownOpError(f"unknown op {shown!r}", op=shown, available_ops=_names())
    _same(raised.value, built)
    # its own list: changing it changes neither the registry's names nor another error's
    raised.value.available_ops.append("changed")  # type: ignore[union-attr]
    assert "changed" not in _names()


def test_list_fields_checked_inline_as_before() -> None:
    names = _names()
    kept = UnknownOpError("m", available_ops=names)
    assert kept.available_ops == names and kept.available_ops is not names
    assert UnknownOpError("m", available_ops=[]).available_ops == []

    class Text(str):
        pass

    # an item of another type still goes through the payload model (coerced as before)
    odd = UnknownOpError("m", available_ops=[Text("a"), "b"])
    assert odd.available_ops == ["a", "b"]
    assert [type(x) for x in odd.available_ops] == [str, str]  # type: ignore[union-attr]


@pytest.mark.parametrize("op", ["no.such.op", b"no.such.op", "stream_text", b"stream_text"])
def test_same_envelope_raised_or_not(op: str | bytes) -> None:
    quiet = dispatch.call_json(op, b"{}")
    try:
        raise KeyError("the host's own")
    except KeyError:
        handled = dispatch.call_json(op, b"{}")  # raised: records the KeyError as __context__
    assert quiet == handled
    assert quiet[0] is None and quiet[1] is not None
    env = orjson.loads(quiet[1])
    expected = UnknownOpError if op in ("no.such.op", b"no.such.op") else WrongModeError
    assert env["code"] == expected.code
    assert env["error"]["name"] == expected.error_name


def test_wrong_mode_still_raised_by_resolve() -> None:
    with pytest.raises(WrongModeError) as raised:
        dispatch._resolve("stream_text", "call")
    assert raised.value.op == "stream_text" and raised.value.expected == "stream"


class _NoParams(BaseModel):
    pass


def _names_in(env: bytes | None) -> list[str]:
    assert env is not None
    return orjson.loads(env)["error"]["availableOps"]  # type: ignore[no-any-return]


def test_the_op_names_follow_the_registry() -> None:
    assert "zz.error_path.test" not in _names_in(dispatch.call_json("nope-1", b"{}")[1])
    registry.register_op("zz.error_path.test", mode="call", params=_NoParams)(lambda p: {})
    try:
        assert "zz.error_path.test" in _names_in(dispatch.call_json("nope-2", b"{}")[1])
    finally:
        registry.unregister_op("zz.error_path.test")
    assert "zz.error_path.test" not in _names_in(dispatch.call_json("nope-3", b"{}")[1])


def test_the_op_names_are_read_while_another_thread_registers() -> None:
    """``all_ops`` (the op names' source) copies the registry's dicts before it iterates: another
    thread's registration in between failed the call with "dictionary changed size during
    iteration" (a 208), about one call in a hundred here before the copy; and the sorted names
    kept for the next unknown op are never those of a change still under way."""
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            registry.register_op(f"zz.race.{i % 50}", mode="call", params=_NoParams)(dict)
            registry.unregister_op(f"zz.race.{(i + 25) % 50}")
            i += 1

    failures = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(20000):
            try:
                registry.all_ops()
            except RuntimeError as exc:
                failures.append(exc)
            dispatch._op_names()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        for i in range(50):
            registry.unregister_op(f"zz.race.{i}")
    assert failures == []
    assert not [n for n in dispatch._op_names() if n.startswith("zz.race.")]


def test_a_pure_op_removed_or_registered_anew_answers_afresh() -> None:
    name = "zz.error_path.pure"
    registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 1})
    try:
        for op in (name, name.encode()):
            assert dispatch.call_json(op, b"{}") == (b'{"v":1}', None)
            assert dispatch.call_json(op, b"{}") == (b'{"v":1}', None)  # the cached result
        registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 2})
        for op in (name, name.encode()):
            assert dispatch.call_json(op, b"{}") == (b'{"v":2}', None)
    finally:
        registry.unregister_op(name)
    for op in (name, name.encode()):
        res, env = dispatch.call_json(op, b"{}")
        assert res is None and orjson.loads(env or b"")["code"] == UnknownOpError.code
    # the precomputed aimux.version answer survives every change of the names
    assert dispatch.call_json(b"aimux.version", b"{}")[0] == dispatch._VERSION


def test_a_remembered_secret_is_never_answered() -> None:
    secret = "canary-answer-0123456789"
    remember_secret(secret)
    for op in (f"no-such-{secret}", f"no.such.{secret}".encode()):
        env = dispatch.call_json(op, b"{}")[1]
        assert env is not None and secret.encode() not in env
        assert b"[REDACTED]" in env
