"""Cold start: a call imports what it needs when it needs it (issue 16), and the installed payload
is byte-compiled. Each laziness test runs in a fresh interpreter (the suite's own has loaded
everything); the answers must be the ones the eager code gave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


def _fresh(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _replay_params(recording: str, provider: str, model_id: str) -> bytes:
    return orjson.dumps(
        {
            "model": {
                "provider": provider,
                "modelId": model_id,
                "baseURL": "http://127.0.0.1:1/v1",
            },
            "prompt": "Say hello in one word.",
            "recording": {"mode": "replay", "path": str(ROOT / "recordings" / recording)},
        }
    )


_LOADED = (
    "import sys\n"
    "def loaded(*names):\n"
    "    return sorted(m for m in sys.modules if m in names or m.startswith(tuple(n + '.' for n in "
    "names)))\n"
)


def test_a_replayed_generate_text_loads_no_network_stream_loop_or_other_provider() -> None:
    """A replay never touches the network: httpx, socket, logging, the stream loop (asyncio,
    greenlet), the other provider's wire module and model table, jsonschema and the projection
    stay unloaded; its params (a common shape) pass the pre-check, so pydantic and the op models
    stay unloaded too; the result is the recorded one."""
    params = _replay_params("demo.jsonl", "openai", "gpt-4o-mini")
    code = _LOADED + (
        "import orjson\n"
        "from aimux_ops.boundary import dispatch\n"
        f"result, err = dispatch.call_json(b'generate_text', {params!r})\n"
        "assert err is None, err\n"
        "was = loaded('httpx', 'httpcore', 'asyncio', 'greenlet', 'jsonschema', 'socket', "
        "'logging', 'hashlib', 'pydantic', 'pydantic_core', 'aimux_ops.ops.models', "
        "'aimux_ops.ops.messages', 'aimux_ops.errors._models', "
        "'aimux_ops.providers.anthropic', 'aimux_ops.providers.anthropic_models', "
        "'aimux_ops.wire.envelope')\n"
        "from aimux_ops.ops import models\n"
        "print(orjson.dumps({'result': orjson.loads(result), 'loaded': was, "
        "'built': sorted(n for n in models.__all__ if getattr("
        "getattr(models, n), '__pydantic_complete__', False))}).decode())\n"
    )
    out = json.loads(_fresh(code))
    assert out["loaded"] == []
    assert out["result"]["text"] == "Hello!"
    response = out["result"]["response"]
    assert response.pop("headers")["content-type"] == "application/json"  # as recorded
    assert response == {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"}
    assert out["built"] == []


def test_a_recorded_body_key_is_hashlibs_sha256_without_loading_hashlib() -> None:
    """The replay's body key is CPython's own SHA-256 (no OpenSSL load): the same digest."""
    import hashlib

    from aimux_ops.http import recording

    body = {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    assert recording.body_key(body) == hashlib.sha256(canonical).hexdigest()
    fast = "_sha256" if sys.version_info < (3, 12) else "_sha2"
    assert recording._sha256.__module__ == fast  # the fast path is on


def test_the_errors_load_without_pydantic_and_evaluate_no_annotation_until_used() -> None:
    """Declaring the catalogue loads no pydantic and reads no field type; the first error built
    with fields works its class out, and its payload model is the one the annotations say."""
    code = _LOADED + (
        "from aimux_ops import errors\n"
        "before = loaded('pydantic', 'pydantic_core', 'email')\n"
        "analysed = [c.__name__ for c in errors.catalogue() if '_analysis' in c.__dict__]\n"
        "e = errors.InvalidParamsError('x', op='generate_text',\n"
        "    violations=[errors.Violation(path='model', reason='Field required')])\n"
        "import orjson\n"
        "print(orjson.dumps({'before': before, 'analysed': analysed,\n"
        "    'fields': e.payload_fields(),\n"
        "    'payload': sorted(errors.InvalidParamsError.Payload.model_fields)}).decode())\n"
    )
    out = json.loads(_fresh(code))
    assert out["before"] == []
    assert out["analysed"] == []
    assert out["fields"] == {
        "op": "generate_text",
        "violations": [{"path": "model", "reason": "Field required"}],
    }
    assert out["payload"] == ["op", "violations"]


def test_a_provider_module_loads_on_its_first_call() -> None:
    """An anthropic replay loads the anthropic module (and not the openai one); the answer is
    the recorded exchange's."""
    params = _replay_params("anthropic.jsonl", "anthropic", "claude-sonnet-4-5")
    code = _LOADED + (
        "from aimux_ops.boundary import dispatch\n"
        f"result, err = dispatch.call_json(b'generate_text', {params!r})\n"
        "assert err is None, err\n"
        "print(loaded('aimux_ops.providers.openai', 'aimux_ops.providers.anthropic'))\n"
    )
    assert _fresh(code).strip() == "['aimux_ops.providers.anthropic']"


