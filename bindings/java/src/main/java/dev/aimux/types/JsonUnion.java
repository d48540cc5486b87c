package dev.aimux.types;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A value of one of several JSON shapes (e.g. a message's content: text or parts): the generated
 * subclass has an {@code ofX} factory and an {@code x()} / {@code isX()} reader per shape, and
 * keeps a value of a shape this build does not know as its JSON.
 */
public abstract class JsonUnion {
    private final JsonNode node;

    protected JsonUnion(JsonNode node) {
        this.node = node == null ? Json.MAPPER.nullNode() : node.deepCopy();
    }

    final JsonNode node() {
        return node;
    }

    /** The value as JSON (a copy). */
    public final JsonNode _json() {
        return node.deepCopy();
    }

    protected final <T> java.util.Optional<T> as(Codec<T> codec, String what) {
        try {
            return java.util.Optional.of(codec.decode(node, what));
        } catch (InvalidDataException e) {
            return java.util.Optional.empty();
        }
    }

    @Override
    public final boolean equals(Object o) {
        return o != null && o.getClass() == getClass() && ((JsonUnion) o).node.equals(node);
    }

    @Override
    public final int hashCode() {
        return node.hashCode();
    }

    @Override
    public final String toString() {
        return getClass().getSimpleName() + "(" + Json.redacted(node) + ")";
    }
}
