"""Errors answered from their values (DESIGN.md "Errors answered from their values"): the C
``answer(cls, message, values)`` writes the envelope of ``cls._of_values(message, values)`` and
the shim's packed chain of it without building the error. Each answer is checked against building
the error and projecting it in Python, byte for byte; what C leaves (None) must be what it cannot
write exactly, and ``envelope.answer`` then gives the Python bytes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import partial
from typing import Any

import orjson
import pytest
from test_cproject import PACKED, SECRETS, field_value, json_value, native, needs_c, text
from test_cproject_fast import python_calls

from aimux_ops import dispatch, envelope
from aimux_ops import errors as E
from aimux_ops.envelope import chain_links, chain_packed, project
from aimux_ops.redact import remember_secret

pytestmark = [
    needs_c,
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


@pytest.fixture(autouse=True)
def _secrets() -> Iterator[None]:
    for s in SECRETS:
        remember_secret(s)
    yield
    import conftest

    conftest._problems.clear()  # off-schema values on purpose: both paths project them as given


def python_envelope(cls: type[E.AimuxError], message: str, values: dict[str, Any]) -> bytes:
    saved = envelope._native
    envelope._native = None
    try:
        return project(cls._of_values(message, values))
    finally:
        envelope._native = saved


def check(cls: type[E.AimuxError], message: Any, values: dict[str, Any]) -> bool:
    """C's answer, when it gives one, is the Python projection of the built error and the shim's
    packing of its links; ``envelope.answer`` is those bytes either way. True: C answered."""
    expected = python_envelope(cls, message, values)
    got = native().answer(cls, message, values)
    if got is not None:
        env, packed = got
        assert env == expected, (cls, message, values)
        assert packed == PACKED(chain_links(expected))
    assert envelope.answer(cls, message, values) == expected
    return got is not None


def names(rng: random.Random) -> str:
    """Op names as callers send them: plain, with dashes, quotes, backslashes, control bytes,
    anchors, secrets, non-ASCII, long."""
    pick = rng.randrange(10)
    alphabet = "abcXYZ019._-'\"\\ /:\t\n\x01\x1f\x7f"
    word = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
    if pick == 0:
        return word + "sk-" + "a" * rng.choice((7, 8, 20))
    if pick == 1:
        return word + rng.choice(SECRETS)
    if pick == 2:
        return word + " bearer " + word
    if pick == 3:
        return "é" + word
    if pick == 4:
        return "x" * rng.choice((199, 200, 201, 1100))
    if pick == 5:
        return "https://h.example/" + word
    return word


def test_unknown_ops_and_wrong_modes_answer_as_python() -> None:
    rng = random.Random(1601)
    answered = 0
    for _ in range(3000):
        found = dispatch._look_up(names(rng), rng.choice(("call", "stream")))
        if type(found) is tuple:
            answered += check(*found)
    assert answered > 1500  # most names are answered in C (the check above is not vacuous)


def test_every_class_and_random_values_answer_as_python() -> None:
    rng = random.Random(1602)
    classes = E.catalogue()
    answered: dict[type, int] = {}
    for _ in range(6000):
        cls = rng.choice(classes)
        values = {f: field_value(rng, f) for f in cls._field_names if rng.random() < 0.7}
        if rng.random() < 0.1 and cls._field_names:
            values[rng.choice(cls._field_names)] = json_value(rng)
        if rng.random() < 0.05:
            values["not_a_field"] = "ignored"
        message = text(rng) if rng.random() < 0.8 else names(rng)
        if check(cls, message, values):
            answered[cls] = answered.get(cls, 0) + 1
    assert E.RetryError not in answered and E.TimeoutError not in answered
    assert E.APICallError not in answered  # its retry hooks are its own (the C walk's)
    assert E.UnknownOpError in answered and E.InvalidParamsError in answered
    assert len(answered) > len(classes) // 2


@pytest.mark.parametrize(
    "value",
    [
        2**63 - 1,
        -(2**63),
        2**63,
        2**64,
        -(2**64),
        True,
        False,
        0,
        [],
        [None, True, 1, "a"],
        ["x" * 2700] * 2,
        ["x" * 2729],
        ["x" * 2730],
        ["x" * 10000] * 2,
        ["\x01" * 3000],
        ["\x01" * 2729],
        [-(2**63)] * 800,
        [-(2**63)] * 600,
        ["x" * 3000] * 6,
        ["x"] * 700,
        [1.5],
        [[1]],
        "x" * 16384,
        "x" * 16385,
        '\x00\x7f"\\\b\f\n\r\t\x1b',
        1.0,
        {"a": 1},
    ],
)
def test_edge_values_answer_as_python(value: Any) -> None:
    check(E.UnknownOpError, "m", {"op": value})
    check(E.UnknownOpError, "m", {"available_ops": value})


def test_every_escape_at_every_offset_is_orjsons() -> None:
    """The writer's eight-byte words (and a last, shorter one) around every byte it escapes."""
    for n in range(1, 20):
        for at in range(n):
            for c in ('"', "\\", "\x00", "\x1f", "\n", "\x7f", "a"):
                value = "x" * at + c + "y" * (n - at - 1)
                assert check(E.UnknownOpError, "m", {"op": value})
                assert check(E.UnknownOpError, value.replace("\x00", "z"), {})


