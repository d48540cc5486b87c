"""The C projection (``aimux_ops._cproject``) against the Python one, byte for byte.

Randomized (seeded, reproducible) exception chains of every catalogued class with random field
values (unicode, long texts, secrets, URLs, nested payloads, values set after construction),
source exceptions (OSError, httpx / httpcore, custom ``__str__``), ``__cause__``, ``__context__``,
suppressed contexts, args-wrapped exceptions, cycles and attempts: each projected by both paths,
and the shim's ``chain_links`` of each. The golden file runs both paths too
(``test_envelope_golden.py``)."""

from __future__ import annotations

import ast
import gc
import itertools
import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore
import httpx
import orjson
import pytest

from aimux_ops import envelope
from aimux_ops import errors as E
from aimux_ops.envelope import chain_links, chain_packed, project
from aimux_ops.redact import remember_secret

SEED = 16_2026
SECRETS = ("cproj-secret-Hk29xQ", "cproj-ünï-sécret", "pw_cproj_88421")

#: the random payloads set after construction are off-schema on purpose (the serializer warns)
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")

needs_c = pytest.mark.skipif(
    os.environ.get("AIMUX_PURE_PYTHON", "") not in ("", "0"),
    reason="AIMUX_PURE_PYTHON is set: the C projection is off by request",
)


@pytest.fixture(autouse=True)
def _secrets() -> Iterator[None]:
    for s in SECRETS:
        remember_secret(s)
    yield
    # the random payloads set after construction are off-schema on purpose (both paths project
    # them as given): not what the session's schema check is for
    import conftest

    conftest._problems.clear()


def native() -> Any:
    mod = envelope._native
    if mod is None:
        pytest.fail("aimux_ops._cproject is not loaded (not built or stale: run make native)")
    return mod


class OwnStr(Exception):
    def __str__(self) -> str:
        return f"own str with {SECRETS[0]}"


class CountingStr(Exception):
    """A __str__ with a side effect: the C walk must leave it to Python (never call it)."""

    calls = 0

    def __str__(self) -> str:
        CountingStr.calls += 1
        return "counted"


class OwnRepr(Exception):
    def __repr__(self) -> str:
        return "OwnRepr(sk-reprsecret0123456789)"


class Weird:
    def __repr__(self) -> str:
        return f"Weird({SECRETS[2]})"


# -- generators ------------------------------------------------------------------------------


def text(rng: random.Random) -> str:
    pick = rng.randrange(16)
    word = "".join(rng.choice("abcdefghij klmnop_-.:/") for _ in range(rng.randrange(0, 40)))
    if pick == 0:
        return word + " é ü 日本"
    if pick == 1:
        return word + " sk-" + "A1b2C3d4E5f6g7"
    if pick == 2:
        return "see https://api.example.com/v1/x?key=" + word
    if pick == 3:
        return rng.choice("xyz") * rng.choice((1023, 1024, 1025, 1600, 17000))
    if pick == 4:
        return word + rng.choice(SECRETS)
    if pick == 5:
        return word + " Bearer " + word[::-1]
    if pick == 6:
        return word + "\x00" + word
    if pick == 7:
        return "bad \udc80 " + word
    if pick == 8:
        return "key-" + "k" * rng.choice((8, 16, 20)) + " " + word
    if pick == 9:
        return ""
    return word


def json_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(12 if depth < 18 else 7)
    if pick == 0:
        return text(rng)
    if pick == 1:
        return rng.randrange(-(2**40), 2**40)
    if pick == 2:
        return rng.choice((True, False, None))
    if pick == 3:
        return rng.choice((1.5, -0.0, 1e300, float("nan"), float("inf")))
    if pick == 4:
        return "w" * rng.randrange(0, 3000)
    if pick == 5:
        return rng.choice(("plain", "abc", "x-request-id"))
    if pick == 6:
        return rng.randrange(1000)
    if pick in (7, 8):
        keys = [
            "a",
            "message",
            "authorization",
            "x-api-key",
            "retry-after",
            "clé",
            "tokens",
            "x-ratelimit-remaining-tokens",
            "data",
            "Secret-Thing",
        ]
        return {
            rng.choice(keys) + str(i % 3): json_value(rng, depth + 1)
            for i in range(rng.randrange(0, 6))
        }
    if pick == 9:
        return [json_value(rng, depth + 1) for _ in range(rng.randrange(0, 6))]
    if pick == 10:
        return ("tuple", 1)
    return rng.choice((Weird(), b"bytes", {1: "int key"}, [1, [2, [3, [4]]]]))


