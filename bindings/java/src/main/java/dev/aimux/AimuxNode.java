package dev.aimux;

import dev.aimux.errors.AimuxErrorType;

import java.util.Map;
import java.util.Optional;

/**
 * What every aimux-shaped link of a decoded chain offers: the root {@link AimuxException} and each
 * {@link AimuxCauseException} below it (source nodes are {@link AimuxSourceException}).
 *
 * <p>Variant identity works the same on the root and on cause nodes. Each variant of
 * {@code schema/manifest.json} has a generated interface in {@code dev.aimux.errors} named after its
 * {@code className} (for example {@code APICallError}) that both its root class
 * ({@code APICallException}) and its cause class ({@code APICallCauseException}) implement, with typed
 * accessors for the payload fields. So {@code t instanceof APICallError api} matches an API-call
 * failure wherever it sits in the chain; {@link #variant()} gives the same as an enum constant.
 */
public interface AimuxNode {
    /** The domain: "aimux", "recording", "binding", "protocol", or whatever a newer core sent. */
    String kind();

    /** The stable numeric code (0 when the node carried none). */
    int code();

    /** {@code error.name}, e.g. "AI_APICallError"; null when the node carried none. */
    String name();

    /** The node's display text (the envelope's {@code message}). */
    String getMessage();

    /** This node's JSON: the whole envelope for the root, the node itself for a cause node. */
    String toJson();

    /** The generated variant this node was decoded as; empty for a kind/name/code this build does not know. */
    Optional<AimuxErrorType> variant();

    /** The typed payload {@code error} (name plus the variant's fields) as plain Java values. */
    Map<String, Object> errorFields();

    /** One payload field as a plain Java value (String, Long/Integer/BigInteger, Double, Boolean, Map, List). */
    default Optional<Object> field(String fieldName) {
        return Optional.ofNullable(errorFields().get(fieldName));
    }

    default Optional<String> stringField(String fieldName) {
        return field(fieldName).filter(String.class::isInstance).map(String.class::cast);
    }

    default Optional<Long> longField(String fieldName) {
        return field(fieldName)
                .filter(v -> v instanceof Integer || v instanceof Long || v instanceof java.math.BigInteger)
                .map(v -> ((Number) v).longValue());
    }

    default Optional<Double> doubleField(String fieldName) {
        return field(fieldName).filter(Number.class::isInstance).map(v -> ((Number) v).doubleValue());
    }

    @SuppressWarnings("unchecked")
    default Optional<Map<String, Object>> mapField(String fieldName) {
        return field(fieldName).filter(Map.class::isInstance).map(v -> (Map<String, Object>) v);
    }

    @SuppressWarnings("unchecked")
    default Optional<java.util.List<Object>> listField(String fieldName) {
        return field(fieldName).filter(java.util.List.class::isInstance).map(v -> (java.util.List<Object>) v);
    }

    default Optional<Boolean> booleanField(String fieldName) {
        return field(fieldName).filter(Boolean.class::isInstance).map(Boolean.class::cast);
    }

    /** True when this node was decoded as {@code type}. */
    default boolean is(AimuxErrorType type) {
        return variant().map(v -> v == type).orElse(false);
    }
}
