"""Go: ``bindings/go/aimux/zz_types.go`` — the typed params, results, events, content parts and
tool types of the provider ops, from their JSON Schemas in the manifest (``schema/ops``, written
from the pydantic models of ``aimux_ops/ops``), already gofmt-formatted.

The Stainless / openai-go rules (CONTRACT §4.1): an optional field is an ``Opt[T]`` (absent,
null or a value; ``omitzero`` leaves an absent one out), a list or a map is nil when absent;
every object keeps the members this version does not know in ``ExtraFields`` (sent again when
encoding) and the JSON it was decoded from in ``RawJSON()``; an enum is a string type with its
known values as constants (any other value decodes as it is); a union is a struct of ``Of…``
members, chosen by its discriminator (or by the JSON kind), a variant it does not know kept in
``RawJSON()``. A free-form value is ``any`` in params and ``json.RawMessage`` in results and
events. The runtime side (``Opt``, ``marshalObject``, ``unmarshalUnion``) is hand-written, in
``bindings/go/aimux/types.go``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._model import Manifest
from .go import go_name

OUT = "bindings/go/aimux/zz_types.go"
#: Hand-written names of package aimux a generated type must not take.
TAKEN = {
    "Error", "SourceError", "Stream", "EventStream", "Call", "Variant", "Sentinel", "Tool",
    "Tools", "ToolResult", "ToolStream", "Opt", "Option", "TextStream",
}  # fmt: skip
#: Names of inline unions the schema leaves unnamed (owner type, property, "[]" for its items).
UNION_NAMES = {("Message", "content", "[]"): "ContentPart"}
#: Names of enums shorter than their owner's type and property (owner type, property).
ENUM_NAMES = {("ModelSpec", "provider"): "Provider"}
#: Words of enum values spelled as their owners spell them.
VALUE_WORDS = {"Openai": "OpenAI"}
_SCALARS = {"string": "string", "integer": "int", "number": "float64", "boolean": "bool"}
_KINDS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}


def _doc(text: str | None, indent: str = "") -> list[str]:
    if not text:
        return []
    words = " ".join(str(text).replace("``", "`").split()).split(" ")
    lines, line = [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > 96:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return [f"{indent}// {ln}" for ln in lines]


def _align(rows: list[list[str] | str], indent: str = "\t") -> list[str]:
    """gofmt's alignment: consecutive field lines share column widths; a comment line ends a
    section."""
    out: list[str] = []
    section: list[list[str]] = []

    def flush() -> None:
        widths: dict[int, int] = {}
        for row in section:
            for i, cell in enumerate(row[:-1]):
                widths[i] = max(widths.get(i, 0), len(cell))
        for row in section:
            cells = [c.ljust(widths[i]) + " " for i, c in enumerate(row[:-1])] + [row[-1]]
            out.append(indent + "".join(cells).rstrip())
        section.clear()

    for row in rows:
        if isinstance(row, str):
            flush()
            out.append(row)
        else:
            section.append(row)
    flush()
    return out


@dataclass
class _Union:
    name: str
    doc: str
    #: (member name, Go type, discriminator value or JSON kind)
    members: list[tuple[str, str, str]]
    discriminator: str | None


@dataclass
class _Gen:
    side: str = "params"  # "params" or "outputs": how a free-form value is typed
    defs: dict[str, dict[str, Any]] = field(default_factory=dict)
    blocks: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)  # type name -> its schema (dedupe)
    enums: dict[tuple[str, ...], str] = field(default_factory=dict)  # values -> type name
    #: the op-level types (params, results): their members' types are named by the member alone
    tops: set[str] = field(default_factory=set)

    def claim(self, name: str, schema: Any) -> bool:
        """False when ``name`` is already declared from the same schema; raises on a clash."""
        if name in TAKEN:
            raise ValueError(f"generated Go type {name} collides with a hand-written one")
        key = json.dumps([self.side, schema], sort_keys=True)
        held = self.shapes.get(name)
        if held is not None:
            if held != key:
                raise ValueError(f"op schemas define the Go type {name} twice, differently")
            return False
        self.shapes[name] = key
        return True

    def free(self) -> str:
        return "any" if self.side == "params" else "json.RawMessage"

    # -- types -----------------------------------------------------------------------------------
    def type_of(self, s: Any, owner: str, prop: str) -> tuple[str, bool]:
        """(Go type, nullable) of a property's schema."""
        if not isinstance(s, dict) or not s or s is True:
            return self.free(), True
        for key in ("anyOf", "oneOf"):
            if key in s:
                options = [o for o in s[key] if o.get("type") != "null"]
                nullable = len(options) < len(s[key])
                if len(options) == 1 and "discriminator" not in s:
                    return self.type_of(options[0], owner, prop)[0], nullable
                return self.union(s, options, owner, prop), nullable
        if "$ref" in s:
            return self.ref(s["$ref"]), False
        if "enum" in s:
            return self.enum(s, owner, prop), False
        t = s.get("type")
        if t in _SCALARS:
            return _SCALARS[t], False
        if t == "array":
            return "[]" + self.type_of(s.get("items", {}), owner, prop + "[]")[0], False
        if t == "object":
            if s.get("properties"):
                name = owner + go_name(prop)
                self.struct(name, s)
                return name, False
            extra = s.get("additionalProperties", True)
            if extra is True or extra == {}:
                return ("map[string]any", False) if self.side == "params" else (self.free(), False)
            return "map[string]" + self.type_of(extra, owner, prop)[0], False
        return self.free(), True

    def ref(self, ref: str) -> str:
        name = ref.rsplit("/", 1)[-1]
        self.struct(name, self.defs[name])
        return name

    def enum(self, s: dict[str, Any], owner: str, prop: str) -> str:
        values = tuple(str(v) for v in s["enum"])
        held = self.enums.get(values)
        if held is not None:
            return held
        name = ENUM_NAMES.get((owner, prop)) or (
            go_name(prop) if owner in ("", "*") else owner + go_name(prop)
        )
        if not self.claim(name, s):
            return name
        self.enums[values] = name
        desc = s.get("description")
        lines = _doc(f"{name}: {desc}" if desc else None) or [
            f"// {name} is a string; these are the values this version knows (others decode as "
            "they are)."
        ]
        lines.append(f"type {name} string\n")
        lines.append(f"// The {name} values this version knows.")
        lines.append("const (")
        rows: list[list[str] | str] = [
            [f"{name}{VALUE_WORDS.get(go_name(v), go_name(v))}", name, f"= {json.dumps(v)}"]
            for v in values
        ]
        lines += _align(rows)
        lines.append(")")
        self.blocks[name] = "\n".join(lines) + "\n"
        return name

    def union(self, s: dict[str, Any], options: list[Any], owner: str, prop: str) -> str:
        if owner == "*":
            name = prop
        else:
            bare = prop.rstrip("[]")
            named = UNION_NAMES.get((owner, bare, "[]" if prop.endswith("[]") else ""))
            name = named or (go_name(prop) if owner == "" else owner + go_name(bare))
        if not self.claim(name, s):
            return name
        self.blocks[name] = ""  # reserved (recursion)
        disc = s.get("discriminator", {}).get("propertyName")
        members: list[tuple[str, str, str]] = []
        if disc:
            by_ref = {ref: tag for tag, ref in s["discriminator"]["mapping"].items()}
            for o in options:
                t = self.ref(o["$ref"])
                members.append((f"Of{t}", "*" + t, by_ref[o["$ref"]]))
        else:
            for o in options:
                t = "string" if "enum" in o else self.type_of(o, owner, prop)[0]
                if t.startswith("[]"):
                    members.append((f"Of{_label(t[2:])}Array", t, "array"))
                elif "$ref" in o or o.get("type") == "object":
                    members.append((f"Of{t}", "*" + t, "object"))
                else:
                    kind = _KINDS.get(str(o.get("type")), "string")
                    members.append((f"Of{_label(t)}", "*" + t, kind))
            kinds = [k for _, _, k in members]
            if len(set(kinds)) != len(kinds):
                raise ValueError(f"union {name}: two members of one JSON kind need a discriminator")
        u = _Union(name, s.get("description", ""), members, disc)
        self.blocks[name] = self.render_union(u)
        return name

    def struct(self, name: str, s: dict[str, Any]) -> None:
        if not self.claim(name, s):
            return
        self.blocks[name] = ""  # reserved (recursion)
        owner = "" if name in self.tops else name
        required = set(s.get("required", []))
        rows: list[list[str] | str] = []
        consts: list[tuple[str, str]] = []
        for prop, ps in s.get("properties", {}).items():
            gn = go_name(prop)
            if gn in ("ExtraFields", "RawJSON"):
                gn += "Field"
            gt, nullable = self.type_of(ps, owner, prop)
            if isinstance(ps, dict) and "const" in ps:
                consts.append((gn, str(ps["const"])))
            for line in _doc(ps.get("description") if isinstance(ps, dict) else None, "\t"):
                rows.append(line)
            if prop in required and not nullable:
                # a required object left zero is left out: the core names what is missing
                zero = ",omitzero" if gt in self.shapes and gt not in self.enums.values() else ""
                tag = f'`json:"{prop}{zero}"`'
            elif gt.startswith(("[]", "map[")) or gt in ("any", "json.RawMessage"):
                tag = f'`json:"{prop},omitempty"`'
            else:
                gt = f"Opt[{gt}]"
                tag = f'`json:"{prop},omitzero"`'
            rows.append([gn, gt, tag])
        rows.append(
            "\t// ExtraFields are the members this version does not know: kept when decoding,"
        )
        rows.append("\t// sent when encoding.")
        rows.append(["ExtraFields", "map[string]json.RawMessage", '`json:"-"`'])
        rows.append(["raw", "json.RawMessage"])
        desc = s.get("description")
        if not desc:
            desc = f"{name} is a generated type (schema/ops)."
        lines = _doc(desc if desc.startswith(name + " ") else f"{name}: {desc}")
        lines.append(f"type {name} struct {{")
        lines += _align(rows)
        lines.append("}\n")
        lines.append("// MarshalJSON sends the fields that are set, then ExtraFields.")
        lines.append(f"func (v {name}) MarshalJSON() ([]byte, error) {{")
        lines.append(f"\ttype plain {name}")
        for gn, value in consts:
            lines.append(f'\tif v.{gn} == "" {{\n\t\tv.{gn} = {json.dumps(value)}\n\t}}')
        lines.append("\treturn marshalObject(plain(v), v.ExtraFields)\n}\n")
        lines.append(
            "// UnmarshalJSON keeps unknown members in ExtraFields and the text in RawJSON."
        )
        lines.append(f"func (v *{name}) UnmarshalJSON(b []byte) error {{")
        lines.append(f"\ttype plain {name}")
        lines.append(f"\t*v = {name}{{}}")
        lines.append("\treturn unmarshalObject(b, (*plain)(v), &v.ExtraFields, &v.raw)\n}\n")
        lines.append(
            "// RawJSON returns the JSON this value was decoded from (nil when built in Go)."
        )
        lines.append(f"func (v {name}) RawJSON() json.RawMessage {{ return v.raw }}")
        self.blocks[name] = "\n".join(lines) + "\n"

    def render_union(self, u: _Union) -> str:
        lines = _doc(f"{u.name}: {u.doc}" if u.doc else None) or [
            f"// {u.name} is one of its Of… members: the one set is sent; one this version does not"
        ]
        if not u.doc:
            lines.append("// know decodes into none of them, kept in RawJSON.")
        lines.append(f"type {u.name} struct {{")
        rows: list[list[str] | str] = [[m, t] for m, t, _ in u.members]
        rows.append(["raw", "json.RawMessage"])
        lines += _align(rows)
        lines.append("}\n")
        names = ", ".join(f"u.{m}" for m, _, _ in u.members)
        lines.append(
            "// MarshalJSON sends the member that is set (else the JSON it was decoded from)."
        )
        lines.append(f"func (u {u.name}) MarshalJSON() ([]byte, error) {{")
        lines.append(f"\treturn marshalUnion(u.raw, {names})\n}}\n")
        how = f"its {json.dumps(u.discriminator)}" if u.discriminator else "the JSON kind"
        lines.append(f"// UnmarshalJSON sets the member {how} names.")
        lines.append(f"func (u *{u.name}) UnmarshalJSON(b []byte) error {{")
        lines.append(f"\t*u = {u.name}{{}}")
        lines.append(f"\treturn unmarshalUnion(b, &u.raw, {json.dumps(u.discriminator or '')},")
        for i, (m, _, tag) in enumerate(u.members):
            end = ")" if i == len(u.members) - 1 else ""
            lines.append(f"\t\t{json.dumps(tag)}, &u.{m}{',' if not end else ''}{end}")
        lines.append("}\n")
        lines.append(
            "// RawJSON returns the JSON this value was decoded from (nil when built in Go)."
        )
        lines.append(f"func (u {u.name}) RawJSON() json.RawMessage {{ return u.raw }}\n")
        lines.append("// AsAny returns the member that is set, or nil (see RawJSON).")
        lines.append(f"func (u {u.name}) AsAny() any {{\n\tswitch {{")
        for m, _, _ in u.members:
            lines.append(f"\tcase u.{m} != nil:\n\t\treturn u.{m}")
        lines.append("\t}\n\treturn nil\n}")
        return "\n".join(lines) + "\n"