def test_every_declared_provider_serves_its_own_id() -> None:
    from aimux_ops.errors import NoSuchProviderError
    from aimux_ops.providers import available_providers, get_provider

    assert available_providers() == ["anthropic", "openai"]
    for provider_id in available_providers():
        provider = get_provider(provider_id)
        assert provider.id == provider_id
        assert get_provider(provider_id) is provider  # loaded once
    try:
        get_provider("nope", "m")
    except NoSuchProviderError as exc:
        assert exc.available_providers == ["anthropic", "openai"]
    else:  # pragma: no cover - the assertion's failure
        raise AssertionError("an unknown provider id was accepted")


def test_a_live_call_loads_the_cores_own_client_and_no_httpx() -> None:
    """The first live request loads the core's own HTTP client, never httpx, httpcore or h11:
    a connection refused is an APICallError (code 11)."""
    params = orjson.dumps(
        {
            "model": {
                "provider": "openai",
                "modelId": "m",
                "baseURL": "http://127.0.0.1:1/v1",
                "apiKey": "sk-test",
            },
            "prompt": "hi",
            "maxRetries": 0,
        }
    )
    code = _LOADED + (
        "import logging, orjson\n"
        "from aimux_ops.boundary import dispatch\n"
        f"result, err = dispatch.call_json(b'generate_text', {params!r})\n"
        "print(orjson.loads(err)['code'], 'aimux_ops.http.connection' in sys.modules, "
        "loaded('httpx', 'httpcore', 'h11'))\n"
    )
    assert _fresh(code).split() == ["11", "True", "[]"]


def test_install_byte_compiles_the_payload_without_naming_the_build(tmp_path: Path) -> None:
    """native/install.py lays the payload out byte-compiled; no compiled file names the stage,
    the destdir or the prefix (the tree is relocatable)."""
    stage = tmp_path / "stage"
    (stage / "deps" / "somedep").mkdir(parents=True)
    (stage / "deps" / "somedep" / "__init__.py").write_text("VALUE = 42\n")
    (stage / "libaimux.so.1").write_bytes(b"not a real library")
    (stage / "runtime" / "lib").mkdir(parents=True)  # the runtime it carries (bundle_runtime.py)
    destdir = tmp_path / "dest"
    prefix = "/opt/aimux-test-prefix"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "native" / "install.py"),
            "--stage",
            str(stage),
            "--prefix",
            prefix,
            "--destdir",
            str(destdir),
        ],
        check=True,
        capture_output=True,
    )
    pyver = "{}.{}".format(*sys.version_info[:2])
    payload = destdir / prefix.lstrip("/") / "lib" / "aimux" / f"python{pyver}"
    tag = sys.implementation.cache_tag
    for module in ("somedep/__init__", "aimux_ops/__init__", "aimux_ops/boundary/dispatch"):
        parent, name = module.rsplit("/", 1)
        pyc = payload / parent / "__pycache__" / f"{name}.{tag}.pyc"
        assert pyc.is_file(), pyc
    sources = {p.relative_to(payload) for p in payload.rglob("*.py")}
    compiled = {
        p.parent.parent.relative_to(payload) / (p.name.split(".")[0] + ".py")
        for p in payload.rglob("*.pyc")
    }
    assert sources <= compiled
    for pyc in payload.rglob("*.pyc"):
        data = pyc.read_bytes()
        for path in (str(tmp_path), prefix, str(ROOT)):
            assert path.encode() not in data, (pyc, path)


