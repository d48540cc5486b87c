"""The params pre-check: a provider op's params accepted without pydantic when they can be
proved to be what the params model would accept and hold (cold start: a call on a common shape
never creates the model classes nor loads pydantic).

The rules are the models' own, read from ``_params_table`` (generated from ``models`` by
``aimux_ops.codegen``; ``make check-schema`` fails on drift). The check is conservative: it
accepts a value only when its type is exactly one the field takes as it is (a str for a ``str``,
an int that is not a bool for an ``int``, an int or a finite float for a ``float``, held as the
float pydantic makes of it; a dict of str for ``dict[str, str]`` ...), within the field's
bounds, under the field's wire name. Anything else (an ``opaque`` field present, a snake_case
name, an unknown key, a value pydantic would coerce or refuse) answers None, and the params go
to pydantic, whose answer (its violations included) is the call's. ``tests/test_precheck.py``
runs a corpus through both and requires the same values.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from ._params_table import MODELS

__all__ = ["Checked", "precheck"]

#: ints a float field holds exactly as pydantic converts them (beyond: pydantic's)
_EXACT_FLOAT_INT = 2**53


class Checked:
    """Params (or a nested value) the pre-check accepted: the model's fields as attributes,
    holding what an instance of the model would hold. ``model_dump`` is the model's own, on
    the same input (the model is created then: a recording's params)."""

    def __init__(self, model: str, data: dict[str, Any], values: dict[str, Any]) -> None:
        self.__dict__.update(values)
        self._model = model
        self._data = data

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        cls: Any = getattr(importlib.import_module("aimux_ops.ops.models"), self._model)
        dumped: dict[str, Any] = cls.model_validate(self._data).model_dump(**kwargs)
        return dumped

    def __repr__(self) -> str:
        # the names of the fields given, never their values (an API key is one of them)
        given = ", ".join(k for k, v in self.__dict__.items() if k[0] != "_" and v is not None)
        return f"Checked[{self._model}]({given})"


class _Refused(Exception):
    """A value the pre-check cannot prove (never leaves this module)."""


def _bounded(value: Any, bounds: tuple[Any, Any]) -> Any:
    low, high = bounds
    if (low is not None and value < low) or (high is not None and value > high):
        raise _Refused
    return value


def _value(kind: str, arg: Any, value: Any) -> Any:
    t = type(value)
    if kind == "str":
        if t is not str:
            raise _Refused
        low, high = arg
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            raise _Refused
        return value
    if kind == "int":
        if t is not int:
            raise _Refused
        return _bounded(value, arg)
    if kind == "float":
        if t is int and -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT:
            value = float(value)
        elif t is not float or not math.isfinite(value):
            raise _Refused
        return _bounded(value, arg)
    if kind == "bool":
        if t is not bool:
            raise _Refused
        return value
    if kind == "literal":
        if t is not str or value not in arg:
            raise _Refused
        return value
    if kind == "model":
        if t is not dict:
            raise _Refused
        return _model(arg, value)
    if kind == "dict_str_str":
        if t is not dict:
            raise _Refused
        for k, v in value.items():
            if type(k) is not str or type(v) is not str:
                raise _Refused
        return dict(value)
    if kind == "list_str":
        if t is not list:
            raise _Refused
        for v in value:
            if type(v) is not str:
                raise _Refused
        return list(value)
    raise _Refused  # opaque: pydantic's


def _model(name: str, data: dict[str, Any]) -> Checked:
    rows = MODELS[name]
    values: dict[str, Any] = {}
    seen = 0
    for wire, attribute, kind, arg, nullable, required, default in rows:
        if wire not in data:
            if required:
                raise _Refused
            values[attribute] = default
            continue
        seen += 1
        value = data[wire]
        if value is None and nullable:
            values[attribute] = None
        else:
            values[attribute] = _value(kind, arg, value)
    if seen != len(data):  # a key that is no field's wire name (snake_case, unknown)
        raise _Refused
    return Checked(name, data, values)


def precheck(model: str, data: Any) -> Checked | None:
    """``data`` as the params model ``model`` would hold it, or None (pydantic's to decide)."""
    if model not in MODELS or type(data) is not dict:
        return None
    try:
        return _model(model, data)
    except _Refused:
        return None
