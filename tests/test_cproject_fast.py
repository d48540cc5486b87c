"""The C projection's fast paths of issue 16 wave 2 (DESIGN.md "The projection in C: one call,
per-class answers"), each against the Python projection, byte for byte: the whole projection in
one C call (``_cproject.project``), APICallError's retry hooks answered in C, the per-class
answers kept while the class's version tag holds, the eight-bytes-at-a-time anchor scan, a
payload list of simple models (violations) and the packed chain written from the walked nodes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from functools import partial
from typing import Any

import orjson
import pytest
from test_cproject import native, needs_c

from aimux_ops import envelope
from aimux_ops import errors as E
from aimux_ops.envelope import chain_links, chain_packed, project

pytestmark = [
    needs_c,
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


@pytest.fixture(autouse=True)
def _off_schema_on_purpose() -> Iterator[None]:
    """Some values below are off-schema on purpose (both paths project them as given): not what
    the session's schema check is for."""
    yield
    import conftest

    conftest._problems.clear()


def py_project(exc: BaseException) -> bytes:
    saved = envelope._native
    envelope._native = None
    try:
        return project(exc)
    finally:
        envelope._native = saved


def c_answer(exc: BaseException) -> Any:
    """What the C entry answers (bytes: projected in C)."""
    return native().project(exc)


def python_calls(fn: Any) -> list[str]:
    """The Python functions ``fn()`` runs (``fn`` a C callable: ``functools.partial``)."""
    calls: list[str] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


# -- the one C call ----------------------------------------------------------------------------


def test_the_whole_projection_is_one_c_call_and_sets_last() -> None:
    err = E.UnknownOpError("unknown op 'no-such-op'", op="no-such-op", available_ops=["a", "b"])
    got = c_answer(err)
    assert type(got) is bytes and got == py_project(err)
    data = project(err)
    assert data == got
    assert envelope._last[0] is data  # the shim's chain_packed reads those very nodes
    assert chain_packed(data) is not None
    assert python_calls(partial(native().project, err)) == []


def test_what_the_c_entry_leaves_to_python() -> None:
    assert c_answer(ValueError("not an aimux error")) is None  # wrapped by Python
    assert c_answer(E.OtherError("caf\u00e9")) is False  # walked: non-ASCII is Python's
    for exc in (ValueError("plain"), E.OtherError("caf\u00e9 \udc80")):
        assert project(exc) == py_project(exc)


def test_an_orjson_failure_is_the_last_resort_either_way() -> None:
    err = E.APICallError("too big a status", status_code=2**70)
    assert project(err) == py_project(err) == envelope._LAST_RESORT


class HintOfAnotherType(E.APICallError):
    calls = 0

    def _own_retry_after_ms(self) -> Any:
        HintOfAnotherType.calls += 1
        return Decimal(1500)  # not an int, float or bool: the C walk leaves it to Python


def test_a_walk_left_to_python_is_not_walked_again() -> None:
    """The C walk ran the hook, then left the root to Python: Python runs it once more (as
    before), not the C walk a second time."""
    err = HintOfAnotherType("hint")
    HintOfAnotherType.calls = 0
    c = project(err)
    assert HintOfAnotherType.calls == 2
    HintOfAnotherType.calls = 0
    assert py_project(err) == c and HintOfAnotherType.calls == 1
    assert orjson.loads(c)["retryAfterMs"] == 1500


# -- APICallError's hooks ----------------------------------------------------------------------


@pytest.mark.parametrize("retryable", [True, False, None, 1, 0, "yes", ""])
@pytest.mark.parametrize(
    "headers",
    [None, {}, {"retry-after": "2"}, {"retry-after-ms": "150"}, {"Retry-After": "x"}],
)
def test_apicallerror_hooks_match_python(retryable: Any, headers: Any) -> None:
    err = E.APICallError("failed", response_headers=headers)
    err._values["is_retryable"] = retryable  # any value, as a caller may set it
    assert c_answer(err).__class__ is bytes
    assert project(err) == py_project(err)


