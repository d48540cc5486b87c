"""What the ``anthropic`` provider needs to know about a model id and an object schema, with the
AI SDK's ``@ai-sdk/anthropic`` as the reference for every rule:

- ``capabilities(model_id)``: the default ``max_tokens`` (the model's output limit), whether it
  has native structured outputs (``output_config.format``), whether it accepts sampling
  parameters (``temperature``, ``top_p``) and a forced tool choice.
- ``native_schema_ok(schema)``: whether native structured outputs can take a schema without
  rejecting it or losing data (no ``$ref`` cycle, no open object, at most 10 optional
  properties); otherwise ``generate_object`` forces the JSON tool.
- ``sanitize_schema(schema)``: the schema sent in ``output_config.format``: keywords the API
  rejects are dropped (constraints are kept as description text), every object closed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

__all__ = ["Capabilities", "capabilities", "native_schema_ok", "sanitize_schema"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    max_tokens: int = 4_096
    native_structured_output: bool = False
    sampling: bool = True
    forced_tool_choice: bool = True


_LEGACY = Capabilities()
_CURRENT = Capabilities(128_000, native_structured_output=True)
_CURRENT_NO_SAMPLING = replace(_CURRENT, sampling=False)
_NO_FORCED = replace(_CURRENT_NO_SAMPLING, forced_tool_choice=False)
_SONNET_4_RE = re.compile(r"claude-sonnet-4(?:-|@)")
_OPUS_4_RE = re.compile(r"claude-opus-4(?:-|@)")
_OLD_RE = re.compile(r"claude-(?:instant(?:-|$)|v?2(?=$|[-.:])|3(?=$|[-.]))")


def _has(*fragments: str) -> Any:
    return lambda m: any(f in m for f in fragments)


#: first match wins (the order matters: "claude-opus-5-5" before "claude-opus-5")
_RULES: tuple[tuple[Any, Capabilities], ...] = (
    (_has("claude-sonnet-5-5"), _NO_FORCED),
    (_has("claude-opus-5-5"), _NO_FORCED),
    (_has("claude-haiku-5-5"), _CURRENT_NO_SAMPLING),
    (_has("claude-opus-5"), _CURRENT_NO_SAMPLING),
    (_has("claude-fable-5-2", "claude-fable-5-1"), _NO_FORCED),
    (_has("claude-fable-5"), _CURRENT_NO_SAMPLING),
    (_has("claude-opus-4-8", "claude-opus-4-7", "claude-sonnet-5"), _CURRENT_NO_SAMPLING),
    (_has("claude-sonnet-4-6", "claude-opus-4-6"), _CURRENT),
    (
        _has("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5"),
        Capabilities(64_000, native_structured_output=True),
    ),
    (_has("claude-opus-4-1"), Capabilities(32_000, native_structured_output=True)),
    (_SONNET_4_RE.search, Capabilities(64_000)),
    (_OPUS_4_RE.search, Capabilities(32_000)),
    (_has("claude-3-haiku"), _LEGACY),
    (_OLD_RE.search, _LEGACY),
)


def capabilities(model_id: str) -> Capabilities:
    """A model's capabilities; an unknown newer ``claude-`` id is taken as a current model, any
    other unknown id (a compatible server's own model) as a legacy one."""
    for matches, caps in _RULES:
        if matches(model_id):
            return caps
    return _CURRENT_NO_SAMPLING if "claude-" in model_id else _LEGACY


# -- schemas ---------------------------------------------------------------------------------------

_MAX_OPTIONAL_PROPERTIES = 10
_SUB = ("additionalProperties", "contains", "else", "if", "items", "not", "then")
_SUB_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUB_MAPS = ("dependentSchemas", "patternProperties", "properties")
_DATA = frozenset(("const", "default", "enum", "examples"))


def _resolve(root: Any, pointer: str) -> Any:
    if pointer == "#":
        return root
    if not pointer.startswith("#/"):
        return None
    current = root
    for raw in unquote(pointer[2:]).split("/"):
        segment = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, list):
            try:
                current = current[int(segment)]
            except (ValueError, IndexError):
                return None
        elif isinstance(current, dict):
            current = current.get(segment)
        else:
            return None
    return current


def _local_refs(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, list):
        for item in node:
            _local_refs(item, out)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                if isinstance(value, str) and value.startswith("#"):
                    out.append(value)
            elif key in _SUB_MAPS and isinstance(value, dict):
                for sub in value.values():
                    _local_refs(sub, out)
            elif key not in ("$defs", "definitions") and key not in _DATA:
                _local_refs(value, out)
    return out


