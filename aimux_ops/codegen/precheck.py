"""``aimux_ops/ops/_params_table.py``: the provider ops' params models as the params pre-check
(``aimux_ops.ops.precheck``) reads them, derived from the pydantic models themselves.

Per model, per field: its wire name, attribute, the kind of value the pre-check can prove the
model would accept unchanged (``str``, ``int``, ``float``, ``bool``, ``literal``, ``model``,
``dict_str_str``, ``list_str``) with its bounds, whether None is allowed, whether it is required,
and its default. A field of any other type, or with a validator or constraint this module does
not know, is ``opaque``: present in a call's params, it sends them to pydantic. A model whose
config or decorators could change a value, or a field's default the table cannot hold, is left
out (its params always go to pydantic).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel, WithJsonSchema

from ..ops.registry import Deferred, all_ops

__all__ = ["OUT", "render", "table"]

OUT = "aimux_ops/ops/_params_table.py"

#: config keys that change no validated value (``extra`` must be "forbid": an unknown key is
#: pydantic's to refuse)
_NEUTRAL_CONFIG = {"alias_generator", "populate_by_name", "frozen", "defer_build", "title"}
#: metadata that only shapes the JSON Schema
_NEUTRAL_METADATA = (WithJsonSchema,)
_SCALARS: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool"}

Row = tuple[str, str, str, Any, bool, bool, Any]


def _unless_none(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return rest[0], True
    return hint, False


def _bounds(kind: str, metadata: list[Any]) -> tuple[Any, Any] | None:
    """(low, high) of a str's length or a number's value, or None: a constraint not known."""
    low: Any = None
    high: Any = None
    for m in metadata:
        if isinstance(m, _NEUTRAL_METADATA):
            continue
        if kind == "str" and isinstance(m, annotated_types.MinLen):
            low = m.min_length
        elif kind == "str" and isinstance(m, annotated_types.MaxLen):
            high = m.max_length
        elif kind in ("int", "float") and isinstance(m, annotated_types.Ge):
            low = m.ge
        elif kind in ("int", "float") and isinstance(m, annotated_types.Le):
            high = m.le
        else:
            return None
    return (low, high)


def _eligible(model: type[BaseModel]) -> bool:
    config = model.model_config
    decorators = model.__pydantic_decorators__
    return (
        config.get("extra") == "forbid"
        and set(config) - {"extra"} <= _NEUTRAL_CONFIG
        and not any(
            (
                decorators.validators,
                decorators.field_validators,
                decorators.root_validators,
                decorators.model_validators,
            )
        )
    )


def _row(name: str, info: Any, models: dict[str, tuple[Row, ...] | None]) -> Row | None:
    """The field's row, or None when the model cannot be in the table (its default)."""
    alias = info.alias or name
    required = info.is_required()
    default = None if required else info.default
    if info.default_factory is not None or type(default) not in (type(None), str, int, float, bool):
        return None
    hint, nullable = _unless_none(info.annotation)
    kind: str = "opaque"
    arg: Any = None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if info.validation_alias not in (None, alias) or info.discriminator is not None:
        pass
    elif hint in _SCALARS:
        kind = _SCALARS[hint]
        if kind in ("str", "int", "float"):
            bounds = _bounds(kind, info.metadata)
            kind, arg = (kind, bounds) if bounds is not None else ("opaque", None)
        elif _bounds("bool", info.metadata) != (None, None):
            kind = "opaque"
    elif info.metadata and _bounds("", info.metadata) is None:
        pass  # a validator or constraint on a compound value: pydantic's
    elif origin is Literal and all(type(a) is str for a in args):
        kind, arg = "literal", tuple(args)
    elif origin is dict and args == (str, str):
        kind = "dict_str_str"
    elif origin is list and args == (str,):
        kind = "list_str"
    elif isinstance(hint, type) and issubclass(hint, BaseModel):
        if _walk(hint, models) is not None:
            kind, arg = "model", hint.__name__
    return (alias, name, kind, arg, nullable, required, default)


def _walk(model: type[BaseModel], models: dict[str, tuple[Row, ...] | None]) -> Any:
    if model.__name__ in models:
        return models[model.__name__]
    models[model.__name__] = None  # (a model nested in itself stays out)
    rows: list[Row] = []
    if _eligible(model):
        for name, info in model.model_fields.items():
            row = _row(name, info, models)
            if row is None:
                return None
            rows.append(row)
        models[model.__name__] = tuple(rows)
    return models[model.__name__]


def table() -> dict[str, tuple[Row, ...]]:
    """Every params model an op declares by name (``Deferred``) and the models it nests."""
    models: dict[str, tuple[Row, ...] | None] = {}
    for spec in all_ops():
        declared = spec.declared_params
        if isinstance(declared, Deferred) and declared.module == "aimux_ops.ops.models":
            _walk(spec.params, models)
    return {k: v for k, v in sorted(models.items()) if v is not None}


def _lit(value: Any) -> str:
    """A Python literal as ruff formats it (double quotes; the table's strings need no escape)."""
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, tuple):
        inner = ", ".join(_lit(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def _row_lines(row: Row) -> list[str]:
    line = f"        {_lit(row)},"
    if len(line) <= 100:
        return [line]
    return ["        (", *(f"            {_lit(v)}," for v in row), "        ),"]


def render() -> dict[str, str]:
    lines = [
        '"""The params models as ``precheck`` reads them: generated by ``aimux_ops.codegen``',
        "(``make schema``, ``codegen/precheck.py``) from ``aimux_ops/ops/models.py``. Do not edit:",
        '``make check-schema`` fails when this file and the models differ."""',
        "",
        "from typing import Any",
        "",
        "#: model -> per field: (wire name, attribute, kind, bounds / options / model, None",
        "#: allowed, required, default)",
        "MODELS: dict[str, tuple[tuple[str, str, str, Any, bool, bool, Any], ...]] = {",
    ]
    for model, rows in table().items():
        lines.append(f"    {_lit(model)}: (")
        for row in rows:
            lines.extend(_row_lines(row))
        lines.append("    ),")
    lines.append("}")
    return {OUT: "\n".join(lines) + "\n"}
