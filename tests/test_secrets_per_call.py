"""Secrets per call, in every encoding, on every surface (issue 32).

A hostile provider (``tests/fault_server.py`` mode ``echoall``, both wire formats) echoes the
request's key raw, as JSON ``\\u`` escapes mixed with plain characters, URL-encoded, in base64
(alone and inside ``user:key``) and in response headers. Every byte that leaves the core is
scanned by a decoder that undoes each of those encodings (``views``): results, events, envelopes
(with the response headers they keep), decoded exceptions, recordings and log records.

- ``Secrets`` (redact.py), the one rule: each encoding recognised and replaced whole.
- Each defect of issue 32, reproduced: a call in flight while 300 other keys are used, a key
  escaped in an error body, a key echoed in a 2xx body, a key with CR/LF.
- The canary scan under load: 1,000 distinct keys from 8 threads, while calls and streams of
  other keys are in flight, through the Python API and through libaimux (ctypes): 0 hits.
"""

from __future__ import annotations

import base64
import logging
import random
import re
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote, unquote_plus

import orjson
import pytest
from fault_server import FaultServer, echo_forms, json_escaped, url_encoded
from helpers import assert_valid_envelope

import aimux_ops
from aimux_ops.boundary import dispatch
from aimux_ops.errors import AimuxError
from aimux_ops.wire import redact
from aimux_ops.wire.redact import REDACTED

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cabi import CError, Lib

pytestmark = pytest.mark.timeout(900)

PROVIDERS = ["openai", "anthropic"]
#: every canary key holds both markers: a surviving head or tail of one is a hit
MARKERS = re.compile(r"cnry|yrnc")


def canary(n: int, rng: random.Random | None = None) -> str:
    """A distinct key, not shaped like any provider's (only the call's own secrets catch it)."""
    rng = rng or random.Random(n)
    middle = "".join(
        rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(24)
    )
    return f"Zq{n:05d}cnry{middle}{n:05d}yrnc"


_U_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})")
_X_ESCAPE = re.compile(r"\\+x([0-9a-fA-F]{2})")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{12,}={0,2}")


def _unescape(text: str) -> str:
    text = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return _X_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def views(blob: Any) -> list[str]:
    """What a decoder gets back from ``blob``: its text, URL-decoded, with its JSON / ``repr``
    escapes undone (either order), and every run of base64 in it decoded (at each offset)."""
    text = _text(blob)
    out = [text, unquote_plus(text), _unescape(text), _unescape(unquote(text))]
    out.append(unquote(_unescape(text)))
    for run in _BASE64_RUN.findall(text):
        run = run.rstrip("=").translate(str.maketrans("-_", "+/"))
        for start in range(4):
            piece = run[start:]
            piece = piece[: len(piece) - len(piece) % 4]
            if len(piece) >= 8:
                out.append(base64.b64decode(piece).decode("latin-1"))
    return out


def hits(*blobs: Any) -> list[str]:
    """Every marker of a canary key any decoder finds in ``blobs`` (with its surroundings)."""
    found = []
    for blob in blobs:
        for view in views(blob):
            for m in MARKERS.finditer(view):
                found.append(view[max(0, m.start() - 40) : m.end() + 40])
    return found


def assert_no_hits(*blobs: Any) -> None:
    found = hits(*blobs)
    assert not found, f"{len(found)} hits, e.g. {found[:3]!r}"