def _has_ref_cycle(schema: Any) -> bool:
    visiting: set[str] = set()
    visited: set[str] = set()

    def visit(pointer: str) -> bool:
        if pointer in visiting:
            return True
        if pointer in visited:
            return False
        target = _resolve(schema, pointer)
        if target is None:
            return False
        visiting.add(pointer)
        cyclic = any(visit(ref) for ref in _local_refs(target, []))
        visiting.discard(pointer)
        visited.add(pointer)
        return cyclic

    return visit("#")


def _is_open_object(node: dict[str, Any]) -> bool:
    extra = node.get("additionalProperties")
    if extra is True or isinstance(extra, dict):
        return True
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict) and patterns:
        return True
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    return is_object and node.get("properties") is None and extra is not False


def _stats(node: Any, root: Any, by_ref: dict[str, tuple[int, bool]]) -> tuple[int, bool]:
    """(optional properties, has an open object) of a schema node, ``$ref``s followed once."""
    if not isinstance(node, dict):
        return 0, False
    optional, open_object = 0, False

    def add(child: Any) -> None:
        nonlocal optional, open_object
        o, op = _stats(child, root, by_ref)
        optional += o
        open_object = open_object or op

    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        if ref not in by_ref:
            by_ref[ref] = (0, False)  # a cycle counts once (cyclic schemas never go native)
            by_ref[ref] = _stats(_resolve(root, ref), root, by_ref)
        o, op = by_ref[ref]
        optional += o
        open_object = open_object or op
    if _is_open_object(node):
        open_object = True
    props = node.get("properties")
    if isinstance(props, dict):
        required = node.get("required")
        needed = set(required) if isinstance(required, list) else set()
        optional += sum(1 for name in props if name not in needed)
    for key in _SUB:
        value = node.get(key)
        for child in value if isinstance(value, list) else [value]:
            add(child)
    for key in _SUB_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            for child in value:
                add(child)
    for key in _SUB_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            for child in value.values():
                add(child)
    return optional, open_object


def native_schema_ok(schema: dict[str, Any]) -> bool:
    if _has_ref_cycle(schema):
        return False
    optional, open_object = _stats(schema, schema, {})
    return not open_object and optional <= _MAX_OPTIONAL_PROPERTIES


_FORMATS = frozenset(
    ("date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid")
)
_CONSTRAINTS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "not",
)
_UPPER_RE = re.compile(r"[A-Z]")


def _constraint_text(schema: dict[str, Any]) -> str | None:
    parts = []
    for key in _CONSTRAINTS:
        value = schema.get(key)
        if value is None or value is False:
            continue
        name = _UPPER_RE.sub(lambda m: " " + m.group(0).lower(), key)
        shown = (
            value
            if isinstance(value, str)
            else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        )
        parts.append(f"{name}: {shown}")
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt not in _FORMATS:
        parts.append(f"format: {fmt}")
    return "; ".join(parts) + "." if parts else None


def _sanitize_any(definition: Any) -> Any:
    return sanitize_schema(definition) if isinstance(definition, dict) else definition


def _definitions(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        value = schema.get(key)
        if isinstance(value, dict):
            out[key] = {name: _sanitize_any(d) for name, d in value.items()}
    return out


def sanitize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as native structured outputs accept it (see the module docstring)."""
    if schema.get("$ref") is not None:
        return {"$ref": schema["$ref"], **_definitions(schema)}
    out: dict[str, Any] = {}
    for key in ("$schema", "$id", "title", "description", "enum", "type"):
        if schema.get(key) is not None:
            out[key] = schema[key]
    for key in ("default", "const"):
        if key in schema:
            out[key] = schema[key]
    if schema.get("anyOf") is not None:
        out["anyOf"] = [_sanitize_any(d) for d in schema["anyOf"]]
    elif schema.get("oneOf") is not None:
        out["anyOf"] = [_sanitize_any(d) for d in schema["oneOf"]]
    if schema.get("allOf") is not None:
        out["allOf"] = [_sanitize_any(d) for d in schema["allOf"]]
    out.update(_definitions(schema))
    if schema.get("type") == "object" or schema.get("properties") is not None:
        props = schema.get("properties")
        if isinstance(props, dict):
            out["properties"] = {name: _sanitize_any(d) for name, d in props.items()}
        out["additionalProperties"] = False
        if schema.get("required") is not None:
            out["required"] = schema["required"]
    items = schema.get("items")
    if items is not None:
        out["items"] = (
            [_sanitize_any(d) for d in items] if isinstance(items, list) else _sanitize_any(items)
        )
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        out["format"] = fmt
    text = _constraint_text(schema)
    if text is not None:
        out["description"] = (
            text if out.get("description") is None else (f"{out['description']}\n{text}")
        )
    return out
