"""decode_error and the Python decode-chain over every contract vector (CONTRACT §4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from helpers import ROOT, assert_valid_envelope, load_vectors, validator

import aimux_ops
from aimux_ops import errors as E
from aimux_ops.wire.decode_chain import walk
from aimux_ops.wire.envelope import decode_error, native_chain, project

ALL_VECTORS = load_vectors()
VECTORS = [(n, d) for n, d in ALL_VECTORS if "rejected" not in d]
REJECTS = [(n, d) for n, d in ALL_VECTORS if "rejected" in d]


def wire(doc: dict) -> bytes:
    """The envelope as the vector runner sends it (its exact text when the vector has one)."""
    text = doc.get("envelopeText")
    return text.encode() if text is not None else orjson.dumps(doc["envelope"])


def test_there_are_vectors_for_every_variant() -> None:
    names = {doc["envelope"]["error"].get("name") for _, doc in VECTORS}
    for cls in E.catalogue():
        assert cls.error_name in names, cls
    assert len(VECTORS) >= 50


@pytest.mark.parametrize(("name", "doc"), VECTORS, ids=[n for n, _ in VECTORS])
def test_vector_decodes_to_its_chain(name: str, doc: dict) -> None:
    validator_doc = json.loads((ROOT / "contract-tests" / "vector.schema.json").read_text())
    import jsonschema

    jsonschema.validate(doc, validator_doc)
    if not doc.get("lenient"):
        validator("envelope.schema.json").validate(doc["envelope"])
    err = decode_error(wire(doc))
    assert walk(err) == doc["chain"]
    assert {"retryable": err.retryable, "retryAfterMs": err.retry_after_ms} == doc["root"]
    # the decoded error projects back to the same chain (one projection, lossless for vectors)
    again = orjson.loads(project(err))
    if "truncated" not in json.dumps(doc["envelope"]):
        assert again["message"] == doc["envelope"]["message"]
        assert [n.get("message") for n in native_chain(again)] == [
            c["message"] for c in doc["chain"]
        ]


@pytest.mark.parametrize(("name", "doc"), REJECTS, ids=[n for n, _ in REJECTS])
def test_rejected_vector_is_refused(name: str, doc: dict) -> None:
    with pytest.raises(E.InvalidWireJSONError) as info:
        decode_error(wire(doc))
    assert info.value.code == doc["rejected"]


def test_root_fields_are_reported_as_given_not_recomputed() -> None:
    """Issue 13: decode_error recomputed retryable / retryAfterMs from the payload (and from an
    HTTP-date retry-after, time-dependently); the root reports the envelope's own values."""
    env = dict(VECTORS)["root-fields-as-given.json"]["envelope"]
    err = decode_error(env)
    assert isinstance(err, E.APICallError) and err.is_retryable is False
    assert err.retryable is True and err.retry_after_ms == 1500
    err = decode_error({**env, "retryable": False, "retryAfterMs": None})
    assert err.retryable is False and err.retry_after_ms is None
    # a cause / attempt has no root fields: its own (payload) values
    retry = decode_error(dict(VECTORS)["root-not-retryable-despite-payload.json"]["envelope"])
    assert retry.retryable is False and retry.retry_after_ms is None
    assert isinstance(retry.__cause__, E.APICallError) and retry.__cause__.retry_after_ms == 40
    # re-projecting a decoded root keeps the root fields
    again = orjson.loads(project(err))
    assert again["retryable"] is False and "retryAfterMs" not in again


def test_root_code_beyond_int32_is_refused() -> None:
    """Issue 13: a root code beyond 32 bits reached the C accessor as code 0."""
    from aimux_ops.wire.envelope import chain_links

    for code in (2**32 + 11, 2**31, 2**63):
        env = {
            "kind": "aimux",
            "code": code,
            "message": "m",
            "error": {"name": "AI_APICallError"},
            "retryable": False,
        }
        with pytest.raises(E.InvalidWireJSONError):
            decode_error(env)
        with pytest.raises(E.InvalidWireJSONError):
            chain_links(orjson.dumps(env))
    assert (
        decode_error(
            {"kind": "aimux", "code": 2**31 - 1, "message": "m", "error": {}, "retryable": False}
        ).code
        == 2**31 - 1
    )


def test_decode_chain_long_lived_mode() -> None:
    lines = b"".join(wire(d) + b"\n" for _, d in ALL_VECTORS)
    out = subprocess.run(
        [str(ROOT / "bindings/python/decode-chain"), "--lines"],
        input=lines,
        capture_output=True,
        check=True,
        env={"PYTHON": sys.executable},
    )
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(answers) == len(ALL_VECTORS)
    for (name, doc), got in zip(ALL_VECTORS, answers, strict=True):
        if "rejected" in doc:
            assert got["rejected"]["code"] == doc["rejected"], name
        else:
            assert got == {"chain": doc["chain"], "root": doc["root"]}, name


def test_decode_classes_and_fields() -> None:
    doc = dict(VECTORS)["api-call-429-retry-after.json"]
    err = decode_error(doc["envelope"])
    assert type(err) is E.APICallError
    assert isinstance(err, E.APICallError)
    assert err.status_code == 429 and err.is_retryable and err.retryable
    assert err.retry_after_ms == 250
    assert err.raw == doc["envelope"]


def test_retry_last_attempt_is_the_cause() -> None:
    doc = dict(VECTORS)["retry-error-not-retryable.json"]
    err = decode_error(json.dumps(doc["envelope"]))
    assert isinstance(err, E.RetryError)
    assert len(err.errors) == 2 and err.__cause__ is err.errors[-1]
    assert isinstance(err.__cause__, E.APICallError) and err.__cause__.status_code == 400
    assert err.reason == "errorNotRetryable"