class Capture(logging.Handler):
    """Every record of every logger, formatted with its arguments."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.lock_ = threading.Lock()
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        line = self.format(record) + " " + repr(record.args)
        with self.lock_:
            self.lines.append(line)


@pytest.fixture
def logs() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def params(
    server: FaultServer,
    provider: str,
    key: str,
    spec: str,
    recording: Path | None = None,
    **extra: Any,
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "model": {
            "provider": provider,
            "modelId": f"fault:{spec}",
            "baseURL": server.base_url,
            "apiKey": key,
        },
        "prompt": "hello",
        "maxRetries": 0,
    }
    if recording is not None:
        p["recording"] = {"mode": "record", "path": str(recording)}
    p.update(extra)
    return p


def exception_texts(exc: BaseException) -> list[str]:
    out = []
    cur: BaseException | None = exc
    for _ in range(64):
        if cur is None:
            break
        out += [str(cur), repr(cur), repr(getattr(cur, "payload", None))]
        cur = cur.__cause__
    return out


# -- the rule ------------------------------------------------------------------------------------

KEY = canary(1)


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        json_escaped(KEY),  # every other character escaped, both hex cases
        re.sub(r"\\u(\w{4})", lambda m: "\\u" + m.group(1).upper(), json_escaped(KEY)),
        "".join(f"\\u{ord(c):04x}" for c in KEY),  # every character escaped
        url_encoded(KEY),
        "".join(f"%{b:02x}" for b in KEY.encode()),
        repr(KEY.encode()),
        base64.b64encode(KEY.encode()).decode(),
        base64.urlsafe_b64encode(KEY.encode()).decode(),
    ]
    + [base64.b64encode(f"{'u' * n}:{KEY}".encode()).decode() for n in range(6)],
    ids=lambda f: f[:24],
)
def test_every_encoding_of_a_secret_is_recognised_and_replaced(form: str) -> None:
    secrets = redact.Secrets([KEY])
    text = f"error for key {form}: bad"
    assert hits(text), "the scanner sees the key in this form"
    assert secrets.probe(text)
    scrubbed = secrets.sub(text)
    assert REDACTED in scrubbed
    assert_no_hits(scrubbed)
    assert scrubbed.startswith("error for key ") and scrubbed.endswith(": bad")


def test_a_multi_line_secret_leaves_no_line_and_no_tail() -> None:
    key = "abcd\r\nX-Injected: tail-of-the-key"
    secrets = redact.Secrets([key])
    for text in (
        key,
        repr(key),
        repr(key.encode()),
        f"Illegal header value b'Bearer {key!r}'",
        "tail-of-the-key alone",
        "X-Injected: tail-of-the-key",
        "X-Injected:+tail-of-the-key",
        "X-Injected%3A%20tail-of-the-key",
        orjson.dumps(key).decode(),
    ):
        out = secrets.sub(text)
        assert "tail-of-the-key" not in out and "Injected" not in out, (text, out)
        assert "abcd" not in out, (text, out)


def test_a_space_as_plus_and_mixed_case_hex() -> None:
    secrets = redact.Secrets(["open sesame 42"])
    for text in ("q=open+sesame+42", "q=open%20sesame%2042", "q=%6Fpen\\u0020sesame\\U00000020"):
        out = secrets.sub(text)
        assert "sesame" not in out or text.endswith("\\U00000020"), out
    assert "sesame" not in secrets.sub("q=%6fPEN".replace("PEN", "pen") + "+sesame+42")


def test_secrets_of_a_call_do_not_depend_on_the_process_memory() -> None:
    """A call's secrets are its own: 1,000 other keys remembered since do not evict them."""
    key = canary(2)
    secrets = redact.call_secrets(key)
    for n in range(1000):
        redact.remember_secret(canary(10_000 + n))
    assert key not in redact.remembered()  # the process memory forgot it (a defence only)
    with secrets.active():
        assert_no_hits(redact.scrub_text(f"echo {key}"), redact.scrub_message(f"x {key}"))
        assert redact.redact_headers({"x-request-id": key}) == {"x-request-id": REDACTED}
    assert key in redact.scrub_text(f"echo {key}")  # outside the call: not its secret