def later_date() -> str:
    """An HTTP date an hour from now (a retry-after Python parses with the clock)."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    return format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)


def retry_headers() -> list[dict[Any, Any]]:
    later = later_date()
    out: list[dict[Any, Any]] = []
    for value in ("2", "2.5", " 3 ", "1_0", "0", "-1", "nan", "inf", "1e400", "abc", "", later):
        out.append({"retry-after": value})
        out.append({"Retry-After-Ms": value, "content-type": "x"})
        out.append({"retry-after-ms": value, "retry-after": "4"})
    out += [
        {"Retry-After": "1", "retry-after": "7"},  # the last of equal lowered keys
        {"retry-after": "7", "RETRY-AFTER": "1"},
        {"retry-after-ms": None, "retry-after": "2"},
        {"retry-after": None},
        {"retry-after": 5},  # not a str: Python's float()
        {"retry-after-ms": 2.5},
        {"R\u00e9try-After": "1", "retry-after": "3"},  # a non-ASCII key: Python's
        {"x-request-id": "req_1"},
        {1: "x", "retry-after": "3"},  # a key without lower(): Python's error, both ways
    ]
    return out


def test_apicallerror_retry_headers_parse_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """_parse_retry_after_ms in C for what needs no date, Python's for the rest: the same hint."""
    import aimux_ops.errors.aimux as aimux_errors

    now = aimux_errors.time.time()  # a date's hint reads the clock: both projections one instant
    monkeypatch.setattr(aimux_errors.time, "time", lambda: now)
    for headers in retry_headers():
        err = E.APICallError("failed")
        err._values["response_headers"] = dict(headers)  # any shape, as a caller may set it
        assert project(err) == py_project(err), headers
    plain = E.APICallError("x", response_headers={"retry-after": "3", "x-request-id": "r"})
    assert orjson.loads(project(plain))["retryAfterMs"] == 3000
    assert python_calls(partial(native().project, plain)) == []  # parsed in C
    dated = E.APICallError("x", response_headers={"retry-after": later_date()})
    assert python_calls(partial(native().project, dated)) != []  # a date: Python's


def test_apicallerror_hooks_run_no_python_for_no_headers() -> None:
    err = E.APICallError("Cannot connect to API", is_retryable=True)
    assert python_calls(partial(native().project, err)) == []
    assert orjson.loads(project(err))["retryable"] is True


class OwnRetryable(E.APICallError):
    def _own_retryable(self) -> bool:
        return True


class OwnIsRetryable(E.APICallError):
    @property
    def is_retryable(self) -> bool:  # type: ignore[override]
        return True


class OwnHeaders(E.APICallError):
    @property
    def response_headers(self) -> dict[str, str]:  # type: ignore[override]
        return {"retry-after-ms": "250"}


def test_apicallerror_hooks_of_subclasses_and_instances_are_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases: list[BaseException] = [OwnRetryable("a"), OwnIsRetryable("b"), OwnHeaders("c")]
    shadowed = E.APICallError("d")
    shadowed._own_retryable = lambda: True  # type: ignore[method-assign]
    shadowed._own_retry_after_ms = lambda: 4321  # type: ignore[method-assign]
    cases.append(shadowed)
    for exc in cases:
        env = orjson.loads(project(exc))
        assert project(exc) == py_project(exc)
        assert env["retryable"] is True or env.get("retryAfterMs") == 250, env
    assert orjson.loads(project(shadowed))["retryAfterMs"] == 4321
    assert orjson.loads(project(OwnHeaders("c")))["retryAfterMs"] == 250
    # the module's parser, replaced: the C walk must not answer None for no headers
    import aimux_ops.errors.aimux as aimux_errors

    monkeypatch.setattr(aimux_errors, "_parse_retry_after_ms", lambda headers: 777)
    plain = E.APICallError("e")
    assert orjson.loads(project(plain))["retryAfterMs"] == 777
    assert project(plain) == py_project(plain)