def field_value(rng: random.Random, hint_name: str) -> Any:
    if rng.random() < 0.15:
        return None
    if hint_name in ("status_code", "line", "schema_version", "handle", "timeout_ms"):
        return rng.choice((rng.randrange(100, 600), 0))
    if hint_name == "is_retryable":
        return rng.random() < 0.5
    if hint_name in ("available_ops", "available_providers", "available_tools"):
        return [
            rng.choice(("aimux.version", "generate_text", "sk-abcdefghijk", "é"))
            for _ in range(rng.randrange(0, 5))
        ]
    if hint_name == "response_headers":
        if rng.random() < 0.3:  # a retry hint: in range, beyond RETRY_AFTER_MAX_MS, negative
            hint = rng.choice(("2", "1500", "1e20", "-1", "9223372036854", "9223372036855", "x"))
            return {rng.choice(("retry-after-ms", "retry-after", "Retry-After")): hint}
        return {
            rng.choice(
                (
                    "content-type",
                    "x-request-id",
                    "retry-after",
                    "set-cookie",
                    "authorization",
                    "x-api-key",
                )
            ): text(rng)
            for _ in range(rng.randrange(0, 4))
        }
    if hint_name in ("data", "value", "usage"):
        return json_value(rng)
    return text(rng)


def aimux_error(rng: random.Random) -> E.AimuxError:
    classes = [c for c in E.catalogue() if c not in (E.RetryError, E.TimeoutError)]
    if rng.random() < 0.05:
        classes = [E.RetryError, E.TimeoutError]
    cls = rng.choice(classes)
    fields = {f: field_value(rng, f) for f in cls._field_names if rng.random() < 0.7}
    fields = {k: v for k, v in fields.items() if v is not None or rng.random() < 0.5}
    message = text(rng) if rng.random() < 0.9 else None
    if cls is E.RetryError:
        attempts: list[BaseException] = [aimux_error(rng) for _ in range(rng.randrange(0, 3))]
        return E.RetryError(message or "failed", errors=attempts)
    if cls is E.TimeoutError:
        return E.TimeoutError(message, errors=[aimux_error(rng)] if rng.random() < 0.5 else [])
    try:
        err = cls(message, **fields)
    except Exception:
        err = cls(message)
    if rng.random() < 0.1 and cls._field_names:  # set after construction: not validated
        setattr(err, rng.choice(cls._field_names), json_value(rng))
    if rng.random() < 0.05:
        err.payload.__pydantic_extra__["extraMember"] = "kept"  # type: ignore[index]
    if rng.random() < 0.05:
        err.message = 42  # type: ignore[assignment]
    return err


def source_error(rng: random.Random) -> BaseException:
    pick = rng.randrange(14)
    msg = text(rng)
    if pick == 0:
        return ConnectionRefusedError(111, "Connection refused")
    if pick == 1:
        return OSError(rng.choice((2, 13)), msg, rng.choice(("/tmp/x", None)))
    if pick == 2:
        return httpx.ConnectError(msg)
    if pick == 3:
        return httpcore.ConnectError(ConnectionRefusedError(111, "Connection refused"))
    if pick == 4:
        return ValueError(msg, rng.randrange(10))
    if pick == 5:
        return KeyError(msg)
    if pick == 6:
        return OwnStr()
    if pick == 7:
        return CountingStr()
    if pick == 8:
        return OwnRepr(msg)
    if pick == 9:
        return RuntimeError(Weird())
    if pick == 10:
        return E.SourceError(msg, rng.choice(("httpx.ReadError", None, "")))
    if pick == 11:
        return UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    if pick == 12:
        return TimeoutError()
    return ValueError(ValueError(msg))


def link(rng: random.Random) -> BaseException:
    return aimux_error(rng) if rng.random() < 0.5 else source_error(rng)