# -- the defects of issue 32 ----------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_in_flight_while_300_other_keys_are_used(
    server: FaultServer, provider: str, tmp_path: Path, logs: Capture
) -> None:
    """The held call's 401 echo (body, message, ``x-request-id``) comes back after 300 other
    keys were used: scrubbed with its own secrets, the headers kept with their values redacted."""
    key = canary(3)
    hold = f"held-{provider}"
    spec = f"mode=echoall;hold={hold};hold_ms=120000"
    recording = tmp_path / "held.jsonl"
    got: dict[str, Any] = {}

    def held() -> None:
        got["reply"] = dispatch.call_json(
            "generate_text", orjson.dumps(params(server, provider, key, spec, recording))
        )

    thread = threading.Thread(target=held)
    thread.start()
    try:
        assert server.wait_for("held", spec, 1) == 1
        for n in range(300):
            result, env = dispatch.call_json(
                "generate_text",
                orjson.dumps(params(server, provider, canary(20_000 + n), "mode=ok")),
            )
            assert env is None and result is not None
    finally:
        server.release(hold)
        thread.join(120)
    result, env = got["reply"]
    assert result is None and env is not None
    doc = assert_valid_envelope(env)
    assert doc["error"]["statusCode"] == 401
    headers = doc["error"]["responseHeaders"]
    assert headers["x-request-id"] == REDACTED  # kept, its value scrubbed
    assert REDACTED in doc["message"]
    assert_no_hits(env, recording.read_bytes(), "\n".join(logs.lines))
    with pytest.raises(AimuxError) as raised:  # the decoded exceptions
        raise aimux_ops.wire.envelope.decode_error(env)
    assert_no_hits(*exception_texts(raised.value))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_escaped_in_an_error_body(server: FaultServer, provider: str, tmp_path: Path) -> None:
    key = canary(4)
    recording = tmp_path / "escaped.jsonl"
    p = params(server, provider, key, "mode=echoall;status=400", recording)
    _, env = dispatch.call_json("generate_text", orjson.dumps(p))
    assert env is not None
    doc = assert_valid_envelope(env)
    body = doc["error"]["responseBody"]
    assert "escaped" in body and REDACTED in body  # the body is kept, the key's forms are not
    assert_no_hits(env, body, recording.read_bytes())
    with pytest.raises(AimuxError) as raised:
        aimux_ops.call("generate_text", p)
    assert_no_hits(*exception_texts(raised.value))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_echoed_in_a_2xx_body(server: FaultServer, provider: str, tmp_path: Path) -> None:
    """The result and the stream events are scrubbed as the recording of the same call is."""
    key = canary(5)
    recording = tmp_path / "ok.jsonl"
    p = params(server, provider, key, "mode=echoall;status=200", recording)
    result = aimux_ops.call("generate_text", p)
    assert REDACTED in result["text"]
    events = list(aimux_ops.stream("stream_text", p))
    deltas = [e for e in events if e["type"] == "text-delta"]
    assert len(deltas) == len(echo_forms(key)) and all(REDACTED in str(e) for e in deltas)
    handle, env = dispatch.stream_json("stream_text", orjson.dumps(p))  # on the stream loop
    assert env is None and handle is not None
    looped = []
    try:
        while True:
            event, env = dispatch.stream_next_json(handle)
            assert env is None
            if event is None:
                break
            looped.append(event)
    finally:
        dispatch.stream_free(handle)
    assert len(looped) == len(events)
    assert_no_hits(result, events, *looped, recording.read_bytes())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_with_cr_lf_leaves_no_tail(server: FaultServer, provider: str) -> None:
    """A key with CR/LF is refused without a character of it (``check_api_key``); a secret
    query value with CR/LF (URL-encoded in ``baseURL``, echoed back by the provider in its body
    and headers, plain and URL-encoded) leaves no line and no word of it."""
    key = "abcd\r\nX-Injected: tail-of-the-key"
    _, env = dispatch.call_json("generate_text", orjson.dumps(params(server, provider, key, "")))
    assert env is not None
    assert assert_valid_envelope(env)["code"] == 5
    secret = "abcd%0D%0AX-Injected%3A%20tail-of-the-key"
    p = params(server, provider, canary(10), "mode=echorequest")
    p["model"]["baseURL"] = f"{server.base_url}?api_key={secret}"
    _, env = dispatch.call_json("generate_text", orjson.dumps(p))
    assert env is not None
    doc = assert_valid_envelope(env)
    assert doc["error"]["statusCode"] == 400 and REDACTED in env.decode()
    for blob in (env, *views(env)):
        text = _text(blob)
        for part in ("tail-of-the-key", "Injected", "abcd"):
            assert part not in text, text


# -- the canary scan under load ---------------------------------------------------------------------

LOAD_KEYS = 1000
THREADS = 8
#: (op, spec) cycled through by the load: errors and successes, calls and streams
LOAD_SCENARIOS = [
    ("generate_text", "mode=echoall"),
    ("generate_text", "mode=echoall;status=200"),
    ("stream_text", "mode=echoall;status=200"),
    ("stream_text", "mode=echoall;status=429"),
    ("generate_text", "mode=echoall;status=500"),
]


