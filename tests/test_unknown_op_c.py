"""Unknown ops answered by libaimux without the interpreter (docs/DESIGN.md "Unknown ops in C";
``aimux_ops.unknown_op_template``, ``native/src/aimux_unknown_op.c``).

The library runs in this process's interpreter (ctypes), so a test sees whether any Python ran
during a call (a profile hook on this thread) and changes the op registry and the remembered
secrets the template copies. What must hold: an answer from the template is, in every accessor,
the answer the core gives for the same name (``AIMUX_PURE_PYTHON=1`` keeps every call in the
core); only plain names that are no op and hold no remembered secret are answered in C; a new op,
a removed op and a new secret take effect on the next call; a fork while other threads answer
unknown ops leaves the child able to answer them.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from pydantic import BaseModel, ConfigDict

from aimux_ops import changes, dispatch, redact
from aimux_ops.ops import registry
from aimux_ops.unknown_op_template import MAX_NAME

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import Lib

pytestmark = pytest.mark.timeout(120)

P = ctypes.c_void_p
#: Every accessor of one answer: code, kind, name, message, JSON, retryable, retry hint, and
#: whether it has a cause.
View = tuple[int, bytes, bytes, bytes, bytes, int, int, bool]


class Probe(Lib):
    """``bench/cabi.Lib`` reading every accessor of an error, and whether Python ran."""

    def __init__(self) -> None:
        super().__init__()
        lib = self.lib
        for name in ("aimux_error_kind", "aimux_error_name"):
            getattr(lib, name).restype = P
            getattr(lib, name).argtypes = [P]
        lib.aimux_error_retryable.restype = ctypes.c_int
        lib.aimux_error_retryable.argtypes = [P]
        lib.aimux_error_retry_after_ms.restype = ctypes.c_int64
        lib.aimux_error_retry_after_ms.argtypes = [P]

    def answer(self, op: bytes) -> tuple[View | bytes, bool]:
        """The call's answer (its error's view, or the result) and whether any Python function
        ran while the call was under way (on this thread: the shim calls the core on it)."""
        ran: list[str] = []

        def hook(frame: object, event: str, arg: object) -> None:
            if event == "call":  # a Python function (the ctypes call itself is a c_call)
                ran.append(event)

        lib, out = self.lib, P()
        sys.setprofile(hook)
        try:
            err = lib.aimux_call(op, b"{}", ctypes.byref(out))
        finally:
            sys.setprofile(None)
        if not err:
            return self.take_string(out.value) or b"", bool(ran)
        try:
            view: View = (
                lib.aimux_error_code(err),
                self.take_string(lib.aimux_error_kind(err)) or b"",
                self.take_string(lib.aimux_error_name(err)) or b"",
                self.take_string(lib.aimux_error_message(err)) or b"",
                self.take_string(lib.aimux_error_json(err)) or b"",
                lib.aimux_error_retryable(err),
                lib.aimux_error_retry_after_ms(err),
                bool(lib.aimux_error_cause(err)),
            )
        finally:
            lib.aimux_error_free(err)
        return view, bool(ran)


_probe: Probe | None = None


@pytest.fixture()
def lib() -> Probe:
    global _probe
    if _probe is None:
        _probe = Probe()
        _probe.call(b"aimux.version", b"{}")  # the runtime and its callbacks are up
    return _probe


def _change() -> None:
    """A change of the op names (an op registered and removed): the template is withdrawn."""
    registry.register_op("test.unknown_op_c.change", mode="call", params=_NoParams)(dict)
    registry.unregister_op("test.unknown_op_c.change")


class _NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _armed(lib: Probe) -> None:
    """Arms the template: an unknown op answered by the core asks for it."""
    _change()
    _, ran = lib.answer(b"no.such.op")
    assert ran  # the first unknown op after a change is the core's
    _, ran = lib.answer(b"no.such.op")
    assert not ran, "the template was not armed"


@pytest.fixture()
def core_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every call in the core: the template is declined while AIMUX_PURE_PYTHON is set."""
    monkeypatch.setenv("AIMUX_PURE_PYTHON", "1")
    _change()
    yield
    monkeypatch.delenv("AIMUX_PURE_PYTHON")
    _change()


