"""Generates ``schema/`` (JSON Schema 2020-12) from the pydantic models: the envelope, every error
payload, every op's params / result / event, and the manifest. ``--check`` fails on drift.

    python -m aimux_ops.codegen.schemas --write schema
    python -m aimux_ops.codegen.schemas --check schema
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from ..errors import catalogue
from ..ops import all_ops
from ..ops.meta import ManifestResult, build_manifest
from ..wire.models import Envelope

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def _doc(schema: dict[str, Any], schema_id: str) -> dict[str, Any]:
    return {"$schema": DIALECT, "$id": schema_id, **schema}


def _nullable_to_optional(schema: Any) -> Any:
    """pydantic renders ``X | None = None`` as ``anyOf [X, null]``; on the wire such members are
    absent, never null, so drop the null branch (the schema then says what we emit)."""
    if isinstance(schema, dict):
        any_of = schema.get("anyOf")
        if isinstance(any_of, list) and {"type": "null"} in any_of:
            rest = [s for s in any_of if s != {"type": "null"}]
            schema = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
            if len(rest) == 1:
                schema.update(rest[0] if isinstance(rest[0], dict) else {})
            else:
                schema["anyOf"] = rest
        return {k: _nullable_to_optional(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_nullable_to_optional(s) for s in schema]
    return schema


_CAUSE_BRANCHES = [{"$ref": "#/$defs/AimuxNode"}, {"$ref": "#/$defs/SourceNode"}]


def _discriminate_causes(schema: Any) -> Any:
    """A cause node is an aimux node when it has ``kind``, else a source node (CONTRACT §1).
    Said with if/then/else rather than anyOf, so validation stays linear in the chain depth."""
    if isinstance(schema, dict):
        if schema.get("anyOf") == _CAUSE_BRANCHES:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {
                **rest,
                "type": "object",
                "if": {"required": ["kind"]},
                "then": _CAUSE_BRANCHES[0],
                "else": _CAUSE_BRANCHES[1],
            }
        return {k: _discriminate_causes(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_discriminate_causes(s) for s in schema]
    return schema


def generate() -> dict[str, bytes]:
    """Every file of ``schema/``: relative path → bytes."""
    files: dict[str, Any] = {}
    env = Envelope.model_json_schema(by_alias=True)
    files["envelope.schema.json"] = _doc(
        _discriminate_causes(_nullable_to_optional(env)), "envelope.schema.json"
    )
    for cls in catalogue():
        payload = cls.Payload.model_json_schema(by_alias=True)
        props = {"name": {"const": cls.error_name}, **payload.get("properties", {})}
        if cls.error_name in ("AI_RetryError", "AI_TimeoutError"):
            props["errors"] = {
                "type": "array",
                "items": {"$ref": "../../envelope.schema.json#/$defs/AimuxNode"},
            }
        body = {
            "title": cls.__name__,
            "description": cls.description,
            "type": "object",
            "properties": props,
            "required": ["name"],
            "x-aimux": {"kind": cls.kind, "code": cls.code, "constant": cls.constant},
        }
        if "$defs" in payload:
            body["$defs"] = payload["$defs"]
        path = f"errors/{cls.kind}/{cls.__name__}.schema.json"
        files[path] = _doc(_nullable_to_optional(body), path)
    manifest = build_manifest()
    for op in manifest["ops"]:
        for part in ("params", "result", "event"):
            if op[part] is not None:
                path = f"ops/{op['name']}.{part}.schema.json"
                files[path] = _doc(op[part], path)
    files["manifest.schema.json"] = _doc(
        ManifestResult.model_json_schema(by_alias=True), "manifest.schema.json"
    )
    files["manifest.json"] = manifest
    return {path: orjson.dumps(doc, option=_OPTS) for path, doc in files.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="DIR")
    group.add_argument("--check", metavar="DIR")
    args = parser.parse_args(argv)
    files = generate()
    if args.write:
        root = Path(args.write)
        for old in root.rglob("*.json") if root.exists() else []:
            if str(old.relative_to(root)) not in files:
                old.unlink()
        for rel, data in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        print(f"schema: wrote {len(files)} files to {root}")
        return 0
    root = Path(args.check)
    drift = [
        rel
        for rel, data in files.items()
        if not (root / rel).is_file() or (root / rel).read_bytes() != data
    ]
    stale = (
        [
            str(p.relative_to(root))
            for p in root.rglob("*.json")
            if str(p.relative_to(root)) not in files
        ]
        if root.exists()
        else []
    )
    for rel in drift:
        print(f"schema drift: {rel} differs from the models", file=sys.stderr)
    for rel in stale:
        print(f"schema drift: {rel} is not generated by the models", file=sys.stderr)
    if drift or stale:
        print("run `make schema` and commit schema/", file=sys.stderr)
        return 1
    print(f"schema: {len(files)} files match the models (ops: {len(all_ops())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
