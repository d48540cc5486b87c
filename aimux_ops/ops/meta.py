"""The meta ops: ``aimux.version`` and ``aimux.manifest`` (every op, every error code)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from .._version import ABI_VERSION, __version__
from ..errors import KINDS, RETIRED_CODES, catalogue
from .registry import all_ops, register_op

__all__ = ["ABI_VERSION", "ManifestResult", "VersionResult", "build_manifest"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class NoParams(_Model):
    """The meta ops take an empty object."""


class VersionResult(_Model):
    name: str = "aimux-ops"
    version: str
    abi_version: int


class ManifestOp(_Model):
    name: str
    mode: str
    description: str = ""
    params: dict[str, Any]
    result: dict[str, Any] | None = None
    event: dict[str, Any] | None = None


class ManifestField(_Model):
    name: str
    type: str


class ManifestError(_Model):
    kind: str
    code: int
    constant: str
    name: str
    class_name: str
    description: str
    fields: list[ManifestField]


class ManifestResult(_Model):
    name: str = "aimux-ops"
    version: str
    abi_version: int
    kinds: list[str]
    ops: list[ManifestOp]
    errors: list[ManifestError]
    retired_codes: list[int] = Field(default_factory=list)


def _schema_of(model: Any) -> dict[str, Any] | None:
    if model is None:
        return None
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema(by_alias=True, mode="serialization")
    return TypeAdapter(model).json_schema(by_alias=True, mode="serialization")


def _field_type(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    types = [s.get("type") for s in schema.get("anyOf", []) if s.get("type") not in (None, "null")]
    return str(types[0]) if len(types) == 1 else "any"


def _error_fields(cls: Any) -> list[ManifestField]:
    props = cls.Payload.model_json_schema(by_alias=True).get("properties", {})
    return [ManifestField(name=k, type=_field_type(v)) for k, v in props.items()]


@lru_cache(maxsize=1)
def build_manifest() -> dict[str, Any]:
    """The manifest as a JSON-ready dict (cached: the registry is fixed after import)."""
    manifest = ManifestResult(
        version=__version__,
        abi_version=ABI_VERSION,
        kinds=list(KINDS),
        ops=[
            ManifestOp(
                name=spec.name,
                mode=spec.mode,
                description=spec.description,
                params=_schema_of(spec.params) or {},
                result=_schema_of(spec.result),
                event=_schema_of(spec.event),
            )
            for spec in sorted(all_ops(), key=lambda s: s.name)
        ],
        errors=[
            ManifestError(
                kind=cls.kind,
                code=cls.code,
                constant=cls.constant,
                name=cls.error_name,
                class_name=cls.__name__,
                description=cls.description,
                fields=_error_fields(cls),
            )
            for cls in sorted(catalogue(), key=lambda c: (c.code, c.error_name))
        ],
        retired_codes=list(RETIRED_CODES),
    )
    dumped: dict[str, Any] = manifest.model_dump(mode="json", by_alias=True, exclude_none=False)
    return dumped


@register_op(
    "aimux.version",
    mode="call",
    params=NoParams,
    result=VersionResult,
    description="The core's name, version and C ABI version.",
    pure=True,
)
def version(params: NoParams) -> dict[str, Any]:
    return {"name": "aimux-ops", "version": __version__, "abiVersion": ABI_VERSION}


@register_op(
    "aimux.manifest",
    mode="call",
    params=NoParams,
    result=ManifestResult,
    description="Every op with its params / result / event schemas and every error code.",
    pure=True,
)
def manifest(params: NoParams) -> dict[str, Any]:
    return build_manifest()