def _load_call(
    lib: Lib | None, server: FaultServer, n: int, recording: Path
) -> tuple[list[Any], bool]:
    """One call of the load with key ``n``: everything that came back, and whether the echo
    reached the core (a ``[REDACTED]`` in it)."""
    op, spec = LOAD_SCENARIOS[n % len(LOAD_SCENARIOS)]
    provider = PROVIDERS[(n // len(LOAD_SCENARIOS)) % 2]
    p = params(server, provider, canary(n), spec, recording)
    raw = orjson.dumps(p)
    seen: list[Any] = []
    if lib is not None:
        try:
            if op == "stream_text":
                seen += list(lib.stream_events(op.encode(), raw, 1000))
            else:
                seen.append(lib.call(op.encode(), raw))
        except CError as err:
            seen += [err.message, err.json]
            seen += [part for link in err.chain for part in link[1:]]
    elif op == "stream_text":
        try:
            seen += list(aimux_ops.stream(op, p))
        except AimuxError as exc:
            seen += exception_texts(exc)
            seen.append(aimux_ops.wire.envelope.project(exc))
    else:
        result, env = dispatch.call_json(op, raw)
        seen += [result or b"", env or b""]
    return seen, any(REDACTED in text for text in map(_text, seen))


def _text(blob: Any) -> str:
    if isinstance(blob, bytes):
        return blob.decode("utf-8", "replace")
    return blob if isinstance(blob, str) else orjson.dumps(blob).decode()


@pytest.mark.parametrize("surface", ["python", "libaimux"])
def test_canary_scan_1000_keys_from_8_threads(
    server: FaultServer, surface: str, tmp_path: Path, logs: Capture
) -> None:
    """1,000 distinct keys from 8 threads, both providers, every echo scenario, recording; while
    they run, each thread's first calls stay in flight (a 401 held at the server, a stream of
    the Python API and one of the stream loop opened and left half read). Every surface of
    every call, the recordings and every log record: 0 hits."""
    lib = Lib() if surface == "libaimux" else None
    hold = f"load-{surface}"
    held_spec = f"mode=echoall;hold={hold};hold_ms=600000"
    held_replies: list[Any] = []
    held_threads = []
    for t in range(THREADS):  # the 401s held until the load is over
        p = params(server, PROVIDERS[t % 2], canary(50_000 + t), held_spec, tmp_path / "held.jsonl")

        def held(p: dict[str, Any] = p) -> None:
            reply = (
                dispatch.call_json("generate_text", orjson.dumps(p))
                if lib is None
                else _c_reply(lib, p)
            )
            held_replies.append(reply)

        held_threads.append(threading.Thread(target=held))
        held_threads[-1].start()
    assert server.wait_for("held", held_spec, THREADS) == THREADS

    # streams opened with their first event read, the rest read after the load
    open_streams: list[tuple[Iterator[dict[str, Any]], list[Any]]] = []
    loop_handles: list[tuple[int, list[Any]]] = []
    for t in range(THREADS):
        p = params(
            server,
            PROVIDERS[t % 2],
            canary(60_000 + t),
            "mode=echoall;status=200",
            tmp_path / "streams.jsonl",
        )
        it = aimux_ops.stream("stream_text", p)
        open_streams.append((it, [next(it)]))
        handle, env = dispatch.stream_json(
            "stream_text",
            orjson.dumps({**p, "model": {**p["model"], "apiKey": canary(70_000 + t)}}),
        )
        assert env is None and handle is not None
        first, env = dispatch.stream_next_json(handle)
        assert env is None and first is not None
        loop_handles.append((handle, [first]))

    missed: list[str] = []  # what a call that never met the echo got (its first 300 chars)

    def worker(t: int) -> tuple[list[Any], int]:
        seen: list[Any] = []
        echoed = 0
        for n in range(t, LOAD_KEYS, THREADS):
            got, reached = _load_call(lib, server, n, tmp_path / f"load-{t}.jsonl")
            seen += got
            echoed += reached
            if not reached:
                missed.append(f"call {n}: " + " | ".join(map(_text, got))[:300])
        return seen, echoed

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(worker, range(THREADS)))
    finally:
        server.release(hold)
        for thread in held_threads:
            thread.join(120)
    seen = [blob for got, _ in results for blob in got]
    echoed = sum(e for _, e in results)

    for it, events in open_streams:
        events += list(it)
        assert sum(e["type"] == "text-delta" for e in events) == len(echo_forms(KEY))
        seen += events
    for handle, events in loop_handles:
        try:
            while True:
                event, env = dispatch.stream_next_json(handle)
                assert env is None
                if event is None:
                    break
                events.append(event)
        finally:
            dispatch.stream_free(handle)
        assert sum(b'"text-delta"' in e for e in events) == len(echo_forms(KEY))
        seen += events

    assert len(held_replies) == THREADS
    for reply in held_replies:
        assert reply[1] is not None and REDACTED.encode() in reply[1]
        seen += list(reply)

    recordings = [path.read_bytes() for path in tmp_path.glob("*.jsonl")]
    assert sum(r.count(b"\n") for r in recordings) >= LOAD_KEYS + 3 * THREADS
    found = hits(*seen, *recordings, "\n".join(logs.lines))
    assert found == [], f"{len(found)} hits, e.g. {found[:3]!r}"
    assert echoed == LOAD_KEYS, f"every call met the echo (so 0 hits proves the scrub): {missed}"


def _c_reply(lib: Lib, p: dict[str, Any]) -> tuple[bytes | None, bytes | None]:
    try:
        return lib.call(b"generate_text", orjson.dumps(p)), None
    except CError as err:
        return None, err.json + err.message.encode() + b"".join(link[2] for link in err.chain)


def test_the_scan_can_fail() -> None:
    """The scanner: a key in any form the server echoes, or a head or tail of it, is a hit."""
    key = canary(6)
    for form in [*echo_forms(key), key[:12], key[-12:], orjson.dumps({"k": json_escaped(key)})]:
        assert hits(form), form


def test_a_wrapped_exception_keeps_the_secrets_of_its_call(server: FaultServer) -> None:
    """A boundary that wraps a call's exception (its cause) still projects with the call's
    secrets."""
    key = canary(7)
    p = params(server, "openai", key, "mode=echoall")
    from aimux_ops.ops.call import neutral_call, run_call
    from aimux_ops.ops.models import CallParams

    call_params = CallParams.model_validate(p)
    with pytest.raises(AimuxError) as raised:
        run_call(
            "generate_text",
            call_params,
            lambda: neutral_call(call_params, stream=False),
            lambda r: {"text": r.text},
        )
    wrapper = RuntimeError("the host's own wrapper")
    wrapper.__cause__ = raised.value
    env = aimux_ops.wire.envelope.project(wrapper)
    assert REDACTED in env.decode()
    assert_no_hits(env)


# -- a key split across text deltas -----------------------------------------------------------------


def _deltas(texts: list[str]) -> list[dict[str, Any]]:
    return [{"type": "text-delta", "text": t} for t in texts]


def _run_deltas(scrub: redact.DeltaScrub, batches: list[list[str]]) -> str:
    out = []
    for texts in batches:
        for event in scrub.batch(_deltas(texts)):
            out.append(event["text"])
    if scrub.held:
        out.append(scrub.flush()["text"])
    return "".join(out)


def test_a_key_split_across_deltas_at_every_place_is_redacted() -> None:
    """Every split of ``hello <key> world`` in two or three deltas, one read each or one read for
    all: the text comes out whole but the key, of which at most 3 leading characters go out
    before the delta that completes it."""
    key = canary(8)
    secrets = redact.Secrets([key])
    text = f"hi {key} ok"
    n = len(text)
    for i in range(1, n):
        for j in [*range(i + 1, n, 3), n]:
            parts = [p for p in (text[:i], text[i:j], text[j:]) if p]
            for batches in ([[p] for p in parts], [parts]):
                got = _run_deltas(redact.DeltaScrub(secrets), batches)
                assert not hits(got), (parts, got)
                head = got.removeprefix("hi ").partition(REDACTED)[0]
                assert got == f"hi {head}{REDACTED} ok" and key.startswith(head), (parts, got)
                assert len(head) < 4, (parts, got)


def test_deltas_without_a_key_are_left_as_they_are() -> None:
    scrub = redact.DeltaScrub(redact.Secrets([canary(9)]))
    for texts in (["Hel", "lo!"], ["Zq", "0"], ["a Zq000", "09 b"], ["w1 ", "w2 "]):
        events = _deltas(texts)
        assert scrub.batch(events) == events


def test_a_batch_of_events_is_scrubbed_as_scrub_values_scrubs_it() -> None:
    """``scrub_events`` (the stream's per-read scrub) answers what ``scrub_values`` answers for
    every batch: a call's key, a remembered secret, a shaped token or an escaped form in a
    delta's text, in the key or the type of a delta-shaped event, and in any other event; the
    same object when nothing in it could be scrubbed."""
    rng = random.Random(26)
    key = canary(26)
    remembered = "remembered-" + canary(27)
    redact.remember_secret(remembered)
    forms = [key, json_escaped(key), url_encoded(key), remembered, "sk-" + "Q" * 24]
    forms += ["Bearer abcdefgh", "text-delta", "plain", "Hel", "lo!", "", "\\u0041", "%41"]

    def event() -> Any:
        text = "".join(rng.choice(forms) for _ in range(rng.randint(0, 2)))
        shape = rng.random()
        if shape < 0.7:
            return {"type": "text-delta", "text": text}
        if shape < 0.8:
            return {"type": text or "text-delta", "text": "x"}
        if shape < 0.85:
            return {"type": "text-delta", text or "text": "x"}
        if shape < 0.9:
            return {"type": "text-delta", "text": "x", "extra": text}
        return {"type": "finish", "usage": {"inputTokens": 1}, "note": [text]}

    # the second key is the delta's own type: its key and type are strings a scrub sees too
    for secrets in ([key], [key, "text-delta"]):
        # a stream's DeltaScrub given the batch's plain text answers what it finds itself
        found, given = (
            redact.DeltaScrub(redact.Secrets(secrets)),
            redact.DeltaScrub(redact.Secrets(secrets)),
        )
        with redact.Secrets(secrets).active():
            for _ in range(3000):
                batch = [event() for _ in range(rng.randint(0, 6))]
                want = redact.scrub_values(batch)
                for got in (
                    redact.scrub_events(batch),
                    redact.scrub_events(batch, redact.plain_text(batch)),
                ):
                    assert got == want, batch
                    assert (got is batch) == (want is batch), batch
                    assert not hits(orjson.dumps(got).decode()), batch
                try:
                    rewritten = found.batch(batch)
                except KeyError:  # a text-delta without a text (no provider makes one)
                    with pytest.raises(KeyError):
                        given.batch(batch, redact.plain_text(batch))
                    continue
                assert given.batch(batch, redact.plain_text(batch)) == rewritten
                assert given.held == found.held


@pytest.mark.parametrize("split", [2, 5, 7, 23])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_echoing_the_key_split_in_deltas(
    server: FaultServer, provider: str, split: int, tmp_path: Path
) -> None:
    """The provider echoes the raw key in deltas of ``split`` characters: the events' text holds
    no recognisable part of it, however the deltas fall into network reads (at most 3 leading
    characters go out). Its escaped and encoded forms, split too, are redacted once complete:
    what of them went out before the read that completes them is not held (a known limit, as is
    the recording of such a stream, which keeps each read's data scrubbed alone: neither is
    scanned here; docs/DESIGN.md)."""
    key = canary(100 + split)
    p = params(server, provider, key, f"mode=echoall;status=200;split={split}")
    events = list(aimux_ops.stream("stream_text", p))
    text = "".join(e["text"] for e in events if e["type"] == "text-delta")
    raw = text.partition(" | ")[0]
    assert raw.endswith(REDACTED) and key.startswith(raw.removesuffix(REDACTED))
    assert len(raw) - len(REDACTED) < 4  # the head that went out
    for form in echo_forms(key):
        assert form not in text
    assert key[4:12] not in text and key[-8:] not in text