# -- per-class answers -------------------------------------------------------------------------


def _fresh_classes() -> tuple[type[E.AimuxError], type[E.AimuxError]]:
    class Base(E.OtherError):
        pass

    class Leaf(Base):
        pass

    return Base, Leaf


def test_a_class_changed_after_a_walk_is_seen_changed() -> None:
    """Each change below must reach the next projection: the per-class answers are kept only
    while the class's version tag holds."""
    Base, Leaf = _fresh_classes()
    err = Leaf("leaf")
    before = project(err)
    assert c_answer(err).__class__ is bytes and before == py_project(err)
    assert orjson.loads(before)["retryable"] is False

    Base._own_retryable = lambda self: True  # type: ignore[method-assign]  # a base changed
    assert orjson.loads(project(err))["retryable"] is True
    assert project(err) == py_project(err)

    Leaf.payload_fields = lambda self: {"name": "Custom"}  # type: ignore[method-assign]
    assert c_answer(err) is False  # a payload of its own: Python's
    assert orjson.loads(project(err))["error"] == {"name": "Custom"}
    del Leaf.payload_fields
    assert c_answer(err).__class__ is bytes  # the base's again

    Base.cause_children = lambda self: []  # type: ignore[method-assign]
    assert c_answer(err) is False
    assert project(err) == py_project(err)
    del Base.cause_children
    assert c_answer(err).__class__ is bytes

    Leaf.__getattribute__ = lambda self, name: object.__getattribute__(self, name)  # type: ignore[method-assign]
    assert project(err) == py_project(err)


class ClaimsAimux(ValueError):
    """A source exception whose ``__class__`` claims an aimux class: isinstance says yes."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return E.OtherError


def test_a_class_claiming_another_class_is_asked() -> None:
    root = E.OtherError("root")
    root.__cause__ = ClaimsAimux("claims")
    assert isinstance(root.__cause__, E.AimuxError)
    assert project(root) == py_project(root)
    plain = E.OtherError("root")
    plain.__cause__ = ValueError("plain")
    assert c_answer(plain).__class__ is bytes and project(plain) == py_project(plain)


# -- the anchor scan ---------------------------------------------------------------------------

TOKENS = [
    "sk-A1b2C3d4E5f6g7h8",
    "SK-A1b2C3d4E5f6g7h8",
    "Sk-A1b2C3d4E5f6g7h8",
    "key-abcdefgh12345678",
    "KEY-abcdefgh12345678",
    "kEy-abcdefgh12345678",
    "Bearer abcdefgh12345678",
    "BEARER abcdefgh12345678",
    "https://u:p@h.example/x?key=abc",
    "http://h",  # short: its "://" can sit in the last, shorter word
    "ftp://x/y",
]


def anchored_texts() -> Iterator[str]:
    for token in TOKENS:
        for offset in range(0, 18):
            for after in ("", " z", "." * 9):
                yield ("a" * offset + " " if offset else "") + token + after


def test_every_anchor_at_every_offset_is_scrubbed_alike() -> None:
    """Each token at offsets across the eight-byte words and the short last word: in a message
    (scrub_message) and in a payload string (scrub_text); the bytes are Python's."""
    for text in anchored_texts():
        msg = E.APICallError(text)
        body = E.APICallError("x", response_body=text)
        assert c_answer(msg).__class__ is bytes
        assert project(msg) == py_project(msg), text
        assert project(body) == py_project(body), text
        if "://" not in text:
            assert b"[REDACTED]" in project(msg) and b"[REDACTED]" in project(body), text
        else:
            assert b"[url]" in project(msg), text


def test_near_anchors_are_left_alone() -> None:
    for text in ("s-k", "sk", "ke-y", "bearr", ":/", "s k-", "beare", "-sk", "k-ey-"):
        for offset in range(0, 17):
            t = "b" * offset + text + "-" * (offset % 3)
            err = E.APICallError(t)
            assert project(err) == py_project(err), t