def test_unknown_code_and_kind_keep_raw_json() -> None:
    d = dict(VECTORS)
    err = decode_error(d["unknown-code.json"]["envelope"])
    assert type(err) is E.UnknownError and err.code == 77 and err.kind == "aimux"
    assert err.raw is not None and err.raw["error"]["futureField"] == [1, 2]
    assert isinstance(err.__cause__, E.SourceError) and err.__cause__.type == "OSError"
    err = decode_error(d["unknown-kind.json"]["envelope"])
    assert type(err) is E.UnknownError and err.kind == "telemetry" and err.code == 901
    assert orjson.loads(project(err))["error"] == {"name": "ExporterError"}


def test_transport_vector_python_chain() -> None:
    err = decode_error(dict(VECTORS)["transport-retry-connection-refused.json"]["envelope"])
    link: BaseException | None = err
    seen = []
    while link is not None:
        seen.append(f"{type(link).__module__}.{type(link).__qualname__}")
        link = link.__cause__
    # a source node's class is named as the original type (SourceError.named): a traceback
    # prints httpx.ConnectError, not aimux_ops.errors._base.SourceError
    assert seen == [
        "aimux_ops.errors.aimux.RetryError",
        "aimux_ops.errors.aimux.APICallError",
        "httpx.ConnectError",
        "httpcore.ConnectError",
        "builtins.ConnectionRefusedError",
    ]
    assert isinstance(err.__cause__.__cause__, E.SourceError)  # type: ignore[union-attr]


def test_decode_rejects_non_envelopes() -> None:
    with pytest.raises(E.InvalidWireJSONError):
        decode_error(b"{not json")
    with pytest.raises(E.InvalidWireJSONError):
        decode_error(b"[1, 2]")
    with pytest.raises(E.InvalidWireJSONError):
        decode_error({"message": "a source node"})


def test_call_raises_exactly_what_decode_error_gives() -> None:
    from aimux_ops.boundary.dispatch import call_json

    _, envelope = call_json("aimux.version", b'{"bogus": true}')
    assert envelope is not None
    expected = decode_error(envelope)
    with pytest.raises(E.InvalidParamsError) as info:
        aimux_ops.call("aimux.version", {"bogus": True})
    assert walk(info.value) == walk(expected)
    assert info.value.raw == expected.raw


def test_decode_chain_executable_on_one_vector() -> None:
    doc = dict(VECTORS)["transport-retry-connection-refused.json"]
    out = subprocess.run(
        [str(ROOT / "bindings/python/decode-chain")],
        input=json.dumps(doc["envelope"]).encode(),
        capture_output=True,
        check=True,
        env={"PYTHON": sys.executable},
    )
    assert json.loads(out.stdout) == doc["chain"]
    assert doc["chain"][-1]["message"].endswith("Connection refused")


def test_is_instance_is_marker_based() -> None:
    class Foreign(Exception):  # a class from "another copy of the package"
        kind = "aimux"
        error_name = "AI_APICallError"

    assert E.APICallError.is_instance(Foreign())
    assert not E.RetryError.is_instance(Foreign())
    assert E.APICallError.is_instance(
        decode_error(dict(VECTORS)["api-call-429-retry-after.json"]["envelope"])
    )
    assert_valid_envelope(project(E.APICallError("x")))


@pytest.mark.parametrize(
    "root",
    [
        {"kind": "future"},
        {"kind": "aimux", "code": -7, "message": "x", "error": {"name": "AI_Future"}},
        {"kind": "aimux", "code": 0, "message": "x", "error": {}},
    ],
)
def test_root_without_a_valid_code_is_refused(root: dict) -> None:
    with pytest.raises(E.InvalidWireJSONError):
        decode_error(root)


def test_known_name_supplies_a_missing_code() -> None:
    err = decode_error({"kind": "aimux", "message": "x", "error": {"name": "AI_APICallError"}})
    assert isinstance(err, E.APICallError) and err.code == 11
    assert orjson.loads(project(err))["code"] == 11


def test_vector_runner_failure_lists(tmp_path: Path) -> None:
    """run_decode_chain.py: a listed failure is reported but not counted; a listed vector that
    passes, and an unlisted failure, fail the run."""
    testee = tmp_path / "fake" / "decode-chain"
    testee.parent.mkdir()
    # the Python testee, except that it answers retryable wrong for one vector
    testee.write_text(
        "#!/bin/sh\n"
        f'"{sys.executable}" -m aimux_ops.wire.decode_chain "$@" | '
        f'"{sys.executable}" -c "import sys\n'
        "for l in sys.stdin:\n"
        "    if '\\\"Not Found\\\"' in l: l = l.replace('\\\"retryable\\\":false', '\\\"retryable\\\":true')\n"
        '    sys.stdout.write(l); sys.stdout.flush()"\n'
    )
    testee.chmod(0o755)
    lists = tmp_path / "lists"
    lists.mkdir()
    runner = [
        sys.executable,
        str(ROOT / "contract-tests" / "run_decode_chain.py"),
        f"--failure-lists={lists}",
        str(testee),
    ]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(runner, capture_output=True, text=True, check=False, cwd=ROOT)

    out = run()
    assert out.returncode == 1 and "aimux-node-without-name: root fields differ" in out.stderr, (
        out.stderr
    )
    (lists / "fake.txt").write_text("# known\naimux-node-without-name\n")
    out = run()
    assert out.returncode == 0 and "1 known failures" in out.stdout, out.stdout + out.stderr
    (lists / "fake.txt").write_text("aimux-node-without-name\nunicode-message\n")
    out = run()
    assert (
        out.returncode == 1 and "unicode-message: passes but is in the failure list" in out.stderr
    )
