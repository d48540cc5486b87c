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


def _str(arg: tuple[Any, Any], value: Any) -> Any:
    if type(value) is not str:
        raise _Refused
    low, high = arg
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        raise _Refused
    return value


def _int(arg: tuple[Any, Any], value: Any) -> Any:
    if type(value) is not int:
        raise _Refused
    return _bounded(value, arg)


def _float(arg: tuple[Any, Any], value: Any) -> Any:
    t = type(value)
    if t is int and -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT:
        value = float(value)
    elif t is not float or not math.isfinite(value):
        raise _Refused
    return _bounded(value, arg)


def _bool(arg: None, value: Any) -> Any:
    if type(value) is not bool:
        raise _Refused
    return value


def _literal(arg: tuple[str, ...], value: Any) -> Any:
    if type(value) is not str or value not in arg:
        raise _Refused
    return value


def _nested(arg: str, value: Any) -> Any:
    if type(value) is not dict:
        raise _Refused
    return _model(arg, value)


def _dict_str_str(arg: None, value: Any) -> Any:
    if type(value) is not dict:
        raise _Refused
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            raise _Refused
    return dict(value)


def _list_str(arg: None, value: Any) -> Any:
    if type(value) is not list:
        raise _Refused
    for v in value:
        if type(v) is not str:
            raise _Refused
    return list(value)


def _opaque(arg: None, value: Any) -> Any:
    raise _Refused  # pydantic's


#: per kind of the table: its check (the value as the model holds it, or ``_Refused``)
_CHECKS: dict[str, Any] = {
    "str": _str,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "literal": _literal,
    "model": _nested,
    "dict_str_str": _dict_str_str,
    "list_str": _list_str,
    "opaque": _opaque,
}


#: per model: its fields by wire name (attribute, check, argument, None allowed), its
#: defaults by attribute, its required wire names: the table's rows, indexed on first use
_Indexed = tuple[dict[str, tuple[str, Any, Any, bool]], dict[str, Any], tuple[str, ...]]
_INDEXED: dict[str, _Indexed] = {}


def _indexed(name: str) -> _Indexed:
    rows = MODELS[name]
    by_wire = {w: (a, _CHECKS.get(k, _opaque), arg, n) for w, a, k, arg, n, _, _ in rows}
    defaults = {a: default for _, a, _, _, _, required, default in rows if not required}
    required = tuple(w for w, _, _, _, _, r, _ in rows if r)
    indexed = _INDEXED[name] = (by_wire, defaults, required)
    return indexed


def _model(name: str, data: dict[str, Any]) -> Checked:
    by_wire, defaults, required = _INDEXED.get(name) or _indexed(name)
    for wire in required:
        if wire not in data:
            raise _Refused
    values = defaults.copy()
    for wire, value in data.items():
        field = by_wire.get(wire)
        if field is None:  # no field's wire name (snake_case, unknown)
            raise _Refused
        attribute, check, arg, nullable = field
        values[attribute] = None if value is None and nullable else check(arg, value)
    return Checked(name, data, values)


def precheck(model: str, data: Any) -> Checked | None:
    """``data`` as the params model ``model`` would hold it, or None (pydantic's to decide)."""
    if model not in MODELS or type(data) is not dict:
        return None
    try:
        return _model(model, data)
    except _Refused:
        return None