# -- violations --------------------------------------------------------------------------------


def violations_cases() -> dict[str, list[Any]]:
    V = E.Violation
    return {
        "one": [V(path="prompt", reason="Input should be a valid string")],
        "many": [V(path=f"messages.{i}.role", reason="Field required") for i in range(40)],
        "a token in a reason": [V(path="a", reason="sk-A1b2C3d4E5f6g7h8 leaked")],
        "a secret-named path": [V(path="apiKey", reason="x")],
        "non-ascii": [V(path="caf\u00e9", reason="x")],
        "over the bound": [V(path="p" * 3000, reason="r" * 3000)],
        "mixed": [V(path="a", reason="b"), "plain"],
        "plain first": ["plain", V(path="a", reason="b")],
        "a reason of another type": [V.model_construct(path="a", reason=7)],
        "a None member": [V.model_construct(path="a", reason=None)],
        "empty": [],
    }


@pytest.mark.parametrize("name", sorted(violations_cases()))
def test_violations_lists_match_python(name: str) -> None:
    err = E.InvalidParamsError("invalid params for x: y", op="x")
    err._values["violations"] = violations_cases()[name]
    err.__cause__ = E.SourceError("1 validation error(s) for x params", type="pydantic_core.X")
    assert project(err) == py_project(err)
    env = project(err)
    assert chain_links(env) == chain_links(py_project(err))


def test_a_bad_params_call_takes_the_c_walk() -> None:
    from aimux_ops.dispatch import _validate, get_op

    spec = get_op("generate_text")
    assert spec is not None
    try:
        _validate(spec, b'{"model": {"provider": "openai", "modelId": "m"}, "prompt": 7}')
    except E.InvalidParamsError as exc:
        err = exc
    else:
        pytest.fail("the params were accepted")
    assert c_answer(err).__class__ is bytes
    assert project(err) == py_project(err)


def test_the_c_retry_header_parse_holds_what_it_reads() -> None:
    """A failed ``float()`` of retry-after-ms builds its ValueError (inside an except block), which
    may collect garbage; a finalizer or gc callback may then change the headers dict. The C parse
    holds the retry-after value it goes on to read (it read freed memory when it only borrowed it
    from the dict). Where the first collection falls depends on the collector's counts, so the
    test moves it through the projection (thresholds 1, 2, ...): a collection inside the parse
    sees the parse's own reference, and every answer is a value the dict held."""
    import gc

    held: list[int] = []
    answers: set[Any] = set()
    for threshold in range(1, 120):
        seen: list[int] = []
        headers = {"retry-after-ms": "x", "retry-after": "".join(["1", "2", "3", "4", "5"])}

        def replace(phase: str, info: dict[str, Any], h: Any = headers, seen: Any = seen) -> None:
            if phase == "start" and not seen:
                seen.append(sys.getrefcount(h["retry-after"]))
                h["retry-after"] = None  # the dict's reference to the old value goes

        err = E.APICallError("failed")
        err._values["response_headers"] = headers
        # headers that are no projected member: no node's copy of them holds the values
        err._wire = tuple(p for p in type(err)._wire if p[0] != "response_headers")  # type: ignore[misc]
        gc.collect()
        gc.callbacks.append(replace)
        try:
            try:
                raise RuntimeError("being handled")  # the projection runs in an except block
            except RuntimeError:
                gc.set_threshold(threshold)
                try:
                    data = native().project(err)
                finally:
                    gc.set_threshold(*THRESHOLDS)
        finally:
            gc.callbacks.remove(replace)
        assert isinstance(data, bytes)  # the C path answered
        answers.add(orjson.loads(data).get("retryAfterMs"))
        # the dict, the parse's own reference and getrefcount's argument
        held += [n for n in seen if n >= 3]
    assert answers <= {None, 12345000}, answers  # before the parse, or the value it held
    assert held, "no collection fell inside the parse"


THRESHOLDS = __import__("gc").get_threshold()
