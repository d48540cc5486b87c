"""Java: the typed op surface, ``bindings/java/src/generated/java/dev/aimux/types/`` (committed):
params, results, events, content parts and tool types of the provider ops, from their JSON
Schemas (``schema/ops``, written from the pydantic models in ``aimux_ops/ops/models.py``).

Each object schema becomes an immutable class over its JSON (``dev.aimux.types.JsonObject``, hand
written beside it): accessors (``T x()`` for a required field, ``Optional<T> x()`` otherwise, and
``JsonField<T> _x()`` telling absent from null), a builder, ``toBuilder()``, and the fields this
build does not know kept (``_additionalProperties()``). An enum becomes an open value class
(``StringValue``: constants plus ``of(String)``), a discriminated union a sealed interface with an
``Unknown`` member, an ``anyOf`` of several shapes a ``JsonUnion``.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ._model import Manifest
from .java import HEADER as _ERRORS_HEADER
from .java import JAVA_KEYWORDS, esc, java_string
from .java import javadoc as _javadoc

OUT = "bindings/java/src/generated/java/dev/aimux/types"
PACKAGE = "dev.aimux.types"
#: the ops with a typed surface (the others stay on ``Aimux.call(op, params)``)
OPS = ("generate_text", "stream_text", "generate_object")
HEADER = _ERRORS_HEADER.replace("the error catalogue", "the op models")

#: names the schemas do not give: an inline discriminated union, an enum named better than by
#: its owner (a new unnamed one fails the generator, so that it is named here)
UNION_NAMES = {
    ("Message", "content"): "ContentPart",
    ("GenerateTextResult", "content"): "ContentOutput",
}
VALUE_NAMES = {
    ("ModelSpec", "provider"): "Provider",
    ("Message", "role"): "Role",
    ("RecordingSpec", "mode"): "RecordingMode",
}
#: fields that hold an error envelope: read as the decoded ``dev.aimux.AimuxException``
ENVELOPES = {("ErrorEvent", "error"), ("ToolCall", "error"), ("ToolCallEvent", "error")}
#: methods of JsonObject / its Builder / Object a field accessor must not take
RESERVED = {
    "toJson", "equals", "hashCode", "toString", "getClass", "node", "field", "required",
    "optional", "builder", "toBuilder", "fromJson", "put", "remove", "self", "built", "build",
    "putAdditionalProperty", "wait", "notify", "notifyAll", "clone", "finalize",
}  # fmt: skip
PRIMITIVE = {"Long": "long", "Double": "double", "Boolean": "boolean"}


def javadoc(text: str, indent: str = "") -> str:
    """A Javadoc comment, each paragraph wrapped to fit the 150-column lines."""
    paras = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    width = 110 - len(indent)
    return _javadoc(
        "\n\n".join(textwrap.fill(p, width, break_on_hyphens=False) for p in paras), indent
    )


def _wrap(items: list[str], indent: str) -> str:
    """``a, b, c`` broken into lines of at most 110 columns, continued at ``indent``."""
    lines = textwrap.wrap(
        ", ".join(items), 110 - len(indent), break_on_hyphens=False, break_long_words=False
    )
    return f"\n{indent}".join(lines)


def _pascal(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._\-]", s) if p)


def _method(prop: str) -> str:
    """``baseURL`` → ``baseUrl``; a keyword or a base-class method gets ``Value`` appended."""
    name = re.sub(r"([A-Z])([A-Z]+)$", lambda m: m[1] + m[2].lower(), prop)
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if name in JAVA_KEYWORDS or name in RESERVED:
        name += "Value"
    return name


def _constant(value: str) -> str:
    c = re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_").upper()
    return c if c and not c[0].isdigit() else f"V_{c}"


@dataclass
class JType:
    """A Java type of a schema: its source text and the codec expression that reads it."""

    java: str
    codec: str
    #: union alternatives (name, JType); value classes take strings too
    alts: list[tuple[str, JType]] = field(default_factory=list)
    value_class: bool = False
    envelope: bool = False


def _non_null(s: dict[str, Any]) -> tuple[list[Any], bool]:
    alts = s.get("anyOf")
    if alts is None:
        return [s], False
    rest = [a for a in alts if not (isinstance(a, dict) and a.get("type") == "null")]
    return rest, len(rest) != len(alts)


class Gen:
    def __init__(self, roots: dict[str, str] | None = None) -> None:
        #: model class → the model its family descends from (``model_roots``)
        self.roots = roots or {}
        self.pending_jobs: dict[str, tuple[str, dict[str, Any], dict[str, Any], bool]] = {}
        self.files: dict[str, str] = {}
        self.schemas: dict[str, Any] = {}
        self.enum_names: dict[tuple[str, ...], str] = {}
        self.members: dict[str, list[str]] = {}  # class → the sealed interfaces it implements
        self.pending: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = []

    # -- types ----------------------------------------------------------------------------------

    def type_of(
        self, s: Any, defs: dict[str, Any], owner: str, prop: str, top: bool, in_union: str = ""
    ) -> JType:
        if s is True or not isinstance(s, dict) or not s or set(s) <= {"title", "default"}:
            return JType("JsonNode", "Codec.JSON")
        if "$ref" in s:
            name = str(s["$ref"]).rsplit("/", 1)[-1]
            self.object_class(name, defs[name], defs, top=False)
            return JType(name, f"{name}.CODEC")
        if "enum" in s:
            return self.value_class(s, owner, prop, top, in_union)
        if "oneOf" in s and "discriminator" in s:
            union = UNION_NAMES.get((owner, prop))
            if union is None:
                raise ValueError(f"name the union of {owner}.{prop} in java_types.UNION_NAMES")
            self.sealed(union, s, defs)
            return JType(union, f"{union}.CODEC")
        if "anyOf" in s:
            alts, _ = _non_null(s)
            if len(alts) == 1:
                return self.type_of(alts[0], defs, owner, prop, top)
            return self.union(alts, defs, owner, prop, top)
        t = s.get("type")
        if t == "string":
            return JType("String", "Codec.STRING")
        if t == "integer":
            return JType("Long", "Codec.LONG")
        if t == "number":
            return JType("Double", "Codec.DOUBLE")
        if t == "boolean":
            return JType("Boolean", "Codec.BOOLEAN")
        if t == "array":
            item = self.type_of(s.get("items", {}), defs, owner, prop, top)
            return JType(f"List<{item.java}>", f"Codec.list({item.codec})")
        if t == "object" and not s.get("properties"):
            extra = s.get("additionalProperties", True)
            value = (
                JType("JsonNode", "Codec.JSON")
                if extra is True
                else self.type_of(extra, defs, owner, prop, top)
            )
            return JType(f"Map<String, {value.java}>", f"Codec.map({value.codec})")
        raise ValueError(f"{owner}.{prop}: no Java type for schema {s}")

    def value_class(
        self, s: dict[str, Any], owner: str, prop: str, top: bool, in_union: str
    ) -> JType:
        values = tuple(str(v) for v in s["enum"])
        name = self.enum_names.get(values)
        if name is None:
            name = VALUE_NAMES.get((owner, prop)) or (
                f"{in_union}Mode"
                if in_union
                else _pascal(prop)
                if top
                else f"{owner}{_pascal(prop)}"
            )
            if name in self.files_by_name():
                raise ValueError(f"value class {name} named twice (VALUE_NAMES)")
            self.enum_names[values] = name
            self.emit(name, self.render_value_class(name, values, s.get("description")))
        return JType(name, f"{name}.CODEC", value_class=True)

    def union(
        self, alts: list[Any], defs: dict[str, Any], owner: str, prop: str, top: bool
    ) -> JType:
        name = _pascal(prop) if top else f"{owner}{_pascal(prop)}"
        typed: list[tuple[str, JType]] = []
        for a in alts:
            jt = self.type_of(a, defs, owner, prop, top, in_union=name)
            alt = jt.java.split("<", 1)[0]
            typed.append((alt, jt))
        if len({a for a, _ in typed}) != len(typed):
            raise ValueError(f"{owner}.{prop}: two alternatives of one Java shape")
        text = self.render_union(name, typed)
        old = self.files.get(name)
        if old is not None and old != text:
            raise ValueError(f"union {name} defined twice, differently")
        self.emit(name, text)
        return JType(name, f"{name}.CODEC", alts=typed)

    def files_by_name(self) -> set[str]:
        return set(self.files)

    def emit(self, name: str, text: str) -> None:
        self.files[name] = text

    # -- classes --------------------------------------------------------------------------------

    def object_class(self, name: str, s: dict[str, Any], defs: dict[str, Any], top: bool) -> None:
        old = self.schemas.get(name)
        if old is not None:
            if old != s:
                raise ValueError(f"op schemas define {name} twice, differently")
            return
        self.schemas[name] = s
        self.files[name] = ""  # reserved: a cycle reaches it as done
        self.pending.append((name, s, defs, top))

    def sealed(self, name: str, s: dict[str, Any], defs: dict[str, Any]) -> None:
        if name in self.files:
            return
        mapping = s["discriminator"]["mapping"]
        prop = s["discriminator"]["propertyName"]
        cases = []
        for value, ref in mapping.items():
            member = str(ref).rsplit("/", 1)[-1]
            self.object_class(member, defs[member], defs, top=False)
            self.members.setdefault(member, []).append(name)
            cases.append((str(value), member))
        self.files[name] = self.render_sealed(name, prop, cases, s.get("description"))

    def finish(self) -> dict[str, str]:
        done = []
        while self.pending:
            job = self.pending.pop(0)
            self.files[job[0]] = self.render_object(*job)
            done.append(job)
        self.pending_jobs = {job[0]: job for job in done}
        # again, now that every union knows its members (a class rendered before the union that
        # names it implements it too) and every family its shared fields; every type is named
        # by now, so this adds nothing new
        bases: dict[str, tuple[str, frozenset[str]]] = {}
        for base, members in self.families().items():
            shared = self.shared(members)
            if shared:
                self.files[base] = self.render_base(base, members, shared)
                bases.update((m, (base, frozenset(shared))) for m in members)
        for job in done:
            self.files[job[0]] = self.render_object(*job, *bases.get(job[0], ()))
        return self.files

    def families(self) -> dict[str, list[str]]:
        """The classes made of one model by inheritance (``roots``), by their shared abstract
        class: named after the family's root model, ``Abstract`` before it when the root is a
        class of its own (``AbstractToolCall``; the params' ``CallParams`` is none)."""
        by_root: dict[str, list[str]] = {}
        for name in self.pending_jobs:
            by_root.setdefault(self.roots.get(name, name), []).append(name)
        out: dict[str, list[str]] = {}
        for root, members in sorted(by_root.items()):
            if len(members) < 2:
                continue
            base = f"Abstract{root}" if root in self.pending_jobs else root
            if base in self.files:
                raise ValueError(f"the shared class {base} of {members} names a class already")
            out[base] = sorted(members)
        return out

    def shared(self, members: list[str]) -> list[str]:
        """The fields every member reads and sets alike (the same type and doc), in order."""
        pieces = [self.fields(*self.pending_jobs[m]) for m in members]
        first, _ = pieces[0]
        return [
            prop
            for prop, text in first.items()
            if all(fields.get(prop) == text and prop not in consts for fields, consts in pieces)
        ]

    # -- rendering ------------------------------------------------------------------------------

    @staticmethod
    def file(body: str) -> str:
        imports = []
        for simple, full in (
            ("JsonNode", "com.fasterxml.jackson.databind.JsonNode"),
            ("List", "java.util.List"),
            ("Map", "java.util.Map"),
            ("Optional", "java.util.Optional"),
            ("Set", "java.util.Set"),
        ):
            if re.search(rf"\b{simple}\b[<.(]|\b{simple} ", body):
                imports.append(f"import {full};")
        jackson = [i for i in imports if "jackson" in i]
        java = [i for i in imports if "jackson" not in i]
        head = f"{HEADER}package {PACKAGE};\n\n"
        if jackson:
            head += "\n".join(jackson) + "\n\n"
        if java:
            head += "\n".join(java) + "\n\n"
        return head + body

    def render_value_class(self, name: str, values: tuple[str, ...], desc: Any) -> str:
        consts = "".join(
            f"    /** {{@code {esc(v)}}}. */\n"
            f"    public static final {name} {_constant(v)} = new {name}({java_string(v)});\n"
            for v in values
        )
        cases = ", ".join(java_string(v) for v in values)
        arms = "".join(f"            case {java_string(v)} -> {_constant(v)};\n" for v in values)
        doc = javadoc(
            (esc(desc) + "\n\n" if desc else "")
            + "An open set: the known values are constants, {@link #of(String)} takes any other."
        )
        return self.file(
            f"{doc}public final class {name} extends StringValue {{\n{consts}\n"
            f"    /** Reads the wire value (a string). */\n"
            f"    public static final Codec<{name}> CODEC = Codec.STRING.map({name}::of);\n\n"
            f"    private {name}(String value) {{\n        super(value);\n    }}\n\n"
            f"    /** The constant of a known value, else a new value as given. */\n"
            f"    public static {name} of(String value) {{\n"
            f'        return switch (java.util.Objects.requireNonNull(value, "value")) {{\n{arms}'
            f"            default -> new {name}(value);\n        }};\n    }}\n\n"
            f"    @Override\n    public boolean isKnown() {{\n"
            f"        return switch (value()) {{\n            case {cases} -> true;\n"
            f"            default -> false;\n        }};\n    }}\n}}\n"
        )

    def render_union(self, name: str, alts: list[tuple[str, JType]]) -> str:
        methods = ""
        for alt, jt in alts:
            methods += (
                f"\n    /** A value of shape {esc(alt)}. */\n"
                f"    public static {name} of{alt}({jt.java} value) {{\n"
                f"        return new {name}(Json.encode(value));\n    }}\n"
                f"\n    /** The value as {esc(alt)}, when it has that shape. */\n"
                f"    public Optional<{jt.java}> as{alt}() {{\n"
                f"        return as({jt.codec}, {java_string(name)});\n    }}\n"
                f"\n    /** True when the value has shape {esc(alt)}. */\n"
                f"    public boolean is{alt}() {{\n        return as{alt}().isPresent();\n    }}\n"
            )
        shapes = ", ".join(a for a, _ in alts)
        return self.file(
            javadoc(f"One of: {esc(shapes)} (a value of another shape is kept as its JSON).")
            + f"public final class {name} extends JsonUnion {{\n"
            f"    /** Reads any JSON value. */\n"
            f"    public static final Codec<{name}> CODEC = (node, what) -> new {name}(node);\n\n"
            f"    private {name}(JsonNode node) {{\n        super(node);\n    }}\n\n"
            f"    /** The value of any JSON. */\n"
            f"    public static {name} fromJson(JsonNode node) {{\n        return new {name}(node);\n    }}\n"
            f"{methods}}}\n"
        )

    def render_sealed(self, name: str, prop: str, cases: list[tuple[str, str]], desc: Any) -> str:
        permits = _wrap([m for _, m in cases] + [f"{name}.Unknown"], "        ")
        arms = "".join(
            f"            case {java_string(v)} -> {m}.fromJson(node);\n" for v, m in cases
        )
        kinds = ", ".join(f"{{@link {m}}}" for _, m in cases)
        doc = javadoc(
            (esc(desc) + "\n\n" if desc else "")
            + f"One of {kinds}, by {{@code {esc(prop)}}}; a {{@code {esc(prop)}}} this build does\n"
            "not know is an {@link Unknown}, kept whole. A {@code switch} over the members needs a\n"
            "{@code default} (or an {@code Unknown} case): a newer core may add one."
        )
        pm = _method(prop)
        return self.file(
            f"{doc}public sealed interface {name}\n        permits {permits} {{\n"
            f"    /** Reads the JSON object by its {{@code {esc(prop)}}}. */\n"
            f"    Codec<{name}> CODEC = (node, what) -> fromJson(node);\n\n"
            f"    /** The {{@code {esc(prop)}}} that tells the members apart. */\n"
            f"    String {pm}();\n\n"
            f"    /** The whole object as JSON (a copy). */\n    JsonNode _json();\n\n"
            f"    /** The object's JSON text. */\n    String toJson();\n\n"
            f"    /** The member its {{@code {esc(prop)}}} names, else {{@link Unknown}}. */\n"
            f"    static {name} fromJson(JsonNode node) {{\n"
            f"        JsonNode tag = node == null ? null : node.get({java_string(prop)});\n"
            f'        String value = tag != null && tag.isTextual() ? tag.textValue() : "";\n'
            f"        return switch (value) {{\n{arms}"
            f"            default -> new Unknown(node);\n        }};\n    }}\n\n"
            f"    /** A member this build does not know (a newer core's): its JSON, kept whole. */\n"
            f"    final class Unknown extends JsonObject implements {name} {{\n"
            f"        Unknown(JsonNode node) {{\n            super(node, Set.of());\n        }}\n\n"
            f"        @Override\n        public String {pm}() {{\n"
            f"            JsonNode tag = _json().get({java_string(prop)});\n"
            f'            return tag != null && tag.isTextual() ? tag.textValue() : "";\n'
            f"        }}\n    }}\n}}\n"
        )

    def fields(
        self, name: str, s: dict[str, Any], defs: dict[str, Any], top: bool
    ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """The accessors and setters of a class's fields, by field; its constant fields apart."""
        props: dict[str, Any] = s.get("properties", {})
        required = set(s.get("required", []))
        out: dict[str, tuple[str, str]] = {}
        consts: dict[str, str] = {}
        for prop, ps in props.items():
            m = _method(prop)
            doc = ps.get("description") if isinstance(ps, dict) else None
            if isinstance(ps, dict) and "const" in ps:
                consts[prop] = str(ps["const"])
                continue
            alts, nullable = _non_null(ps) if isinstance(ps, dict) else ([ps], False)
            inner = alts[0] if len(alts) == 1 else {"anyOf": alts}
            if (name, prop) in ENVELOPES:
                jt = JType(
                    "dev.aimux.AimuxException",
                    "(node, what) -> dev.aimux.AimuxDecoder.decode(node.toString())",
                    envelope=True,
                )
            else:
                jt = self.type_of(inner, defs, name, prop, top)
            jdoc = esc(doc) if doc else f"The field {{@code {esc(prop)}}}."
            if prop in required and not nullable:
                accessor = (
                    "\n"
                    + javadoc(
                        jdoc + "\n\n@throws InvalidDataException when absent or not of its type",
                        "    ",
                    )
                    + f"    public {jt.java} {m}() {{\n"
                    f"        return required({java_string(prop)}, {jt.codec});\n    }}\n"
                )
            else:
                accessor = (
                    "\n"
                    + javadoc(
                        jdoc + "\n\nEmpty when absent or null ({@link #_" + m + "()} tells which).",
                        "    ",
                    )
                    + f"    public Optional<{jt.java}> {m}() {{\n"
                    f"        return optional({java_string(prop)}, {jt.codec});\n    }}\n"
                )
            accessor += (
                f"\n    /** {{@code {esc(prop)}}} as the JSON has it: absent, null, of its type or not. */\n"
                f"    public JsonField<{jt.java}> _{m}() {{\n"
                f"        return field({java_string(prop)}, {jt.codec});\n    }}\n"
            )
            out[prop] = (accessor, self.setters(prop, m, jt, jdoc))
        return out, consts

    def render_base(self, base: str, members: list[str], shared: list[str]) -> str:
        """The abstract class a family of models shares (the op models' inheritance: ``ToolCall``
        and the ``ToolCallEvent`` / ``ToolCallOutput`` made of it): the accessors and setters of
        the fields every member has alike, once."""
        first = self.pending_jobs[members[0]]
        pieces, _ = self.fields(*first)
        accessors = "".join(pieces[p][0] for p in shared)
        setters = "".join(pieces[p][1] for p in shared).replace(
            "        public Builder ", "        public B "
        )
        links = ", ".join(f"{{@link {m}}}" for m in members)
        doc = javadoc(
            f"What {links} share: the fields of every one of them, read and set alike. Each is a\n"
            "final class over it with its own builder."
        )
        permits = _wrap(members, "        ")
        return self.file(
            f"{doc}public abstract sealed class {base} extends JsonObject\n"
            f"        permits {permits} {{\n"
            f"    {base}(JsonNode node, Set<String> known) {{\n        super(node, known);\n    }}\n\n"
            f"    {base}(JsonNode node, Set<String> known, Map<String, ?> decoded) {{\n"
            f"        super(node, known, decoded);\n    }}\n"
            f"{accessors}\n"
            f"    /** The setters every {{@link {base}}}'s builder has. @param <B> the builder's own type */\n"
            f"    public abstract static class Builder<B extends Builder<B>> extends JsonObject.Builder<B> {{\n"
            f"        Builder(JsonNode from) {{\n            super(from);\n        }}\n"
            f"{setters}    }}\n}}\n"
        )

    def render_object(
        self,
        name: str,
        s: dict[str, Any],
        defs: dict[str, Any],
        top: bool,
        base: str = "JsonObject",
        shared: frozenset[str] = frozenset(),
    ) -> str:
        """One class; the fields in ``shared`` are its ``base``'s (a family's abstract class)."""
        props: dict[str, Any] = s.get("properties", {})
        required = set(s.get("required", []))
        pieces, consts = self.fields(name, s, defs, top)
        accessors, setters = "", ""
        for prop in props:
            if prop in consts:
                accessors += (
                    f"\n    /** Always {{@code {esc(consts[prop])}}}. */\n"
                    f"    public String {_method(prop)}() {{\n        return {java_string(consts[prop])};\n    }}\n"
                )
            elif prop not in shared:
                accessors += pieces[prop][0]
                setters += pieces[prop][1]
        known = _wrap([java_string(p) for p in props], "            ")
        req = "".join(f", {java_string(p)}" for p in props if p in required and p not in consts)
        init = "".join(
            f"        b.put({java_string(p)}, {java_string(v)});\n" for p, v in consts.items()
        )
        unions = self.members.get(name)
        implements = f" implements {', '.join(unions)}" if unions else ""
        # a field holding an envelope the binding has decoded already (a host tool's failure,
        # caused by the very exception it threw): a view that reads it as that exception
        decoded = ""
        for prop in (p for p in props if (name, p) in ENVELOPES):
            decoded += (
                f"\n    /** A view of a JSON object whose {{@code {esc(prop)}}} reads as {{@code error}}"
                " (decoded by the binding). */\n"
                f"    public static {name} fromJson(JsonNode node, dev.aimux.AimuxException error) {{\n"
                f"        return new {name}(node, Map.of({java_string(prop)}, error));\n    }}\n"
            )
        if decoded:
            decoded = (
                f"\n    private {name}(JsonNode node, Map<String, ?> decoded) {{\n"
                f"        super(node, KNOWN, decoded);\n    }}\n{decoded}"
            )
        desc = s.get("description")
        doc = javadoc(
            (esc(desc) + "\n\n" if desc else "")
            + "Immutable; {@link #builder()} makes one, {@link #toBuilder()} a changed copy."
        )
        return self.file(
            f"{doc}public final class {name} extends {base}{implements} {{\n"
            f"    private static final Set<String> KNOWN = Set.of(\n            {known});\n\n"
            f"    /** Reads a JSON object (fields of any value; the accessors check their types). */\n"
            f"    public static final Codec<{name}> CODEC = (node, what) -> new {name}(node);\n\n"
            f"    private {name}(JsonNode node) {{\n        super(node, KNOWN);\n    }}\n\n"
            f"    /** A view of a JSON object, kept whole. */\n"
            f"    public static {name} fromJson(JsonNode node) {{\n        return new {name}(node);\n    }}\n\n"
            f"    /** A view of JSON object text. */\n"
            f"    public static {name} fromJson(String json) {{\n        return new {name}(Json.parse(json));\n    }}\n"
            f"{decoded}\n"
            f"    /** An empty builder. */\n"
            f"    public static Builder builder() {{\n        Builder b = new Builder(null);\n{init}"
            f"        return b;\n    }}\n\n"
            f"    /** A builder holding this object's fields (the unknown ones too). */\n"
            f"    public Builder toBuilder() {{\n        return new Builder(node());\n    }}\n"
            f"{accessors}\n"
            f"    /** Builds a {{@link {name}}}. */\n"
            f"    public static final class Builder extends {base}.Builder<Builder> {{\n"
            f"        private Builder(JsonNode from) {{\n            super(from);\n        }}\n\n"
            f"        @Override\n        protected Builder self() {{\n            return this;\n        }}\n"
            f"{setters}\n"
            f"        /** The object. @throws IllegalStateException when a required field is unset */\n"
            f"        public {name} build() {{\n"
            f"            return new {name}(built({java_string(name)}{req}));\n        }}\n    }}\n}}\n"
        )

    @staticmethod
    def setters(prop: str, m: str, jt: JType, jdoc: str) -> str:
        key = java_string(prop)
        first = " ".join(jdoc.split("\n\n")[0].split()).split(". ")[0].rstrip(".") + "."
        if len(first) > 90:
            first = f"The field {{@code {esc(prop)}}}."
        out = f"\n        /** {first} (null: JSON null). */\n"
        if jt.envelope:
            return out + (
                f"        public Builder {m}(JsonNode envelope) {{\n"
                f"            return put({key}, envelope);\n        }}\n"
            )
        # free-form JSON (a schema, an input, provider options): any value Jackson can write
        param = "Object" if "JsonNode" in jt.java else jt.java
        out += f"        public Builder {m}({param} value) {{\n            return put({key}, value);\n        }}\n"
        prim = PRIMITIVE.get(jt.java)
        if prim:
            out += f"\n        /** {first} */\n        public Builder {m}({prim} value) {{\n            return put({key}, value);\n        }}\n"
        if jt.value_class:
            out += f"\n        /** {first} (any wire value) */\n        public Builder {m}(String value) {{\n            return put({key}, value);\n        }}\n"
        for alt, at in jt.alts:
            out += (
                f"\n        /** {first} */\n        public Builder {m}({at.java} value) {{\n"
                f"            return {m}({jt.java}.of{alt}(value));\n        }}\n"
            )
            if at.value_class:
                out += (
                    f"\n        /** {first} (any wire value of {esc(alt)}) */\n"
                    f"        public Builder {m}(String value) {{\n"
                    f"            return {m}({at.java}.of(value));\n        }}\n"
                )
        return out


def model_roots() -> dict[str, str]:
    """Each op model class (``ops/models.py``, ``ops/outputs.py``) → the topmost op model it
    inherits from (itself when none): the families whose fields the Java classes share."""
    from pydantic import BaseModel

    from ..ops import models, outputs

    modules = {models.__name__, outputs.__name__}
    roots: dict[str, str] = {}
    for module in (models, outputs):
        for cls in vars(module).values():
            if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ in modules:
                chain = [c for c in cls.__mro__ if c.__module__ in modules]
                roots[cls.__name__] = chain[-1].__name__
    return roots


def render(m: Manifest) -> dict[str, str]:
    gen = Gen(model_roots())
    ops = sorted((op for op in m.ops if op["name"] in OPS), key=lambda op: str(op["name"]))
    for op in ops:
        for part in ("params", "result", "event"):
            s = op.get(part)
            if s is None:
                continue
            defs = s.get("$defs", {})
            body = {k: v for k, v in s.items() if k not in ("$defs", "$id", "$schema")}
            if "oneOf" in body:
                name = f"{_pascal(op['name'])}{part.capitalize()}"
                gen.sealed(name, body, defs)
            else:
                gen.object_class(str(body["title"]), body, defs, top=True)
    files = gen.finish()
    return {f"{OUT}/{name}.java": text for name, text in sorted(files.items())}