def test_escaped_texts_ending_at_every_offset_of_the_buffer() -> None:
    """Texts of escaped bytes and one plain last byte, ending at every offset of the writer's
    first buffer (1 KiB on the stack): the last word is stored whole, and the room asked for
    must hold it (an overrun there, which only ``make test-asan`` sees, was found this way)."""
    for lead in range(12):
        for k in range(200):
            assert check(E.UnknownOpError, "x" * lead, {"op": "\x01" * k + "a"})


def test_edge_messages_answer_as_python() -> None:
    for message in ("", "x" * 1024, "x" * 1025, "a\x00b", 'a"\\b\x01', "ÿ", "a://b", 42, None):
        check(E.UnknownOpError, message, {})
    # a URL's scheme and its "://" at every offset of the writer's words (the last one shorter)
    for n in range(0, 18):
        for at in range(0, n + 1):
            message = "x" * at + " ab://cd" + "y" * (n - at)
            assert not check(E.UnknownOpError, message, {})  # scrubbed: Python's
            assert b"[url]" in envelope.answer(E.UnknownOpError, message, {})


def test_an_answer_runs_no_python_and_is_what_the_shim_packs() -> None:
    found = dispatch._look_up("no-such-op-1601", "call")
    assert type(found) is tuple
    cls, message, values = found
    assert python_calls(partial(native().answer, cls, message, values)) == []
    env = dispatch.call_json(b"no-such-op-1601", b"{}")[1]
    assert env is not None
    assert envelope._answered[0] is env  # answered in C: never built
    assert chain_packed(env) == PACKED(chain_links(env))
    assert env == python_envelope(cls, message, values)


def test_the_op_names_follow_the_registry() -> None:
    from pydantic import BaseModel

    from aimux_ops.ops.registry import register_op, unregister_op

    class P(BaseModel):
        pass

    def names_in(env: bytes | None) -> list[str]:
        assert env is not None
        return orjson.loads(env)["error"]["availableOps"]  # type: ignore[no-any-return]

    assert "zz.answer.test" not in names_in(dispatch.call_json("nope-1", b"{}")[1])
    register_op("zz.answer.test", mode="call", params=P)(lambda p: {})
    try:
        assert "zz.answer.test" in names_in(dispatch.call_json("nope-2", b"{}")[1])
    finally:
        unregister_op("zz.answer.test")
    assert "zz.answer.test" not in names_in(dispatch.call_json("nope-3", b"{}")[1])


def test_the_op_names_are_read_while_another_thread_registers() -> None:
    """``all_ops`` (the op names' source) copies the registry's dicts before it iterates: another
    thread's registration in between failed the call with "dictionary changed size during
    iteration" (a 208), about one call in a hundred here before the copy."""
    import sys
    import threading

    from pydantic import BaseModel

    from aimux_ops.ops import registry

    class P(BaseModel):
        pass

    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            registry.register_op(f"zz.race.{i % 50}", mode="call", params=P)(lambda p: {})
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
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        for i in range(50):
            registry.unregister_op(f"zz.race.{i}")
    assert failures == []
    assert not [n for n in dispatch._op_names() if n.startswith("zz.race.")]


# -- classes the answer leaves to Python --------------------------------------------------------


def _subclass(**members: Any) -> type[E.AimuxError]:
    cls = type("Odd", (E.UnknownOpError,), {})
    for name, value in members.items():  # after __init_subclass__ (it derives _wire and more)
        setattr(cls, name, value)
    return cls


