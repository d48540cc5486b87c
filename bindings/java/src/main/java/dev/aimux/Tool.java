package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A host tool (CONTRACT §2.2, seed 001's three layers): what {@link #execute} does decides the layer.
 *
 * <ul>
 *   <li>returns a value (any Jackson-serialisable object, a {@link JsonNode}, a String) → a {@code tool-result}
 *       the model reads;</li>
 *   <li>returns {@link ToolResult#error(String)} / {@link ToolResult#errorWithData(String, Object)} → a
 *       {@code tool-error} the model reads and may recover from;</li>
 *   <li>throws → the model never sees it; the caller gets {@code ToolExecutionError} (code 22, an
 *       {@link AimuxException}) whose {@link Throwable#getCause()} is the very exception thrown
 *       ({@code "toolFailures": "to-model"} sends its message to the model instead).</li>
 * </ul>
 *
 * Each call runs on its own (virtual) thread; a cancelled stream interrupts it.
 */
@FunctionalInterface
public interface Tool {
    /** Runs one call: {@code input} is the call's input JSON. */
    Object execute(JsonNode input, ToolContext ctx) throws Exception;
}
