package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A source node: a snapshot of an external exception inside the core (socket, TLS, JSON decoder,
 * file system, validation library): {@code {message, type?, cause?}}.
 */
public class AimuxSourceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String type;
    @SuppressWarnings("serial") // every JsonNode implementation is Serializable
    private final JsonNode json;

    AimuxSourceException(JsonNode json) {
        super(ErrorNode.messageOf(json));
        this.type = ErrorNode.text(json.get("type"));
        this.json = json;
    }

    /** The external exception's class name as the core saw it (e.g. "ConnectionRefusedError"), or null. */
    public String type() {
        return type;
    }

    /** This node's JSON. */
    public String toJson() {
        try {
            return ErrorNode.MAPPER.writeValueAsString(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A snapshot of what happened inside the core: no Java frames of its own. */
    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }

    @Override
    public String toString() {
        String msg = getLocalizedMessage();
        String head = getClass().getName() + (type != null ? " [" + type + "]" : "");
        return msg != null ? head + ": " + msg : head;
    }
}