def chain(rng: random.Random) -> BaseException:
    nodes = [link(rng) for _ in range(rng.choice((1, 1, 2, 3, 4, 5, 8, 16, 17, 20)))]
    for outer, inner in itertools.pairwise(nodes):
        how = rng.randrange(6)
        if how <= 2:
            outer.__cause__ = inner
        elif how == 3:
            outer.__context__ = inner
        elif how == 4:
            outer.__context__ = inner
            outer.__suppress_context__ = True
            if not isinstance(outer, E.AimuxError):
                outer.args = (inner, *outer.args[1:])
        else:
            outer.__context__ = ValueError("hidden")
            outer.__suppress_context__ = True
    if len(nodes) > 2 and rng.random() < 0.1:  # a cycle
        nodes[-1].__cause__ = nodes[rng.randrange(len(nodes) - 1)]
    return nodes[0]


def shim_packed() -> Callable[[Any], bytes]:
    """The shim's own ``_packed`` (native/src/aimux_embed.py, with its format constants), the
    packing ``chain_packed`` must reproduce."""
    source = Path(__file__).parent.parent / "native" / "src" / "aimux_embed.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    wanted = {"_ROOT", "_pack_root", "_pack", "_NO_NAME", "_packed"}
    body = [
        node
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name in wanted)
        or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in wanted for t in node.targets)
        )
    ]
    assert len(body) == 5
    names: dict[str, Any] = {"struct": struct}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(source), "exec"), names)
    return names["_packed"]  # type: ignore[no-any-return]


PACKED = shim_packed()
packed_seen = [0]


def both(exc: BaseException) -> tuple[tuple[bytes, Any], tuple[bytes, Any]]:
    """(envelope, chain_links) with the C projection, then with the Python one; and the C walk's
    packed buffer, when it gives one, is the shim's packing of those links."""
    saved = envelope._native
    try:
        c_env = project(exc)
        c_packed = chain_packed(c_env)
        c_links = chain_links(c_env)
        if c_packed is not None:
            assert c_packed == PACKED(c_links)
            packed_seen[0] += 1
        envelope._native = None
        py_env = project(exc)
        py_links = chain_links(py_env)
    finally:
        envelope._native = saved
    return (c_env, c_links), (py_env, py_links)


def workload(seed: int, n: int) -> Iterator[BaseException]:
    rng = random.Random(seed)
    for _ in range(n):
        yield chain(rng)


# -- tests ----------------------------------------------------------------------------------


@needs_c
def test_the_extension_is_loaded_and_current() -> None:
    mod = native()
    src = os.path.join(os.path.dirname(envelope.__file__), "_cproject.c")
    import hashlib

    with open(src, "rb") as f:
        assert mod.SOURCE_SHA == hashlib.sha256(f.read()).hexdigest()


@needs_c
def test_random_chains_project_byte_identical() -> None:
    mod = native()
    handled = total = 0
    for i, exc in enumerate(workload(SEED, 3000)):
        err = envelope._as_aimux(exc)
        handled += mod.root(err) is not None
        total += 1
        c, py = both(exc)
        assert c[0] == py[0], f"case {i}: envelope differs"
        assert c[1] == py[1], f"case {i}: chain_links differ"
    # the generator is meant to reach both paths: most chains fall back (they are built to), a
    # good share must not
    assert 0.1 * total < handled < 0.9 * total, (handled, total)
    assert packed_seen[0] > 0.1 * total


@needs_c
def test_random_single_nodes_project_byte_identical() -> None:
    """One node at a time: every class and field mix, so the C path is taken often."""
    mod = native()
    rng = random.Random(SEED + 1)
    handled = 0
    for i in range(4000):
        exc = link(rng) if rng.random() < 0.8 else chain(rng)
        handled += mod.root(envelope._as_aimux(exc)) is not None
        c, py = both(exc)
        assert c == py, f"case {i}"
    assert handled > 1000


@needs_c
def test_a_str_with_side_effects_is_called_by_python_only() -> None:
    exc = E.APICallError("x")
    exc.__cause__ = CountingStr()
    CountingStr.calls = 0
    assert native().root(exc) is None
    assert CountingStr.calls == 0
    project(exc)
    assert CountingStr.calls == 1