def _label(go_type: str) -> str:
    """A Go type as part of a member name: ``string`` → ``String``, ``float64`` → ``Float``."""
    return {"string": "String", "int": "Int", "float64": "Float", "bool": "Bool"}.get(
        go_type, go_type
    )


def _pascal(op: str) -> str:
    """An op's name in its types' names: ``generate_text`` → ``GenerateText``, ``aimux.version``
    → ``Version`` (the package's name is not said again)."""
    op = op.removeprefix("aimux.")
    return "".join(go_name(p) for p in op.replace(".", "_").split("_") if p)


#: the meta ops with a typed Go function (Version, Manifest in typed.go)
META_OPS = ("aimux.version", "aimux.manifest")


def typed_ops(m: Manifest) -> list[dict[str, Any]]:
    """The ops with a typed Go function: the provider ops and the meta ops (not an op a test
    registers)."""
    return [op for op in m.ops if op["name"] in META_OPS or "." not in str(op["name"])]


def render(m: Manifest) -> dict[str, str]:
    gen = _Gen()
    for op in typed_ops(m):
        for part in ("params", "result", "event"):
            s = op.get(part)
            if s is None:
                continue
            gen.side = "params" if part == "params" else "outputs"
            gen.defs = dict(s.get("$defs", {}))
            body = {k: v for k, v in s.items() if k != "$defs"}
            name = f"{_pascal(op['name'])}{part.capitalize()}"
            if "oneOf" in body:
                gen.union(body, body["oneOf"], "*", name)
                continue
            doc = f"{name} is the {part} of {op['name']} (schema/ops/{op['name']}.{part}.schema.json)."
            gen.tops.add(name)
            gen.struct(name, {**body, "description": body.get("description") or doc})
    head = (
        "// Code generated by `python -m aimux_ops.codegen` from the op models; DO NOT EDIT.\n\n"
        'package aimux\n\nimport "encoding/json"\n\n'
    )
    return {OUT: head + "\n".join(gen.blocks[k] for k in sorted(gen.blocks))}