#: Plain names of every length the template takes, every plain character, look-alikes of op
#: names and of the anchors the scrub looks for (no rule acts on them without '-' or a space).
PLAIN_NAMES = [
    b"x",
    b"Z",
    b"no.such.op",
    b"generate_Text",
    b"generateText",
    b"aimux.versions",
    b"aimux",
    b"stream_text.",
    b"_",
    b"..",
    b"sk_live_abcdefghijklmnop",
    b"bearer.token",
    b"Key_0123456789abcdef0123",
    b"aimux_unknown_op_probe",
    redact.PLAIN.encode(),
    (redact.PLAIN * 3)[:MAX_NAME].encode(),
    b"n" * MAX_NAME,
]
#: Names the shim leaves to the core: not plain, too long, empty, or an op's name.
CORE_NAMES = [
    b"",
    b"n" * (MAX_NAME + 1),
    b"no-such-op",
    b"sk-abcdefghijklmnop",
    b"key-0123456789abcdef",
    b"bearer abc",
    b"no such op",
    b"a/b",
    b"http://x.y/z",
    b"quote'op",
    b'dq"op',
    b"back\\slash",
    b"tab\top",
    "caf\u00e9".encode(),
    b"\xff\xfe",
    b"aimux.version",
    b"stream_text",
]


