"""The params pre-check (``aimux_ops.ops.precheck``) against pydantic, on one corpus: every
params it accepts, the model accepts too and holds the very same values (types included, nested
models field by field, the same ``model_dump``); whatever it cannot prove goes to pydantic, so a
violation's envelope is pydantic's as before. The corpus: the recordings' and the contract calls'
params, and each of them with every field in turn given values of every JSON type, out of its
bounds, renamed (snake_case), removed, or joined by an unknown key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ValidationError

from aimux_ops.boundary import dispatch
from aimux_ops.ops import models
from aimux_ops.ops._params_table import MODELS
from aimux_ops.ops.precheck import Checked, precheck

ROOT = Path(__file__).resolve().parent.parent

#: the values each field is given in turn (every JSON type, edges of the bounds)
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    1000,
    1001,
    2**31 - 1,
    2**31,
    2**53,
    2**53 + 1,
    2**70,
    0.0,
    -0.0,
    0.5,
    1.0,
    1e300,
    "",
    "x",
    "replay",
    "record",
    "to-model",
    "1",
    [],
    ["a"],
    ["a", 1],
    {},
    {"a": "b"},
    {"a": 1},
    {"mode": "replay", "path": "p"},
    {"initialDelayMs": 1, "backoffFactor": 1.5},
]


def _bases() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for rec in sorted((ROOT / "recordings").glob("*.jsonl")):
        for line in rec.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("op") in ("generate_text", "stream_text", "generate_object"):
                out.append((entry["op"], entry["params"]))
    cases = json.loads((ROOT / "contract-tests" / "calls" / "cases.json").read_text())["cases"]
    for case in cases:
        if case["op"] in ("generate_text", "stream_text") and isinstance(case["params"], dict):
            out.append((case["op"], case["params"]))
    demo = {
        "model": {
            "provider": "openai",
            "modelId": "gpt-4o-mini",
            "baseURL": "http://127.0.0.1:1/v1",
            "apiKey": "sk-x",
            "headers": {"x-a": "b"},
        },
        "system": "s",
        "prompt": "Say hello in one word.",
        "maxOutputTokens": 5,
        "temperature": 1,
        "topP": 0.5,
        "topK": 3,
        "seed": 7,
        "stopSequences": ["x"],
        "headers": {"x-b": "c"},
        "maxRetries": 0,
        "retry": {"initialDelayMs": 0, "backoffFactor": 2},
        "timeoutMs": 1000,
        "recording": {"mode": "replay", "path": "p"},
        "toolFailures": "to-model",
    }
    out.append(("generate_text", demo))
    return out


_MODEL_OF = {
    "generate_text": "GenerateTextParams",
    "stream_text": "StreamTextParams",
    "generate_object": "GenerateObjectParams",
}


def _variants(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = [data, {**data, "unknownKey": 1}, {k: v for k, v in data.items() if k != "model"}]
    for key in [*data, "temperature", "retry", "timeoutMs", "messages", "toolChoice"]:
        for value in VALUES:
            out.append({**data, key: value})
        out.append({k: v for k, v in data.items() if k != key})
    for key in ("maxRetries", "timeoutMs"):  # a snake_case name (populate_by_name)
        snake = "max_retries" if key == "maxRetries" else "timeout_ms"
        out.append({**{k: v for k, v in data.items() if k != key}, snake: 1})
    model = data.get("model")
    if isinstance(model, dict):
        for key in ["provider", "modelId", "baseURL", "apiKey", "headers", "model_id"]:
            for value in VALUES:
                out.append({**data, "model": {**model, key: value}})
            out.append({**data, "model": {k: v for k, v in model.items() if k != key}})
    for nested in ("recording", "retry"):
        held = data.get(nested)
        if isinstance(held, dict):
            for key in [*held, "extra"]:
                for value in VALUES:
                    out.append({**data, nested: {**held, key: value}})
    return out


def _same(checked: Any, model: Any, where: str) -> None:
    if isinstance(model, BaseModel):
        assert isinstance(checked, Checked), where
        for name in type(model).model_fields:
            _same(getattr(checked, name), getattr(model, name), f"{where}.{name}")
        return
    assert type(checked) is type(model), (where, checked, model)
    assert checked == model, (where, checked, model)


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    return [(_MODEL_OF[op], v) for op, data in _bases() for v in _variants(data)]


def test_what_the_precheck_accepts_pydantic_accepts_with_the_same_values() -> None:
    accepted = refused_by_both = to_pydantic = 0
    for name, data in _corpus():
        cls = getattr(models, name)
        checked = precheck(name, data)
        try:
            held = cls.model_validate(data)
        except ValidationError:
            held = None
        if checked is None:
            if held is None:
                refused_by_both += 1
            else:
                to_pydantic += 1
            continue
        assert held is not None, (name, data)
        _same(checked, held, name)
        dump = {"mode": "json", "by_alias": True, "exclude_none": True}
        assert checked.model_dump(**dump) == held.model_dump(**dump)
        accepted += 1
    # the corpus exercises all three outcomes (a fast path that silently turned off fails here)
    assert accepted > 300 and refused_by_both > 300 and to_pydantic > 30, (
        accepted,
        refused_by_both,
        to_pydantic,
    )


def test_the_common_shapes_pass_the_precheck() -> None:
    """Every base params of a prompt without tools: the recordings' replays among them."""
    passed = 0
    for op, data in _bases():
        if op == "generate_object" or {"messages", "tools", "toolChoice", "stopWhen"} & set(data):
            continue
        try:
            getattr(models, _MODEL_OF[op]).model_validate(data)
        except ValidationError:
            continue  # a contract case of invalid params
        assert precheck(_MODEL_OF[op], data) is not None, data
        passed += 1
    assert passed >= 5


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_table_names_every_field_of_its_model(name: str) -> None:
    cls = getattr(models, name)
    rows = MODELS[name]
    assert [r[1] for r in rows] == list(cls.model_fields)
    assert [r[0] for r in rows] == [i.alias or n for n, i in cls.model_fields.items()]


def test_invalid_params_answer_pydantics_violations_as_before() -> None:
    """Params the pre-check refuses are pydantic's: the 301 names every violation."""
    bad = {"model": {"provider": "openai", "modelId": ""}, "prompt": 1, "maxRetries": -1}
    _, env = dispatch.call_json(b"generate_text", orjson.dumps(bad))
    assert env is not None
    error = orjson.loads(env)["error"]
    assert error["name"] == "InvalidParamsError"
    assert [v["path"] for v in error["violations"]] == ["model.modelId", "prompt", "maxRetries"]


def test_a_checked_params_repr_names_its_fields_never_their_values() -> None:
    checked = precheck(
        "GenerateTextParams",
        {"model": {"provider": "openai", "modelId": "m", "apiKey": "sk-secret-1"}, "prompt": "p"},
    )
    assert checked is not None
    shown = repr(checked) + repr(checked.model)
    assert "sk-secret-1" not in shown and "api_key" in shown
