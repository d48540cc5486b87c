package dev.aimux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * One event of a stream: {@code {"type": "text-delta", "text"}}, {@code {"type": "tool-call", …}},
 * {@code {"type": "finish", finishReason, usage}} or {@code {"type": "error", "error": <envelope>}}.
 */
public final class StreamEvent {
    private final String json;
    private final JsonNode node;
    /** For a host tool's failure: its decoded error, caused by the very exception thrown (ToolStream). */
    volatile AimuxException hostError;

    StreamEvent(String json) {
        this.json = json;
        try {
            this.node = ErrorNode.MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("libaimux sent an event that is not JSON", e);
        }
    }

    /** The event's {@code type}, e.g. "text-delta". */
    public String type() {
        return ErrorNode.text(node.get("type"));
    }

    /** The {@code text} of a text-delta event. */
    public Optional<String> text() {
        return Optional.ofNullable(ErrorNode.text(node.get("text")));
    }

    /** For an {@code error} event: the decoded envelope, with its whole cause chain. */
    public Optional<AimuxException> error() {
        if (hostError != null) {
            return Optional.of(hostError);
        }
        JsonNode e = node.get("error");
        if (!"error".equals(type()) || e == null || !e.isObject()) {
            return Optional.empty();
        }
        return Optional.of(AimuxDecoder.decode(e, e.toString()));
    }

    /** The event's JSON tree (not copied: the binding's own use). */
    JsonNode node() {
        return node;
    }

    /** The event as plain Java values. */
    public Map<String, Object> asMap() {
        return Collections.unmodifiableMap(ErrorNode.MAPPER.convertValue(node,
                new TypeReference<LinkedHashMap<String, Object>>() {}));
    }

    /** The event's JSON as the core sent it. */
    public String json() {
        return json;
    }

    @Override
    public String toString() {
        return json;
    }
}