def bench_shapes() -> dict[str, BaseException]:
    """The common failures (the bench's rows): each must take the C path."""
    refused = ConnectionRefusedError(111, "Connection refused")
    core = httpcore.ConnectError(refused)
    outer = httpx.ConnectError(str(core))
    outer.__cause__ = core
    transport = E.APICallError(
        "Cannot connect to API: [Errno 111] Connection refused", is_retryable=True
    )
    transport.__cause__ = outer
    body = {"error": {"message": "slow down", "type": "rate_limit", "code": None}}
    http = E.APICallError(
        "Too Many Requests",
        status_code=429,
        is_retryable=True,
        response_headers={
            "retry-after": "2",
            "x-request-id": "req_1",
            "content-type": "application/json",
        },
        response_body=orjson.dumps(body).decode(),
        data=body,
    )
    unknown = E.UnknownOpError(
        "unknown op 'no.such'", op="no.such", available_ops=["aimux.version", "generate_text"]
    )
    deep = E.APICallError("root", is_retryable=True)
    inner: BaseException = ConnectionRefusedError(111, "Connection refused")
    for level in range(3, 0, -1):
        nxt: BaseException = (
            OSError(f"layer {level}")
            if level % 2
            else E.TypeValidationError("t", value={"level": level, "a": [1, 2.5]})
        )
        nxt.__cause__ = inner
        inner = nxt
    deep.__cause__ = inner
    url = E.APICallError("GET https://api.example.com/v1/models failed", status_code=404)
    secret = E.APICallError(f"rejected key {SECRETS[2]}", response_body="sk-0123456789abcdef")
    return {
        "transport": transport,
        "http": http,
        "unknown": unknown,
        "deep": deep,
        "url-in-message": url,
        "secret-scrubbed": secret,
    }


@needs_c
@pytest.mark.parametrize("name", sorted(bench_shapes()))
def test_the_common_failures_take_the_c_path(name: str) -> None:
    exc = bench_shapes()[name]
    mod = native()
    assert mod.root(exc) is not None
    c, py = both(exc)
    assert c == py
    assert mod.chain(orjson.loads(c[0]), c[0]) == c[1]
    assert mod.packed(orjson.loads(c[0]), c[0]) == PACKED(c[1])
    assert SECRETS[2].encode() not in c[0] and b"sk-0123" not in c[0]


@needs_c
def test_what_the_c_path_leaves_to_python() -> None:
    mod = native()
    left = {
        "non-ascii message": E.OtherError("café"),
        "long message": E.OtherError("x" * 1025),
        "NUL": E.OtherError("a\x00b"),
        "secret header": E.APICallError("x", response_headers={"authorization": "Bearer z"}),
        "anchor inside data": E.APICallError("x", data={"k": "sk-0123456789abcdef"}),
        "non-plain value": E.APICallError("x", data=("a", "tuple")),
        "retry": E.RetryError("r", errors=[E.OtherError("o")]),
        "timeout": E.TimeoutError("t"),
        "own str": E.OtherError("o"),
    }
    left["own str"].__cause__ = OwnStr()
    for name, exc in left.items():
        assert mod.root(exc) is None, name
        c, py = both(exc)
        assert c == py, name


@needs_c
def test_no_reference_leak() -> None:
    """Many projections through both C functions leave no object behind (the GC-tracked
    nodes, lists and exceptions are counted)."""
    shapes = list(bench_shapes().values())
    mod = native()
    for exc in shapes:  # warm
        env = project(exc)
        chain_links(env)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(3000):
        for exc in shapes:
            root = mod.root(exc)
            assert root is not None
            env = orjson.dumps(root)
            mod.chain(root, env)
            mod.packed(root, env)
    gc.collect()
    assert len(gc.get_objects()) - before < 50


def test_pure_python_on_request() -> None:
    """AIMUX_PURE_PYTHON=1 (read once, at import) leaves the extension out."""
    code = "from aimux_ops import envelope; print(envelope._native is None)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "AIMUX_PURE_PYTHON": "1"},
        check=True,
    )
    assert out.stdout.strip() == "True"


@needs_c
def test_a_renamed_class_is_named_anew() -> None:
    """The C walk keeps each class's ``package.ClassName``; a class renamed since (its
    ``__qualname__`` or ``__module__`` set) is named as Python names it now."""

    class Renamed(Exception):
        pass

    def envelope_of() -> tuple[bytes, bytes]:
        exc = E.APICallError("x")
        exc.__cause__ = Renamed("inner")
        assert native().root(exc) is not None
        c, py = both(exc)
        assert c == py
        return c[0], py[0]

    first, _ = envelope_of()
    assert f'"type":"test_cproject.{Renamed.__qualname__}"'.encode() in first
    Renamed.__qualname__ = "Other.Name"
    assert b'"type":"test_cproject.Other.Name"' in envelope_of()[0]
    Renamed.__module__ = "elsewhere.mod"
    assert b'"type":"elsewhere.Other.Name"' in envelope_of()[0]
    Renamed.__module__ = "builtins"
    assert b'"type":"Other.Name"' in envelope_of()[0]