def test_plain_names_are_answered_in_c_as_the_core_answers_them(
    lib: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIMUX_PURE_PYTHON", "1")
    _change()
    core: dict[bytes, View | bytes] = {}
    for name in PLAIN_NAMES + CORE_NAMES:
        core[name], ran = lib.answer(name)
        assert ran, name
    monkeypatch.delenv("AIMUX_PURE_PYTHON")
    _armed(lib)
    for name in PLAIN_NAMES:
        answer, ran = lib.answer(name)
        assert not ran, f"{name!r} went to the core"
        assert answer == core[name], name
        view = answer
        assert isinstance(view, tuple)
        assert view[0] == 300 and view[2] == b"UnknownOpError"
        env = dispatch.call_json(name, b"{}")[1]
        assert view[4] == env  # the envelope the core's own call_json gives
        assert orjson.loads(view[4])["error"]["op"] == name.decode()
    for name in CORE_NAMES:
        answer, ran = lib.answer(name)
        assert ran, f"{name!r} was answered in C"
        assert answer == core[name], name


def test_a_new_op_is_found_at_once_and_a_removed_one_is_unknown_again(lib: Probe) -> None:
    _armed(lib)
    name = b"test.unknown_op_c.fresh"
    before, ran = lib.answer(name)
    assert not ran and isinstance(before, tuple) and before[0] == 300
    registry.register_op(name.decode(), mode="call", params=_NoParams)(lambda p: {"fresh": 1})
    try:
        result, ran = lib.answer(name)
        assert ran and result == b'{"fresh":1}'
        other, _ = lib.answer(b"no.such.op")  # re-armed: the new op is in availableOps
        assert isinstance(other, tuple)
        assert name.decode() in orjson.loads(other[4])["error"]["availableOps"]
    finally:
        registry.unregister_op(name.decode())
    after, ran = lib.answer(name)
    assert ran  # the first unknown op after the change: the core (it re-arms the template)
    assert after == before
    again, ran = lib.answer(name)
    assert not ran and again == before


def test_a_remembered_secret_in_a_plain_name_is_scrubbed(lib: Probe) -> None:
    secret = "PlainSecret0123456789zz"
    name = f"ops.{secret}.call".encode()
    assert set(secret) <= set(redact.PLAIN)
    _armed(lib)
    assert secret not in redact.remembered()
    redact.remember_secret(secret)
    view, ran = lib.answer(name)
    assert ran, "a name holding a remembered secret was answered in C"
    assert isinstance(view, tuple)
    assert secret.encode() not in view[3] + view[4]
    assert b"[REDACTED]" in view[3] and b"[REDACTED]" in view[4]
    # the template is armed again, with the secret: still the core's answer, still scrubbed
    for _ in range(3):
        again, ran = lib.answer(name)
        assert ran and again == view
    plain, ran = lib.answer(b"ops.other.call")
    assert not ran and isinstance(plain, tuple) and plain[0] == 300


def test_a_change_under_way_keeps_the_template_withdrawn(lib: Probe) -> None:
    """Between the start and the end of a change nothing is answered in C: a secret being
    remembered is never missed by an answer given meanwhile."""
    _armed(lib)
    seen: list[bool] = []

    def during() -> None:
        for _ in range(3):
            seen.append(lib.answer(b"no.such.op")[1])

    changes.OP_NAMES.watch(during, lambda: None)  # after the library's own watcher
    try:
        _change()
    finally:
        changes.OP_NAMES.unwatch(during)
    assert seen and all(seen), "an unknown op was answered in C during a change"


def test_no_scrub_rule_acts_on_a_plain_text() -> None:
    """``redact.PLAIN`` is what the C answer relies on: texts made of it (look-alikes of every
    anchor included) leave both scrubs unchanged; one character more ('-') and they would not."""
    rng = random.Random(16)
    words = ["sk", "key", "bearer", "Bearer", "token", "http", "www", "sk_", "key_", "eyJ", "AKIA"]
    texts = [
        "".join(rng.choice(redact.PLAIN) for _ in range(rng.randint(1, 200))) for _ in range(2000)
    ]
    texts += [
        "_".join(rng.choice(words) + rng.choice(redact.PLAIN) * 20 for _ in range(4))
        for _ in range(500)
    ]
    for text in texts:
        assert redact.scrub_text(text) == text
        assert redact.scrub_message(f"unknown op {text!r}") == f"unknown op {text!r}"
    assert redact.scrub_text("sk-" + "a" * 20) != "sk-" + "a" * 20


def _core_answer(op: bytes) -> bytes | None:
    """The packed chain the shim builds for ``op`` on its core path (aimux_embed.py)."""
    from aimux_ops import envelope

    env = dispatch.call_json(op, b"{}")[1]
    if env is None:
        return None
    packed = envelope.chain_packed(env)
    assert packed is not None  # the C projection is built (make setup) unless AIMUX_PURE_PYTHON
    return packed


@pytest.mark.skipif(
    os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0"), reason="no template by request"
)
def test_the_template_is_given_only_when_every_probe_agrees() -> None:
    from aimux_ops import unknown_op_template as t

    blob = t.blob(_core_answer)
    assert blob is not None
    head = struct.unpack_from("=iBqIIII", blob)
    assert head[0] == 300 and head[3] == MAX_NAME
    assert head[5] == len(dispatch._op_names())  # every op name is copied

    def escaped_when_long(op: bytes) -> bytes | None:  # a projection that changes long names
        out = _core_answer(op)
        return None if out is None else out.replace(op, op[:-1] + b"~") if len(op) > 100 else out

    def with_a_cause(op: bytes) -> bytes | None:  # a chain of two nodes: not a template
        out = _core_answer(op)
        assert out is not None
        return out + out[9:]

    def succeeds(op: bytes) -> bytes | None:
        return None

    for answer in (escaped_when_long, with_a_cause, succeeds):
        assert t.blob(answer) is None, answer.__name__


def test_a_secret_across_the_name_and_the_text_around_it_sends_the_call_to_the_core(
    lib: Probe,
) -> None:
    """A remembered secret that is not plain can still be in the message: across the quote
    around the name (``'abcdefgh``), or the name's tail and the closing quote. Those answers are
    the core's (scrubbed), with more than 16 secrets too (the core then scrubs with one regex)."""
    straddling = ["'abcdefgh", "tail.9'", "op 'xy"]
    others = [f"other-secret-{i:02d}-zzzzzz" for i in range(18)]  # more than 16 in all
    for secret in straddling + others:
        redact.remember_secret(secret)
    names = [b"abcdefgh.tail", b"x.tail.9", b"xyz", b"abcdefg", b"fine.name"]
    core: dict[bytes, View | bytes] = {}
    os.environ["AIMUX_PURE_PYTHON"] = "1"
    try:
        _change()
        for name in names:
            core[name], _ = lib.answer(name)
    finally:
        del os.environ["AIMUX_PURE_PYTHON"]
    _armed(lib)
    for name in names:
        view, ran = lib.answer(name)
        assert view == core[name], name
        assert isinstance(view, tuple)
        leaked = [s for s in straddling if s.encode() in view[3] + view[4]]
        assert not leaked, (name, leaked)
        assert ran == (b"[REDACTED]" in view[3]), name  # the core answered exactly those
    assert lib.answer(b"fine.name")[1] is False


def test_a_pure_op_removed_or_registered_anew_answers_afresh(lib: Probe) -> None:
    name = "test.unknown_op_c.pure"
    registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 1})
    try:
        assert lib.answer(name.encode())[0] == b'{"v":1}'
        assert lib.answer(name.encode())[0] == b'{"v":1}'  # the cached result
        registry.register_op(name, mode="call", params=_NoParams, pure=True)(lambda p: {"v": 2})
        assert lib.answer(name.encode())[0] == b'{"v":2}'
    finally:
        registry.unregister_op(name)
    view, _ = lib.answer(name.encode())
    assert isinstance(view, tuple) and view[0] == 300


