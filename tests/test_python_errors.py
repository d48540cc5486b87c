"""Errors as a Python user meets them (#29): a source node's class prints and matches as the
original type, ``status_code`` on the error caught (a RetryError: its last attempt's), and a
wrong mode's message names Python's API, not the C one."""

from __future__ import annotations

import re
import traceback
from typing import Any

import pytest
from helpers import closed_port
from scenario_server import json_reply, serve_scenarios

import aimux_ops
from aimux_ops.errors import RetryError, SourceError, WrongModeError


def _params(base_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": {"provider": "openai", "modelId": "m", "baseURL": base_url, "apiKey": "k"},
        "prompt": "hi",
        "retry": {"initialDelayMs": 1, "backoffFactor": 1},
        **extra,
    }


def test_a_refused_connection_shows_and_matches_as_connection_refused() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(aimux_ops.AimuxError) as caught:
        aimux_ops.call("generate_text", _params(url, maxRetries=0))
    chain: list[BaseException] = []
    node: BaseException | None = caught.value
    while node is not None:
        chain.append(node)
        node = node.__cause__
    sources = [e for e in chain if isinstance(e, SourceError)]
    assert sources, chain
    refused = [e for e in sources if isinstance(e, ConnectionRefusedError)]
    assert refused and refused[0].type == "ConnectionRefusedError"
    assert type(refused[0]) is SourceError.named("ConnectionRefusedError")
    printed = "".join(traceback.format_exception(caught.value))
    assert re.search(r"^ConnectionRefusedError: ", printed, re.M), printed
    assert "aimux_ops.errors._base.SourceError" not in printed


def test_a_foreign_type_name_prints_with_its_module_and_is_matched_by_name() -> None:
    cls = SourceError.named("java.io.IOException")
    assert cls is SourceError.named("java.io.IOException")
    assert (cls.__module__, cls.__qualname__) == ("java.io", "IOException")
    err = aimux_ops.decode_error(
        {
            "kind": "aimux",
            "code": 22,
            "message": "tool failed",
            "error": {"name": "AI_ToolExecutionError"},
            "cause": {"message": "disk gone", "type": "java.io.IOException"},
        }
    )
    assert isinstance(err.__cause__, cls) and isinstance(err.__cause__, SourceError)
    assert "java.io.IOException: disk gone" in "".join(traceback.format_exception(err))


def test_a_builtin_whose_constructor_differs_is_a_plain_snapshot() -> None:
    cls = SourceError.named("UnicodeDecodeError")
    assert not issubclass(cls, UnicodeDecodeError) and cls.__name__ == "UnicodeDecodeError"
    assert not issubclass(SourceError.named("StopIteration"), StopIteration)
    assert SourceError.named(None) is SourceError and SourceError.named("") is SourceError


def test_retry_error_has_the_last_attempts_status_code() -> None:
    with serve_scenarios() as server:
        url = server.add(
            "busy",
            json_reply({"error": {"message": "slow down"}}, 503),
            json_reply({"error": {"message": "rate limited"}}, 429, **{"retry-after": "0"}),
        )
        with pytest.raises(RetryError) as caught:
            aimux_ops.call("generate_text", _params(url, maxRetries=1))
    assert caught.value.status_code == 429
    assert [a.status_code for a in caught.value.errors or []] == [503, 429]


def test_status_code_on_the_envelope_node_wins() -> None:
    err = aimux_ops.decode_error(
        {
            "kind": "aimux",
            "code": 14,
            "message": "x",
            "error": {"name": "AI_RetryError", "reason": "maxRetriesExceeded", "statusCode": 418},
        }
    )
    assert err.status_code == 418


def test_a_stream_op_passed_to_call_names_pythons_api() -> None:
    with pytest.raises(WrongModeError) as caught:
        aimux_ops.call("stream_text", _params("http://127.0.0.1:1/v1"))
    assert "aimux_ops.stream" in str(caught.value) and "aimux_stream" not in str(caught.value)
    with pytest.raises(WrongModeError) as caught:
        list(aimux_ops.stream("generate_text", _params("http://127.0.0.1:1/v1")))
    assert "aimux_ops.call" in str(caught.value) and "aimux_call" not in str(caught.value)


def test_a_named_source_error_pickles_and_copies_as_its_class() -> None:
    import copy
    import pickle

    err = SourceError.named("ConnectionRefusedError")("refused", "ConnectionRefusedError")
    err.raw = {"message": "refused", "type": "ConnectionRefusedError"}
    for again in (pickle.loads(pickle.dumps(err)), copy.copy(err)):
        assert type(again) is type(err) and isinstance(again, ConnectionRefusedError)
        assert (str(again), again.type, again.raw) == ("refused", err.type, err.raw)
