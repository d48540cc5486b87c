package dev.aimux.types;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.util.Map;
import java.util.regex.Pattern;

/** The JSON of the typed values: Java values into trees, text into trees, and the redacted display text. */
public final class Json {
    private Json() {}

    static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** Keys whose values never show in {@code toString()} (a key, a credential header). */
    private static final Pattern SECRET = Pattern.compile("(?i)api[-_]?key|authorization|proxy-authorization|x-api-key|cookie");

    /**
     * A Java value as JSON: a typed object, union or {@link StringValue} as its JSON, a {@link JsonNode}
     * copied, a {@link java.util.List} / {@link Map} member by member, anything else through Jackson.
     */
    public static JsonNode encode(Object v) {
        if (v == null) {
            return F.nullNode();
        }
        if (v instanceof JsonObject o) {
            return o.node().deepCopy();
        }
        if (v instanceof JsonUnion u) {
            return u.node().deepCopy();
        }
        if (v instanceof StringValue s) {
            return TextNode.valueOf(s.value());
        }
        if (v instanceof JsonNode n) {
            return n.deepCopy();
        }
        if (v instanceof java.util.List<?> list) {
            ArrayNode a = F.arrayNode(list.size());
            for (Object item : list) {
                a.add(encode(item));
            }
            return a;
        }
        if (v instanceof Map<?, ?> map) {
            ObjectNode o = F.objectNode();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                o.set(String.valueOf(e.getKey()), encode(e.getValue()));
            }
            return o;
        }
        return MAPPER.valueToTree(v);
    }

    /** Parses JSON text (the core's results and events). */
    public static JsonNode parse(String text) {
        try {
            return MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new InvalidDataException("not JSON: " + e.getOriginalMessage());
        }
    }

    /** The JSON text of a tree with the value of every secret-named key replaced. */
    static String redacted(JsonNode node) {
        JsonNode copy = node.deepCopy();
        redact(copy);
        return copy.toString();
    }

    private static void redact(JsonNode n) {
        if (n instanceof ObjectNode o) {
            for (Map.Entry<String, JsonNode> e : java.util.List.copyOf(o.properties())) {
                if (SECRET.matcher(e.getKey()).matches() && !e.getValue().isNull()) {
                    o.set(e.getKey(), TextNode.valueOf("[redacted]"));
                } else {
                    redact(e.getValue());
                }
            }
        } else if (n instanceof ArrayNode a) {
            for (JsonNode item : a) {
                redact(item);
            }
        }
    }
}
