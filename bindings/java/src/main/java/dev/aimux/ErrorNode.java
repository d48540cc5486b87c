package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.core.type.TypeReference;

import dev.aimux.errors.AimuxErrorType;

import java.math.BigInteger;
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
        int wire = wireCode(json.get("code"));
        // A root without a valid code: its known name supplies it (the decoder refused the rest).
        this.code = rawJson != null && wire < 1 && variant != null ? variant.code() : wire;
        JsonNode err = json.get("error");
        this.name = err != null && err.isObject() ? text(err.get("name")) : null;
        this.message = messageOf(json);
        this.variant = variant;
    }

    /** The largest code a node may carry: aimux_error_code returns an int32_t. */
    static final long CODE_MAX = 0x7fffffffL;

    /**
     * The largest {@code retryAfterMs} a root reports (aimux_ops.wire.envelope.RETRY_AFTER_MAX_MS): the
     * longest Go time.Duration in whole milliseconds, exact in a double.
     */
    static final long RETRY_AFTER_MAX_MS = 9_223_372_036_854L;

    /**
     * A JSON number's value when it is a whole number (3, 3.0 and 3e0 alike: JSON does not tell
     * them apart, and JavaScript's parser cannot; docs/DESIGN.md "Numbers on the wire"), else null.
     */
    static BigInteger wholeNumber(JsonNode n) {
        if (n == null || !n.isNumber() || !n.canConvertToExactIntegral()) {
            return null;
        }
        return n.bigIntegerValue();
    }

    /** A node's code: a whole number from 0 to 2147483647, else 0. */
    static int wireCode(JsonNode n) {
        BigInteger v = wholeNumber(n);
        return v != null && v.signum() >= 0 && v.compareTo(BigInteger.valueOf(CODE_MAX)) <= 0 ? v.intValue() : 0;
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
