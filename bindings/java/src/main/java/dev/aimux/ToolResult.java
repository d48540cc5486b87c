package dev.aimux;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A tool-level error a {@link Tool} returns: the model sees it and may recover (seed 001's
 * {@code ToolResult::error}); a thrown exception is a framework error instead.
 */
public final class ToolResult {
    private final String message;
    private final Object data;
    private final boolean hasData;

    private ToolResult(String message, Object data, boolean hasData) {
        this.message = String.valueOf(message);
        this.data = data;
        this.hasData = hasData;
    }

    /** A tool-level error with a message. */
    public static ToolResult error(String message) {
        return new ToolResult(message, null, false);
    }

    /** A tool-level error with a message and data (any Jackson-serialisable value). */
    public static ToolResult errorWithData(String message, Object data) {
        return new ToolResult(message, data, true);
    }

    public String message() {
        return message;
    }

    public Object data() {
        return data;
    }

    /** The answer's JSON: {@code {"error": {"message", "data"?}}}. */
    String answerJson() {
        ObjectNode answer = ErrorNode.MAPPER.createObjectNode();
        ObjectNode error = answer.putObject("error");
        error.put("message", message);
        if (hasData) {
            error.set("data", ErrorNode.MAPPER.valueToTree(data));
        }
        return answer.toString();
    }

    @Override
    public String toString() {
        return "ToolResult.error(" + message + (hasData ? ", " + data : "") + ")";
    }
}
