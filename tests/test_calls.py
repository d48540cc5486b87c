"""The call-level shared fixtures (contract-tests/calls/cases.json) through the Python API.

Every binding runs the same cases through its own public API (DESIGN.md "Call-level
fixtures"): ``aimux_ops.call`` / ``aimux_ops.stream`` for params, ``dispatch.call_json`` (the
in-process ``aimux_call``: JSON text in) for raw params text.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jsonschema
import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "contract-tests"))

from make_calls import run_python, subset

DOC = json.loads((ROOT / "contract-tests" / "calls" / "cases.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DOC["cases"]
LOOPS = json.loads((ROOT / "contract-tests" / "calls" / "loops.json").read_text(encoding="utf-8"))
LOOP_CASES: list[dict[str, Any]] = LOOPS["cases"]


def test_cases_match_their_schema() -> None:
    jsonschema.validate(
        DOC, json.loads((ROOT / "contract-tests" / "calls.schema.json").read_text())
    )
    assert len({c["key"] for c in CASES}) == len(CASES)
    kinds = {next(iter(c["expect"])) for c in CASES}
    assert kinds == {"error", "result", "events"}


@pytest.mark.parametrize("case", CASES, ids=[c["key"] for c in CASES])
def test_call_case(case: dict[str, Any]) -> None:
    got = run_python(case)
    assert subset(case["expect"], got), got


def test_loop_cases_match_their_schema() -> None:
    jsonschema.validate(
        LOOPS, json.loads((ROOT / "contract-tests" / "calls.schema.json").read_text())
    )
    assert len({c["key"] for c in LOOP_CASES}) == len(LOOP_CASES)
    assert {c["params"]["model"]["provider"] for c in LOOP_CASES} == {"openai", "anthropic"}


@pytest.mark.parametrize("case", LOOP_CASES, ids=[c["key"] for c in LOOP_CASES])
def test_loop_case(case: dict[str, Any]) -> None:
    got = run_python(case)
    assert subset(case["expect"], got), got


def test_a_wrong_tool_answer_finds_no_recorded_exchange() -> None:
    """The replay is the assertion of what the model was sent: another output is no match."""
    case = next(c for c in LOOP_CASES if c["key"] == "loop-ok-openai")
    from make_calls import resolve

    import aimux_ops

    with pytest.raises(aimux_ops.AimuxError) as caught:
        aimux_ops.call(
            "generate_text", resolve(case["params"]), execute={"weather": lambda a: "rainy"}
        )
    assert caught.value.code == 102


def test_subset_rule() -> None:
    assert subset({"a": 1}, {"a": 1, "b": 2})
    assert not subset({"a": 1}, {"a": True})
    assert not subset([1], [1, 2])
    assert not subset({"a": {"b": 1}}, {"a": {"b": 2}})