def test_models_lists_every_output_it_loads_lazily() -> None:
    """``ops.models`` answers the results and events by name from ``outputs`` (its list is
    written out so that a lookup of any other name does not import them): the two agree."""
    from aimux_ops.ops import models, outputs

    assert models._OUTPUTS == frozenset(outputs.__all__)
    for name in outputs.__all__:
        assert getattr(models, name) is getattr(outputs, name)


_CTYPES_HOST = (
    "import ctypes, sys\n"
    "lib = ctypes.CDLL(sys.argv[1])\n"
    "lib.aimux_call.restype = ctypes.c_void_p\n"
    "lib.aimux_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, "
    "ctypes.POINTER(ctypes.c_void_p)]\n"
    "lib.aimux_error_code.argtypes = [ctypes.c_void_p]\n"
    "lib.aimux_string_free.argtypes = [ctypes.c_void_p]\n"
    "lib.aimux_error_free.argtypes = [ctypes.c_void_p]\n"
    "def call(op, params):\n"
    "    out = ctypes.c_void_p()\n"
    "    err = lib.aimux_call(op, params, ctypes.byref(out))\n"
    "    text = ctypes.string_at(out.value).decode() if out.value else None\n"
    "    code = lib.aimux_error_code(err) if err else None\n"
    "    lib.aimux_string_free(out)\n"
    "    lib.aimux_error_free(err)\n"
    "    return [text, code]\n"
    "CORE = ('aimux_ops.boundary.dispatch', 'aimux_ops.ops.registry', 'orjson', 'typing')\n"
    "def core_loaded():\n"
    "    return sorted(m for m in CORE if m in sys.modules)\n"
)


def _ctypes_host(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    """``code`` after ``_CTYPES_HOST`` in a fresh ``python -S`` (no site: nothing but the host's
    own imports before libaimux's) with libaimux loaded through ctypes; its last line is JSON."""
    lib = ROOT / "native" / "build" / "libaimux.so"
    out = subprocess.run(
        [sys.executable, "-S", "-c", _CTYPES_HOST + code, str(lib)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_libaimux_answers_a_first_aimux_version_before_the_core_loads() -> None:
    """libaimux's first ``aimux.version`` loads neither the dispatch boundary, the op registry,
    orjson nor typing (the cold start of a C host); its answer is the core's precomputed one,
    and the first call that needs the core loads it."""
    from aimux_ops._version import VERSION_ANSWER
    from aimux_ops.boundary import dispatch

    out = _ctypes_host(
        "first = call(b'aimux.version', b'{}'); before = core_loaded()\n"
        "manifest = call(b'aimux.manifest', b'{}'); after = core_loaded()\n"
        "again = call(b'aimux.version', b'{}')\n"
        "import json\n"
        "print(json.dumps({'first': first, 'before': before, 'manifest': manifest[1], "
        "'after': after, 'again': again}))\n"
    )
    answer = [VERSION_ANSWER.decode(), None]
    assert dispatch._VERSION is VERSION_ANSWER
    assert out["first"] == answer
    assert out["before"] == []
    assert out["manifest"] is None  # answered (no error)
    assert out["after"] == sorted(
        ("aimux_ops.boundary.dispatch", "aimux_ops.ops.registry", "orjson", "typing")
    )
    assert out["again"] == answer


def test_a_core_that_cannot_load_is_the_207_of_every_call_from_the_first_that_needs_it(
    tmp_path: Path,
) -> None:
    """A payload with aimux_ops and cffi but not orjson: the start-up succeeds and answers
    ``aimux.version``; the first call that needs the core, and every call after it (version
    included), answers 207 (RuntimeInitError)."""
    import os

    import _cffi_backend

    (tmp_path / "aimux_ops").symlink_to(ROOT / "aimux_ops")
    backend = Path(_cffi_backend.__file__)
    (tmp_path / backend.name).symlink_to(backend)
    out = _ctypes_host(
        "first = call(b'aimux.version', b'{}')\n"
        "manifest = call(b'aimux.manifest', b'{}')\n"
        "again = [call(b'aimux.version', b'{}'), call(b'aimux.manifest', b'{}')]\n"
        "import json\n"
        "print(json.dumps({'first': first[1], 'manifest': manifest[1], "
        "'again': [c[1] for c in again]}))\n",
        env={**os.environ, "AIMUX_PYTHONPATH": str(tmp_path)},
    )
    assert out == {"first": None, "manifest": 207, "again": [207, 207]}
