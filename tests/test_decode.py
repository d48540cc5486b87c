"""decode_error and the Python decode-chain over every contract vector (CONTRACT §4)."""

from __future__ import annotations

import json
import subprocess
import sys

import orjson
import pytest
from helpers import ROOT, assert_valid_envelope, load_vectors, validator

import aimux_ops
from aimux_ops import errors as E
from aimux_ops.decode_chain import walk
from aimux_ops.envelope import decode_error, native_chain, project

VECTORS = load_vectors()


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
    err = decode_error(orjson.dumps(doc["envelope"]))
    assert walk(err) == doc["chain"]
    # the decoded error projects back to the same chain (one projection, lossless for vectors)
    again = orjson.loads(project(err))
    if "truncated" not in json.dumps(doc["envelope"]):
        assert again["message"] == doc["envelope"]["message"]
        assert [n.get("message") for n in native_chain(again)] == [c["message"] for c in doc["chain"]]


def test_decode_classes_and_fields() -> None:
    doc = dict(VECTORS)["001-api-call-429-retry-after.json"]
    err = decode_error(doc["envelope"])
    assert type(err) is E.APICallError
    assert isinstance(err, E.APICallError)
    assert err.status_code == 429 and err.is_retryable and err.retryable
    assert err.retry_after_ms == 250
    assert err.raw == doc["envelope"]


def test_retry_last_attempt_is_the_cause() -> None:
    doc = dict(VECTORS)["016-retry-error-not-retryable.json"]
    err = decode_error(json.dumps(doc["envelope"]))
    assert isinstance(err, E.RetryError)
    assert len(err.errors) == 2 and err.__cause__ is err.errors[-1]
    assert isinstance(err.__cause__, E.APICallError) and err.__cause__.status_code == 400
    assert err.reason == "errorNotRetryable"


def test_unknown_code_and_kind_keep_raw_json() -> None:
    d = dict(VECTORS)
    err = decode_error(d["021-unknown-code.json"]["envelope"])
    assert type(err) is E.UnknownError and err.code == 77 and err.kind == "aimux"
    assert err.raw is not None and err.raw["error"]["futureField"] == [1, 2]
    assert isinstance(err.__cause__, E.SourceError) and err.__cause__.type == "OSError"
    err = decode_error(d["023-unknown-kind.json"]["envelope"])
    assert type(err) is E.UnknownError and err.kind == "telemetry" and err.code == 901
    assert orjson.loads(project(err))["error"] == {"name": "ExporterError"}


def test_transport_vector_python_chain() -> None:
    err = decode_error(dict(VECTORS)["019-transport-retry-connection-refused.json"]["envelope"])
    link: BaseException | None = err
    seen = []
    while link is not None:
        seen.append(type(link).__name__)
        link = link.__cause__
    assert seen == ["RetryError", "APICallError", "SourceError", "SourceError", "SourceError"]


def test_decode_rejects_non_envelopes() -> None:
    with pytest.raises(E.InvalidWireJsonError):
        decode_error(b"{not json")
    with pytest.raises(E.InvalidWireJsonError):
        decode_error(b"[1, 2]")
    with pytest.raises(E.InvalidWireJsonError):
        decode_error({"message": "a source node"})


def test_call_raises_exactly_what_decode_error_gives() -> None:
    from aimux_ops.dispatch import call_json

    _, envelope = call_json("aimux.version", b'{"bogus": true}')
    assert envelope is not None
    expected = decode_error(envelope)
    with pytest.raises(E.InvalidParamsError) as info:
        aimux_ops.call("aimux.version", {"bogus": True})
    assert walk(info.value) == walk(expected)
    assert info.value.raw == expected.raw


def test_decode_chain_executable_on_one_vector() -> None:
    doc = dict(VECTORS)["019-transport-retry-connection-refused.json"]
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
    assert E.APICallError.is_instance(decode_error(dict(VECTORS)["001-api-call-429-retry-after.json"]["envelope"]))
    assert_valid_envelope(project(E.APICallError("x")))


@pytest.mark.parametrize(
    "root",
    [{"kind": "future"}, {"kind": "aimux", "code": -7, "message": "x", "error": {"name": "AI_Future"}},
     {"kind": "aimux", "code": 0, "message": "x", "error": {}}],
)
def test_root_without_a_valid_code_is_refused(root: dict) -> None:
    with pytest.raises(E.InvalidWireJsonError):
        decode_error(root)


def test_known_name_supplies_a_missing_code() -> None:
    err = decode_error({"kind": "aimux", "message": "x", "error": {"name": "AI_APICallError"}})
    assert isinstance(err, E.APICallError) and err.code == 11
    assert orjson.loads(project(err))["code"] == 11
