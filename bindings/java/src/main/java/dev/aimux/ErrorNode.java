package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.core.type.TypeReference;

import dev.aimux.errors.AimuxErrorType;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One decoded envelope node, handed by the decoder to the (generated) exception constructors.
 * Opaque outside this package: nothing but {@link AimuxDecoder} creates one.
 */
public final class ErrorNode implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    static final ObjectMapper MAPPER = new ObjectMapper();

    @SuppressWarnings("serial") // every JsonNode implementation is Serializable
    final JsonNode json;
    final String rawJson; // the exact text received, for the root; null for cause nodes
    final String kind;
    final int code;
    final String name;
    final String message;
    final AimuxErrorType variant;

    ErrorNode(JsonNode json, String rawJson, AimuxErrorType variant) {
        this.json = json;
        this.rawJson = rawJson;
        this.kind = text(json.get("kind"));
        JsonNode c = json.get("code");
        int wire = c != null && c.canConvertToInt() && c.isIntegralNumber() ? c.intValue() : 0;
        // A root without a valid code: its known name supplies it (the decoder refused the rest).
        this.code = rawJson != null && wire < 1 && variant != null ? variant.code() : wire;
        JsonNode err = json.get("error");
        this.name = err != null && err.isObject() ? text(err.get("name")) : null;
        this.message = messageOf(json);
        this.variant = variant;
    }

    /** A node's message: the string, "" when absent or null, the JSON text of any other value. */
    static String messageOf(JsonNode json) {
        JsonNode m = json.get("message");
        if (m == null || m.isNull()) {
            return "";
        }
        return m.isTextual() ? m.textValue() : m.toString();
    }

    static String text(JsonNode n) {
        return n != null && n.isTextual() ? n.textValue() : null;
    }

    String toJson() {
        if (rawJson != null) {
            return rawJson;
        }
        try {
            return MAPPER.writeValueAsString(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    Optional<AimuxErrorType> variant() {
        return Optional.ofNullable(variant);
    }

    private transient volatile Map<String, Object> fields;

    Map<String, Object> errorFields() {
        Map<String, Object> f = fields;
        if (f == null) {
            JsonNode err = json.get("error");
            if (err != null && err.isObject()) {
                f = Collections.unmodifiableMap(
                        MAPPER.convertValue(err, new TypeReference<LinkedHashMap<String, Object>>() {}));
            } else {
                f = Map.of();
            }
            fields = f;
        }
        return f;
    }

    String describe() {
        StringBuilder sb = new StringBuilder("[").append(kind).append(' ').append(code);
        if (name != null) {
            sb.append(' ').append(name);
        }
        return sb.append(']').toString();
    }
}
