package dev.aimux.types;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Reads one JSON value as a Java type, or says why not ({@link InvalidDataException}). The
 * generated types name one per field; JSON null never reaches a codec (it is {@link JsonField#isNull()}).
 */
@FunctionalInterface
public interface Codec<T> {
    /** The value of {@code node} (never null, never JSON null); {@code what} names it in an error. */
    T decode(JsonNode node, String what);

    /** This codec's value passed through {@code f} (e.g. a string into a value class). */
    default <R> Codec<R> map(Function<T, R> f) {
        return (node, what) -> f.apply(decode(node, what));
    }

    Codec<String> STRING = (n, what) -> {
        if (!n.isTextual()) {
            throw mismatch(what, "a string", n);
        }
        return n.textValue();
    };

    Codec<Long> LONG = (n, what) -> {
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw mismatch(what, "an integer", n);
        }
        return n.longValue();
    };

    Codec<Double> DOUBLE = (n, what) -> {
        if (!n.isNumber()) {
            throw mismatch(what, "a number", n);
        }
        return n.doubleValue();
    };

    Codec<Boolean> BOOLEAN = (n, what) -> {
        if (!n.isBoolean()) {
            throw mismatch(what, "a boolean", n);
        }
        return n.booleanValue();
    };

    /** Any JSON value, as a copy of its tree. */
    Codec<JsonNode> JSON = (n, what) -> n.deepCopy();

    /** A JSON array of {@code item} values (a JSON null item is a Java null). */
    static <T> Codec<List<T>> list(Codec<T> item) {
        return (n, what) -> {
            if (!n.isArray()) {
                throw mismatch(what, "an array", n);
            }
            List<T> out = new ArrayList<>(n.size());
            for (int i = 0; i < n.size(); i++) {
                JsonNode v = n.get(i);
                out.add(v.isNull() ? null : item.decode(v, what + "[" + i + "]"));
            }
            return Collections.unmodifiableList(out);
        };
    }

    /** A JSON object of {@code value} values, in the object's order. */
    static <T> Codec<Map<String, T>> map(Codec<T> value) {
        return (n, what) -> {
            if (!n.isObject()) {
                throw mismatch(what, "an object", n);
            }
            Map<String, T> out = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : n.properties()) {
                JsonNode v = e.getValue();
                out.put(e.getKey(), v.isNull() ? null : value.decode(v, what + "." + e.getKey()));
            }
            return Collections.unmodifiableMap(out);
        };
    }

    /** The error of a value that is not {@code expected}. */
    static InvalidDataException mismatch(String what, String expected, JsonNode got) {
        return new InvalidDataException(what + " is not " + expected + " (got " + got.getNodeType().name().toLowerCase(java.util.Locale.ROOT) + ")");
    }
}
