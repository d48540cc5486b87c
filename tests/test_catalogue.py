"""The catalogue as users see it: declared once, fields as attributes, one decode path, and the
docs that restate it (the errors package's tree, DESIGN.md's table) checked against it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import aimux_ops.errors as errors_pkg
from aimux_ops.codegen import docs
from aimux_ops.errors import (
    KIND_RANGES,
    AIError,
    APICallError,
    InvalidParamsError,
    NoSuchProviderError,
    RetryError,
    Violation,
    catalogue,
    constant_of,
    kind_of_code,
)
from aimux_ops.wire.envelope import decode_error, project

REPO = Path(__file__).resolve().parent.parent


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def test_the_docstring_tree_lists_every_variant_with_its_code_and_fields() -> None:
    doc = errors_pkg.__doc__ or ""
    # one entry = its line plus the continuation lines (a field list may wrap)
    entries: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        m = re.search(r"[├└]── (\w+)\s", line)
        if m:
            current = m.group(1)
            entries[current] = line
        elif current and re.match(r"^\s*[│ ]+\s{20,}\S", line):
            entries[current] += " " + line
    for cls in catalogue():
        entry = entries.get(cls.__name__)
        assert entry is not None, f"{cls.__name__} is missing from the tree"
        assert re.search(rf"\s{cls.code}\s", entry + " "), (cls.__name__, entry)
        if cls.kind == "aimux":
            assert cls.error_name in entry
        after = re.sub(r"\([^)]*\)|\[[^\]]*\]", "", entry.split(cls.__name__, 1)[1])
        listed = re.findall(r"\b([a-z][A-Za-z]+)\b", after)
        wire = [_camel(f) for f in cls._field_names]
        for f in wire:
            assert f in listed, f"{cls.__name__}: field {f} not in the tree: {entry}"
        for word in listed:
            assert word in wire, f"{cls.__name__}: the tree lists {word}, the class has {wire}"
    assert set(entries) - {c.__name__ for c in catalogue()} <= {
        "AIError", "RecordingError", "BindingError", "ProtocolError", "UnknownError",
    }  # fmt: skip


def test_the_design_table_is_the_generated_one() -> None:
    text = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    table = text.split(docs.BEGIN, 1)[1].split(docs.END, 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| kind")]
    assert len(rows) == len(catalogue())
    for cls in catalogue():
        assert f"| {cls.kind} | {cls.code} | {cls.constant} | {cls.error_name} |" in table


def test_constants_follow_the_class_name() -> None:
    assert constant_of("APICall") == "API_CALL"
    assert constant_of("LoadAPIKey") == "LOAD_API_KEY"
    assert constant_of("JSONParse") == "JSON_PARSE"
    assert constant_of("InvalidUTF8") == "INVALID_UTF8"
    assert constant_of("InvalidWireJSON") == "INVALID_WIRE_JSON"
    assert constant_of("NoSuchModel") == "NO_SUCH_MODEL"
    for cls in catalogue():
        low, high = KIND_RANGES[cls.kind]
        assert low <= cls.code <= high and kind_of_code(cls.code) == cls.kind


def test_payload_fields_are_attributes() -> None:
    err = APICallError("boom", status_code=503, is_retryable=True, response_body="busy")
    assert (err.status_code, err.is_retryable, err.response_body) == (503, True, "busy")
    assert err.payload.status_code == 503  # the compatibility view
    assert err.retryable
    err.status_code = 504
    assert err.payload_fields()["statusCode"] == 504  # one state, however it is set
    err.payload.response_body = "later"
    assert err.response_body == "later"
    npe = NoSuchProviderError(provider_id="x", available_providers=["openai"], model_id="m")
    assert (npe.provider_id, npe.available_providers, npe.model_id, npe.model_type) == (
        "x", ["openai"], "m", None,
    )  # fmt: skip
    assert "model_id='m'" in repr(npe)
    with pytest.raises(AttributeError):
        _ = npe.no_such_field


def test_declaring_an_error_takes_a_class_a_code_and_fields() -> None:
    class ThrowawayQuotaError(AIError, code=97):
        """A test-only variant."""

        quota_name: str | None = None
        limit: int | None = None

    try:
        assert ThrowawayQuotaError.constant == "THROWAWAY_QUOTA"
        assert ThrowawayQuotaError.error_name == "AI_ThrowawayQuotaError"
        assert ThrowawayQuotaError.description == "A test-only variant."
        err = ThrowawayQuotaError(quota_name="tokens", limit=10)
        back = decode_error(project(err))
        assert type(back) is ThrowawayQuotaError
        assert (back.quota_name, back.limit, back.message) == ("tokens", 10, "A test-only variant.")
    finally:  # keep the process-wide catalogue as shipped
        from aimux_ops.errors import _base

        _base._ORDER.remove(ThrowawayQuotaError)
        del _base._BY_NAME[("aimux", "AI_ThrowawayQuotaError")]
        del _base._BY_CODE[("aimux", 97)]


def test_decoding_builds_errors_through_the_constructor() -> None:
    inner = APICallError("rate limited", status_code=429, response_headers={"retry-after": "1"})
    outer = RetryError(reason="maxRetriesExceeded", errors=[inner])
    back = decode_error(project(outer))
    assert isinstance(back, RetryError)
    assert back.reason == "maxRetriesExceeded"
    assert isinstance(back.errors[0], APICallError) and back.errors[0].status_code == 429
    assert back.__cause__ is back.errors[-1]
    params = InvalidParamsError(op="x", violations=[Violation(path="model", reason="missing")])
    got = decode_error(project(params))
    assert isinstance(got, InvalidParamsError)
    assert got.violations is not None and got.violations[0].path == "model"
    # a payload that does not validate is kept as sent (a newer or foreign core), not dropped
    odd = decode_error(
        b'{"kind":"aimux","code":11,"message":"m","error":{"name":"AI_APICallError",'
        b'"statusCode":"five hundred","future":1},"retryable":false}'
    )
    assert isinstance(odd, APICallError)
    assert odd.status_code == "five hundred" and odd.future == 1