def test_an_interrupt_while_the_template_is_built_is_handed_back(
    lib: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python host's SIGINT during the arm callback is the host's (DESIGN.md "Signals"), and
    the template is asked for again on the next unknown op."""
    from aimux_ops import unknown_op_template

    def interrupted(answer: object) -> bytes | None:
        raise KeyboardInterrupt

    _change()
    monkeypatch.setattr(unknown_op_template, "blob", interrupted)
    with pytest.raises(KeyboardInterrupt):
        view, _ = lib.answer(b"no.such.op")
        assert isinstance(view, tuple) and view[0] == 300  # the call itself was answered
        for _ in range(1000):  # the interrupt is raised at the next check of the eval loop
            pass
    monkeypatch.undo()
    assert lib.answer(b"no.such.op")[1]  # not armed: the core answers and asks again
    assert not lib.answer(b"no.such.op")[1]


def test_a_fork_during_a_change_leaves_the_child_its_own_template(lib: Probe) -> None:
    """The child of a fork taken while another thread changes the op names gets a fresh lock and
    no change under way: after a change of its own, its unknown ops are answered in C again."""
    _armed(lib)
    stop = threading.Event()

    def changes_() -> None:
        i = 0
        while not stop.is_set():
            registry.register_op(f"test.fork.chg{i % 3}", mode="call", params=_NoParams)(dict)
            registry.unregister_op(f"test.fork.chg{i % 3}")
            i += 1

    def answers() -> None:
        while not stop.is_set():
            lib.call_raw(b"no.such.op", b"{}")

    threads = [threading.Thread(target=changes_), threading.Thread(target=answers)]
    for t in threads:
        t.start()
    try:
        for _ in range(40):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    signal.alarm(20)  # a child stuck on a lock copied held: a failure
                    _change()
                    ran = [lib.answer(b"child.op")[1] for _ in range(3)]
                    code = 0 if ran[0] and not ran[-1] else 4
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_a_secret_in_the_messages_own_words_keeps_every_call_in_the_core(lib: Probe) -> None:
    """A remembered secret inside "unknown op '" itself changes the text around every name, and
    a second, longer secret may overlap that text and the name: the core replaces the longer one
    (``op 'ab`` in ``unknown op 'abc.x'``), which the scrubbed text around a name no longer
    shows. No template then."""
    with redact._secrets_lock:
        saved = (redact._secrets.copy(), redact._secret_re, redact._secret_list)
    try:
        redact.remember_secret("op '")
        redact.remember_secret("op 'ab")
        for name in (b"no.such.op", b"abc.x", b"abc.x"):
            view, ran = lib.answer(name)
            assert isinstance(view, tuple) and view[0] == 300
            if name == b"abc.x":
                assert view[3] == b"unknown [REDACTED]c.x'", view[3]  # the longer secret
            assert ran, f"{name!r} was answered in C"
    finally:
        with redact._secrets_lock:
            secrets, redact._secret_re, redact._secret_list = saved
            redact._secrets.clear()
            redact._secrets.update(secrets)
        _change()  # the template is built again from the secrets put back
