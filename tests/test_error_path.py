"""The error path's shortcuts (issue 16, DESIGN.md "The error round trip"): an unknown op's
error built from its own values, and projected without a raise when nothing is being handled,
is the same error and the same envelope as the constructor and the raise give."""

from __future__ import annotations

import pickle

import orjson
import pytest

from aimux_ops import dispatch
from aimux_ops.envelope import project
from aimux_ops.errors import UnknownOpError, WrongModeError


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


def test_values_are_the_errors_own() -> None:
    names = _names()
    err = UnknownOpError._of_values("m", {"op": "o", "available_ops": list(names)})
    err.op = "p"
    assert err._values["op"] == "p"
    assert UnknownOpError._of_values("m", {"op": "o"}).available_ops is None
    _same(err, UnknownOpError("m", op="p", available_ops=names))
    assert err.payload.op == "p"


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
