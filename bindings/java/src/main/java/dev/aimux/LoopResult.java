package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** A generate op's result from its loop's events (stream_text with host tools), as the AI SDK's generateText gives it. */
final class LoopResult {
    private LoopResult() {}

    private static ObjectNode newStep() {
        ObjectNode step = ErrorNode.MAPPER.createObjectNode();
        step.put("text", "");
        step.putArray("toolCalls");
        step.putArray("toolResults");
        step.putArray("toolErrors");
        return step;
    }

    private static ObjectNode callOf(JsonNode e) {
        ObjectNode call = ErrorNode.MAPPER.createObjectNode();
        for (String k : new String[] {"toolCallId", "toolName", "input"}) {
            call.set(k, e.has(k) ? e.get(k) : ErrorNode.MAPPER.nullNode());
        }
        return call;
    }

    /** Reads {@code s} to its end: the result JSON, or the error event's exception thrown. */
    static String of(ToolStream s) {
        ArrayNode steps = ErrorNode.MAPPER.createArrayNode();
        ObjectNode step = newStep();
        while (s.hasNext()) {
            if (Thread.currentThread().isInterrupted()) {
                s.cancel();
                throw Envelopes.local(dev.aimux.errors.AimuxErrorType.AIMUX_ABORTED, "the calling thread was interrupted", null);
            }
            StreamEvent event = s.next();
            JsonNode e = event.node();
            switch (String.valueOf(event.type())) {
                case "text-delta" -> step.put("text", step.get("text").textValue() + e.path("text").asText(""));
                case "tool-call" -> ((ArrayNode) step.get("toolCalls")).add(callOf(e));
                case "tool-result" -> ((ArrayNode) step.get("toolResults")).add(callOf(e).set("output", e.get("output")));
                case "tool-error" -> ((ArrayNode) step.get("toolErrors")).add(callOf(e).set("error", e.get("error")));
                case "finish-step" -> {
                    for (String k : new String[] {"finishReason", "usage", "response"}) {
                        step.set(k, e.get(k));
                    }
                    steps.add(step);
                    step = newStep();
                }
                case "error" -> throw event.error().orElseThrow();
                case "finish" -> {
                    JsonNode last = steps.isEmpty() ? newStep() : steps.get(steps.size() - 1);
                    ObjectNode result = ErrorNode.MAPPER.createObjectNode();
                    result.set("text", last.get("text"));
                    result.set("finishReason", e.get("finishReason"));
                    result.set("usage", e.get("usage"));
                    result.set("toolCalls", last.get("toolCalls"));
                    result.set("toolResults", last.get("toolResults"));
                    result.set("response", e.get("response"));
                    result.set("steps", steps);
                    return result.toString();
                }
                default -> { }
            }
        }
        throw Envelopes.local(dev.aimux.errors.AimuxErrorType.AIMUX_ABORTED, "the call ended before its finish event", null);
    }
}