# -- the review's defects (each seen failing or crashing before its fix) ------------------------


def run_script(code: str) -> str:
    """Runs `code` in a fresh interpreter on this tree (a crash fails the test, not the
    session); its stdout."""
    root = str(Path(envelope.__file__).resolve().parents[1])
    prelude = (
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "from aimux_ops import envelope, errors as E\n"
        "from aimux_ops.envelope import project\n"
        "assert envelope._native is not None\n"
        "def py_project(exc):\n"
        "    saved, envelope._native = envelope._native, None\n"
        "    try:\n"
        "        return project(exc)\n"
        "    finally:\n"
        "        envelope._native = saved\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    return out.stdout


@needs_c
def test_a_non_exception_claiming_an_aimux_class_is_pythons() -> None:
    """An object whose ``__class__`` claims APICallError is no exception: the C walk leaves it
    to Python (it read its cause from a struct it does not have: a segfault)."""
    out = run_script(
        "class Fake:\n"
        "    __class__ = property(lambda s: E.APICallError)\n"
        "    payload_fields = E.AimuxError.payload_fields\n"
        "    cause_children = E.AimuxError.cause_children\n"
        "    kind = 'aimux'; code = 11; message = 'fake'; _extra = None; _values = {}\n"
        "    _wire = (); error_name = 'AI_APICallError'\n"
        "f = Fake()\n"
        "assert isinstance(f, E.AimuxError)\n"
        "assert envelope._native.root(f) is None\n"
        "print(project(f) == py_project(f))\n"
    )
    assert out.strip() == "True"


@needs_c
def test_a_class_renamed_by_a_finalizer_during_the_walk() -> None:
    """A collection inside the walk runs a finalizer that renames the source's class (its old
    ``__module__`` freed while the walk still used it: a segfault)."""
    out = run_script(
        "import gc, itertools\n"
        "counter = itertools.count()\n"
        "class Src(Exception):\n"
        "    pass\n"
        "Src.__module__ = 'mod' + str(next(counter)) * 3\n"
        "class Bomb:\n"
        "    def __init__(self):\n"
        "        self.me = self\n"
        "    def __del__(self):\n"
        "        Src.__module__ = 'mod' + str(next(counter)) * 3\n"
        "        Bomb()\n"
        "Bomb()\n"
        "native = envelope._native\n"
        "gc.set_threshold(1)\n"
        "for i in range(20000):\n"
        "    hold = [(i, i, i) for _ in range(300)]\n"
        "    e = E.APICallError('x'); e.__cause__ = Src('inner')\n"
        "    pad = [[] for _ in range(i % 7)]\n"
        "    root = native.root(e)\n"
        "    assert root['cause']['type'].startswith('mod'), root\n"
        "    del hold\n"
        "gc.set_threshold(700)\n"
        "print('ok')\n"
    )
    assert out.strip() == "ok"


@needs_c
def test_a_class_attribute_deleted_during_the_lookup() -> None:
    """A colliding key's ``__eq__`` in the instance dict deletes the class attribute the lookup
    found (held borrowed before: a use after free, seen under ASan)."""
    out = run_script(
        "class S(E.SourceError):\n"
        "    pass\n"
        "class K:\n"
        "    def __hash__(self): return hash('type')\n"
        "    def __eq__(self, other):\n"
        "        if 'type' in S.__dict__:\n"
        "            del S.type\n"
        "        return False\n"
        "for _ in range(200):\n"
        "    S.type = ''.join(['pkg.', 'Y'] * 50)\n"
        "    s = S('msg', None)\n"
        "    del s.__dict__['type']\n"
        "    s.__dict__[K()] = 1\n"
        "    e = E.APICallError('x'); e.__cause__ = s\n"
        "    r = envelope._native.root(e)\n"
        "    assert r is None or r['cause']['type'] == 'pkg.' + 'Ypkg.' * 49 + 'Y', r\n"
        "print('ok')\n"
    )
    assert out.strip() == "ok"


@needs_c
def test_chain_holds_what_it_reads_from_the_nodes() -> None:
    """A finalizer replaces the root's cause and retryAfterMs while chain() walks them (held
    borrowed before: a use after free, seen under ASan)."""
    out = run_script(
        "import gc, orjson\n"
        "N = envelope._native\n"
        "state = {}\n"
        "class Bomb:\n"
        "    def __init__(self): self.me = self\n"
        "    def __del__(self):\n"
        "        r = state.get('root')\n"
        "        if r is not None and 'cause' in r:\n"
        "            r['cause'] = {'kind': 'aimux', 'code': 3, 'message': 'replaced'}\n"
        "            r['retryAfterMs'] = int('123456789')\n"
        "        Bomb()\n"
        "Bomb()\n"
        "gc.set_threshold(1)\n"
        "for i in range(5000):\n"
        "    root = {'kind': 'aimux', 'code': 11, 'message': 'm', 'error': {'name': 'A'},\n"
        "            'cause': {'kind': 'aimux', 'code': 2, 'message': 'c' * (i % 5),\n"
        "                      'error': {'name': 'X'},\n"
        "                      'cause': {'message': 's', 'type': 'ValueError'}},\n"
        "            'retryable': False, 'retryAfterMs': int('987654321')}\n"
        "    env = orjson.dumps(root)\n"
        "    state['root'] = root\n"
        "    pad = [[] for _ in range(i % 7)]\n"
        "    walk = N.chain(root, env)\n"
        "    state['root'] = None\n"
        "    assert walk is not None and walk[0][1] in (987654321, 123456789), walk\n"
        "    assert [link[3] for link in walk[1]][-1] in (b's', b'replaced'), walk\n"
        "gc.set_threshold(700)\n"
        "print('ok')\n"
    )
    assert out.strip() == "ok"


class PropertyCause(ValueError):
    @property  # type: ignore[override]
    def __cause__(self) -> BaseException | None:
        return ValueError("hidden via property")

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:
        pass


class ArgsProperty(ValueError):
    args = property(lambda self: (ValueError("from args property"),))  # type: ignore[assignment]


class SuppressingClass(ValueError):
    __suppress_context__ = True


class AimuxPropertyCause(E.APICallError):
    @property  # type: ignore[override]
    def __cause__(self) -> BaseException | None:
        return ValueError("prop cause")

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:
        pass


def overridden_members() -> dict[str, BaseException]:
    own_children = E.APICallError("outer")
    own_children.cause_children = lambda: [E.OtherError("attempt sk-abcdefghijklmnop")]  # type: ignore[method-assign]
    own_fields = E.APICallError("outer")
    own_fields.payload_fields = lambda: {"name": "Own"}  # type: ignore[method-assign,assignment]
    by_property = E.APICallError("outer")
    by_property.__cause__ = PropertyCause("p")
    by_args = E.APICallError("outer")
    by_args.__cause__ = ArgsProperty("real")
    suppressing = SuppressingClass("s")
    suppressing.__context__ = ValueError("ctx")
    by_suppress = E.APICallError("o")
    by_suppress.__cause__ = suppressing
    return {
        "instance cause_children": own_children,
        "instance payload_fields": own_fields,
        "__cause__ property on a source": by_property,
        "args property on a source": by_args,
        "__suppress_context__ class attribute": by_suppress,
        "__cause__ property on an aimux class": AimuxPropertyCause("x"),
    }


@needs_c
@pytest.mark.parametrize("name", sorted(overridden_members()))
def test_overridden_exception_members_are_pythons(name: str) -> None:
    """A class (or instance) overriding what the C walk reads from the exception struct or the
    base class: Python projects it (the C walk gave other bytes)."""
    exc = overridden_members()[name]
    assert native().root(envelope._as_aimux(exc)) is None
    c, py = both(exc)
    assert c == py


#: what RetryHint's hooks answer and the calls they saw (module state: a class annotation of an
#: error class is a payload field)
retry_hint: dict[str, Any] = {"hint": None, "calls": []}


class RetryHint(E.APICallError):
    def _own_retryable(self) -> bool:
        retry_hint["calls"].append("retryable")
        return True

    def _own_retry_after_ms(self) -> Any:
        retry_hint["calls"].append("after")
        return retry_hint["hint"]


@needs_c
@pytest.mark.parametrize(
    "hint",
    [
        *(1500.0, 1500.75, 0.0, -0.0, -0.5, -1.0, float("nan"), float("inf"), float("-inf")),
        *(1e300, float(envelope.RETRY_AFTER_MAX_MS), float(envelope.RETRY_AFTER_MAX_MS) + 2048.0),
        *(True, False, 7, -7),
    ],
    ids=repr,
)
def test_retry_hints_of_floats_and_bools_call_the_hooks_once(hint: Any) -> None:
    """A float or bool retry hint is Python's ``0 <= after <= MAX`` then ``int(after)`` in C
    too: no fallback after the hooks ran (they ran twice)."""
    retry_hint["hint"] = hint
    exc = RetryHint("x")
    assert native().root(exc) is not None
    retry_hint["calls"] = []
    c_env = project(exc)
    assert retry_hint["calls"] == ["retryable", "after"]
    c, py = both(exc)
    assert c == py
    assert c_env == py[0]


@needs_c
def test_a_local_class_is_collected_after_the_walk() -> None:
    """The class-name cache holds classes weakly: a local exception class goes as in Python."""
    import weakref

    def make() -> Any:
        class Tmp(Exception):
            pass

        exc = E.APICallError("x")
        exc.__cause__ = Tmp("y")
        assert native().root(exc) is not None
        assert b'"type":"test_cproject.' in project(exc)
        return weakref.ref(Tmp)

    ref = make()
    gc.collect()
    assert ref() is None


@needs_c
def test_a_new_class_at_a_collected_class_address_is_named_anew() -> None:
    """An id reused by another class after the first was collected: the cache's weak reference
    tells them apart."""
    names = set()
    for i in range(200):
        cls = type(f"Local{i}", (Exception,), {"__module__": f"pkg{i}.mod"})
        exc = E.APICallError("x")
        exc.__cause__ = cls("y")
        c, py = both(exc)
        assert c == py
        names.add(orjson.loads(c[0])["cause"]["type"])
        del cls, exc
        gc.collect()
    assert len(names) == 200


# -- secret scrubbing gaps of both paths (case, payload keys) -----------------------------------

CANARY = "abcdefghijklmnop0123"


def secret_carriers() -> dict[str, BaseException]:
    """A secret-shaped token in upper / mixed case in every text that leaves, and as the key of
    payload members (at the top, nested, in a value too long for the small path)."""
    upper = "SK-" + CANARY.upper()
    mixed = "Key-" + CANARY + CANARY
    source = ValueError(f"bad {upper}")
    with_source = E.APICallError("outer")
    with_source.__cause__ = source
    return {
        "upper token in a message": E.APICallError(f"rejected {upper}"),
        "mixed-case key- token in a message": E.OtherError(f"rejected {mixed}"),
        "upper token in a source message": with_source,
        "upper token in a payload text": E.APICallError("x", response_body=f"body {upper}"),
        "upper token nested in data": E.APICallError("x", data={"k": [f"v {upper}"]}),
        "token as a payload key": E.APICallError("x", data={"sk-" + CANARY: 1}),
        "upper token as a payload key": E.APICallError("x", data={upper: "v"}),
        "token as a nested key": E.APICallError("x", data={"a": [{"sk-" + CANARY: None}]}),
        "token as a header name": E.APICallError("x", response_headers={"sk-" + CANARY: "v"}),
        "token as a key of a long value": E.APICallError(
            "x", data={"sk-" + CANARY: "y" * 20_000, "z": 1}
        ),
    }


@pytest.mark.parametrize("name", sorted(secret_carriers()))
def test_secret_shaped_tokens_in_any_case_and_as_keys_never_leave(name: str) -> None:
    """Both paths: the token (``_PATTERN_RE`` ignores case) is scrubbed wherever it is, keys
    included; the bytes are the same."""
    exc = secret_carriers()[name]
    saved = envelope._native
    try:
        envelope._native = None
        py = project(exc)
    finally:
        envelope._native = saved
    for env in (project(exc), py):
        assert CANARY.encode() not in env.lower(), env
        assert b"[REDACTED]" in env, env
    assert project(exc) == py