@pytest.mark.parametrize(
    "members",
    [
        {"_own_retryable": lambda self: True},
        {"_own_retry_after_ms": lambda self: 5},
        {"message": "class-level"},
        {"_extra": {}},
        {"wire_root": (True, 3)},
        {"kind": property(lambda self: "protocol")},
        {"code": 2**40},
        {"error_name": "é"},
        {"__new__": lambda cls, *a: Exception.__new__(cls, *a)},
        {"payload_fields": lambda self: {}},
        {"_wire": [("op", "op")]},
        {"_wire": (("op", 1),)},
        {"_wire": ((1, "op"),)},
        {"_defaults": type("Defaults", (dict,), {})(op="d")},
        {"code": 0},
        {
            "_of_values": classmethod(
                lambda cls, m, v: E.UnknownOpError._of_values.__func__(cls, m.upper(), v)
            )
        },
        {
            "__setattr__": lambda self, k, v: object.__setattr__(
                self, k, v + "!" if k == "message" else v
            )
        },
        {"__cause__": property(lambda self: ValueError("from a property"))},
    ],
    ids=lambda m: next(iter(m)),
)
def test_a_class_overriding_what_the_answer_reads_is_pythons(members: dict[str, Any]) -> None:
    cls = _subclass(**members)
    values = {"op": "o", "available_ops": ["a"]}
    assert native().answer(cls, "m", values) is None
    assert envelope.answer(cls, "m", values) == python_envelope(cls, "m", values)


def test_a_metaclass_value_is_pythons() -> None:
    class Meta(type):
        @property
        def _defaults(cls) -> dict[str, Any]:
            return {"op": "from-the-metaclass"}

        @_defaults.setter
        def _defaults(cls, value: dict[str, Any]) -> None:
            pass  # AimuxError.__init_subclass__ sets it: the metaclass's value stays

    cls = Meta("Metaed", (E.UnknownOpError,), {})
    assert native().answer(cls, "m", {}) is None
    assert b"from-the-metaclass" in envelope.answer(cls, "m", {})
    assert check(cls, "m", {}) is False


@pytest.mark.parametrize(
    "fields", [{"name": "str | None"}, {"a_b": "str | None", "aB": "str | None"}], ids=str
)
def test_payload_members_of_one_wire_name_are_pythons(fields: dict[str, str]) -> None:
    cls = type("Twice", (E.UnknownOpError,), {"__annotations__": fields, **dict.fromkeys(fields)})
    values = {f: f"value-of-{f}" for f in fields}
    assert native().answer(cls, "m", values) is None
    assert check(cls, "m", values) is False


def test_values_keyed_by_anything_but_str_are_pythons() -> None:
    class Key(str):
        pass

    for values in ({"op": "o", 1: "x"}, {Key("op"): "o"}):
        assert native().answer(E.UnknownOpError, "m", values) is None
        assert check(E.UnknownOpError, "m", values) is False


def test_a_class_default_is_answered_as_python() -> None:
    cls = type(
        "Defaulted",
        (E.UnknownOpError,),
        {"__annotations__": {"hint": "str | None"}, "hint": "from-the-class"},
    )
    assert cls._defaults["hint"] == "from-the-class"
    assert check(cls, "m", {"op": "o"})
    assert b'"hint":"from-the-class"' in envelope.answer(cls, "m", {"op": "o"})
    assert check(cls, "m", {"hint": "given"})


def test_an_envelope_over_the_limit_is_pythons() -> None:
    fields = {f"f{i}": "str | None" for i in range(80)}
    cls = type("Wide", (E.UnknownOpError,), {"__annotations__": fields, **dict.fromkeys(fields)})
    values = {f: "w" * 16000 for f in fields}  # each within a value's bound, ~1.3 MB in all
    assert native().answer(cls, "m", values) is None
    assert b'"truncated"' in envelope.answer(cls, "m", values)
    assert check(cls, "m", {f: "w" * 100 for f in fields})


def test_a_class_changed_after_an_answer_is_seen_changed() -> None:
    cls = _subclass()
    values = {"op": "o"}
    assert check(cls, "m", values)
    cls._own_retryable = lambda self: True  # type: ignore[method-assign]
    assert not check(cls, "m", values)
    assert orjson.loads(envelope.answer(cls, "m", values))["retryable"] is True
    del cls._own_retryable
    assert check(cls, "m", values)


def test_a_remembered_secret_is_never_answered() -> None:
    secret = "canary-answer-0123456789"
    remember_secret(secret)
    env = dispatch.call_json(f"no-such-{secret}", b"{}")[1]
    assert env is not None and secret.encode() not in env
    assert b"[REDACTED]" in env
