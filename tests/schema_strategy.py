"""Hypothesis strategies of the values a JSON Schema accepts: the small walker the params fuzz
uses over ``schema/ops/*.params.schema.json`` (the keywords pydantic writes there: ``$ref`` to
``#/$defs``, ``anyOf``, ``enum``, ``const``, ``type``, ``properties`` / ``required`` /
``additionalProperties``, ``items``, ``minimum`` / ``maximum``, ``minLength``).

A keyword it does not know fails at once (the walker would otherwise draw values the schema
refuses). Beside plain draws it mixes in the odd values a hostile caller sends: control
characters, very long strings, deep nesting, integers past 64 bits, framing header names.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["from_schema"]

_KNOWN = {
    "$defs",
    "$id",
    "$ref",
    "$schema",
    "additionalProperties",
    "anyOf",
    "const",
    "default",
    "description",
    "enum",
    "items",
    "maximum",
    "minLength",
    "minimum",
    "properties",
    "required",
    "title",
    "type",
}

ODD_TEXT = ["", " ", "\r\nX-Injected: 1", "\x00", "é", "\u2028", "\t", "a" * 70_000, "{}", "null"]
HEADER_NAMES = [
    "X-Test",
    "authorization",
    "x-api-key",
    "Content-Length",
    "Transfer-Encoding",
    "Host",
    "Connection",
    "te",
    "X A",
    "X:A",
]
ODD_SCHEMAS: list[Any] = [
    {"type": "object", "properties": {}},
    {"$schema": [1]},
    {"$schema": "http://127.0.0.1:1/nothing"},
    {"type": "nonsense"},
    {"$ref": "http://127.0.0.1:1/remote.json"},
    {"pattern": "["},
    {"type": "string", "format": "email"},
    {"properties": {"a": {"$ref": "#/nothing"}}},
]


def _nested(depth: int) -> Any:
    value: Any = {}
    for i in range(depth):
        value = {"type": "object", "properties": {"a": value}} if i % 2 else [value]
    return value


def _text(min_size: int = 0) -> st.SearchStrategy[str]:
    odd = [t for t in ODD_TEXT if len(t) >= min_size]
    return st.one_of(st.text(min_size=min_size, max_size=24), st.sampled_from(odd))


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _text(),
)

#: any JSON value, now and then nested past every cap
ANY_JSON: st.SearchStrategy[Any] = st.one_of(
    st.recursive(
        _SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(_text(), inner, max_size=3)
        ),
        max_leaves=12,
    ),
    st.integers(min_value=1, max_value=300).map(_nested),
    st.sampled_from(ODD_SCHEMAS),
)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """The values ``schema`` (a document with ``$defs``) accepts."""
    return _walk(schema, schema)


def _walk(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    unknown = set(node) - _KNOWN
    if unknown:
        raise ValueError(f"schema keywords the walker does not know: {sorted(unknown)}")
    if "$ref" in node:
        ref = node["$ref"]
        prefix = "#/$defs/"
        if not ref.startswith(prefix):
            raise ValueError(f"only local $defs refs: {ref}")
        return _walk(root["$defs"][ref[len(prefix) :]], root)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node:
        return st.one_of([_walk(sub, root) for sub in node["anyOf"]])
    kind = node.get("type")
    if kind is None:
        return ANY_JSON
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return _text(node.get("minLength", 0))
    if kind in ("integer", "number"):
        low, high = node.get("minimum"), node.get("maximum")
        ints = st.integers(
            min_value=int(low) if low is not None else -(2**70),
            max_value=int(high) if high is not None else 2**70,
        )
        if kind == "integer":
            return ints
        floats = st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
        return st.one_of(ints, floats)
    if kind == "array":
        items = node.get("items")
        return st.lists(_walk(items, root) if items is not None else ANY_JSON, max_size=3)
    if kind == "object":
        return _object(node, root)
    raise ValueError(f"unknown type {kind!r}")


def _object(node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    props = node.get("properties", {})
    required = set(node.get("required", ()))
    extra = node.get("additionalProperties", not props)
    if props:
        fixed = st.fixed_dictionaries(
            {k: _walk(v, root) for k, v in props.items() if k in required},
            optional={k: _walk(v, root) for k, v in props.items() if k not in required},
        )
        if extra is False:
            return fixed
    if extra is True:
        return st.one_of(
            st.dictionaries(_text(), ANY_JSON, max_size=3), st.sampled_from(ODD_SCHEMAS)
        )
    if isinstance(extra, dict):
        keys = st.one_of(_text(), st.sampled_from(HEADER_NAMES))
        return st.dictionaries(keys, _walk(extra, root), max_size=3)
    return st.just({})
