package dev.aimux.types;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * An immutable typed view of one JSON object (a generated params, result, event, content part or
 * tool type). It keeps the whole object: the fields this build does not know stay readable
 * ({@link #_additionalProperties()}) and go back out unchanged; a field absent and a field that is
 * JSON null stay apart ({@link JsonField}).
 */
public abstract class JsonObject {
    private final ObjectNode node;
    private final Set<String> known;
    /** Fields the binding has decoded already, read as these values (a host tool's failure). */
    private final Map<String, ?> decoded;

    protected JsonObject(JsonNode node, Set<String> known) {
        this(node, known, Map.of());
    }

    protected JsonObject(JsonNode node, Set<String> known, Map<String, ?> decoded) {
        if (node == null || !node.isObject()) {
            throw new InvalidDataException(getClass().getSimpleName() + " is not a JSON object (got "
                    + (node == null ? "nothing" : node.getNodeType().name().toLowerCase(java.util.Locale.ROOT)) + ")");
        }
        this.node = ((ObjectNode) node).deepCopy();
        this.known = known;
        this.decoded = Map.copyOf(decoded);
    }

    final ObjectNode node() {
        return node;
    }

    /** The whole object as JSON (a copy). */
    public final JsonNode _json() {
        return node.deepCopy();
    }

    /** The object's JSON text, as the core reads or wrote it. */
    public final String toJson() {
        return node.toString();
    }

    /** The fields this build has no accessor for, by name (copies). */
    public final Map<String, JsonNode> _additionalProperties() {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            if (!known.contains(e.getKey())) {
                out.put(e.getKey(), e.getValue().deepCopy());
            }
        }
        return Collections.unmodifiableMap(out);
    }

    protected final <T> JsonField<T> field(String name, Codec<T> codec) {
        return JsonField.read(node, name, codecOf(name, codec), what(name));
    }

    protected final <T> T required(String name, Codec<T> codec) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            throw new InvalidDataException(what(name) + " is " + (v == null ? "missing" : "null"));
        }
        return codecOf(name, codec).decode(v, what(name));
    }

    protected final <T> Optional<T> optional(String name, Codec<T> codec) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            return Optional.empty();
        }
        return Optional.of(codecOf(name, codec).decode(v, what(name)));
    }

    /** {@code codec}, or the value the binding decoded {@code name} to already. */
    @SuppressWarnings("unchecked")
    private <T> Codec<T> codecOf(String name, Codec<T> codec) {
        Object value = decoded.get(name);
        return value == null ? codec : (v, what) -> (T) value;
    }

    private String what(String name) {
        return getClass().getSimpleName() + "." + name;
    }

    @Override
    public final boolean equals(Object o) {
        return o != null && o.getClass() == getClass() && ((JsonObject) o).node.equals(node);
    }

    @Override
    public final int hashCode() {
        return node.hashCode();
    }

    /** The class name and the JSON, with keys and credentials redacted. */
    @Override
    public final String toString() {
        return getClass().getSimpleName() + Json.redacted(node);
    }

    /** What every generated builder shares: the object under construction and its unknown fields. */
    protected abstract static class Builder<B extends Builder<B>> {
        private final ObjectNode node;

        protected Builder(JsonNode from) {
            this.node = from == null ? Json.MAPPER.createObjectNode() : ((ObjectNode) from).deepCopy();
        }

        protected abstract B self();

        protected final B put(String name, Object value) {
            node.set(name, Json.encode(value));
            return self();
        }

        /** A field this build has no setter for (or a value of a type it does not know), sent as given. */
        public final B putAdditionalProperty(String name, Object value) {
            return put(name, value);
        }

        /** Leaves {@code name} out of the object (absent, not null). */
        public final B remove(String name) {
            node.remove(name);
            return self();
        }

        /** The object so far; {@code required} fields must be set. */
        protected final ObjectNode built(String type, String... required) {
            for (String r : required) {
                if (!node.has(r)) {
                    throw new IllegalStateException(type + "." + r + " is required");
                }
            }
            return node.deepCopy();
        }
    }
}
