package dev.aimux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;

import dev.aimux.types.GenerateObjectParams;
import dev.aimux.types.GenerateObjectResult;
import dev.aimux.types.GenerateTextParams;
import dev.aimux.types.GenerateTextResult;
import dev.aimux.types.StreamTextParams;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry points of the Java binding: every op of the core through libaimux.
 *
 * <pre>{@code
 * GenerateTextResult r = Aimux.generateText(GenerateTextParams.builder()
 *         .model(ModelSpec.builder().provider(Provider.OPENAI).modelId("gpt-4o-mini").build())
 *         .prompt("Hello")
 *         .build());
 * try (TextStream s = Aimux.streamText(params)) {
 *     for (StreamTextEvent e : s) { if (e instanceof TextDeltaEvent d) { ... d.text() ... } }
 * }
 * String result = Aimux.call("generate_text", paramsJson);     // any op, JSON text
 * try (AimuxStream s = Aimux.stream("stream_text", paramsJson)) {
 *     for (StreamEvent e : s) { ... }            // cancel() from any thread ends it
 * }
 * }</pre>
 *
 * Failures throw {@link AimuxException} (a generated subclass per variant) whose {@link
 * Throwable#getCause()} chain mirrors the envelope's native chain down to the OS error.
 * All methods are safe to call from any number of threads at once. The library is found as
 * {@code Native.locate} says (CONTRACT §3) and called through FFM on JDK 22+, JNA before; no JVM flag is needed.
 */
public final class Aimux {
    private Aimux() {}

    private static final TypeReference<LinkedHashMap<String, Object>> MAP = new TypeReference<>() {};

    /** Runs a call-mode op: params and result are JSON text. */
    public static String call(String op, String paramsJson) {
        check(op, paramsJson);
        return Native.call(op, paramsJson);
    }

    /** Runs a call-mode op with params as plain Java values (serialised with Jackson); returns the parsed result. */
    public static Map<String, Object> call(String op, Map<String, ?> params) {
        String result = call(op, toJson(params));
        try {
            return ErrorNode.MAPPER.readValue(result, MAP);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("libaimux returned a result that is not a JSON object", e);
        }
    }

    /** Starts a stream-mode op. Close the returned stream (try-with-resources). */
    public static AimuxStream stream(String op, String paramsJson) {
        check(op, paramsJson);
        return new AimuxStream(Native.stream(op, paramsJson));
    }

    /** Starts a stream-mode op with params as plain Java values. */
    public static AimuxStream stream(String op, Map<String, ?> params) {
        return stream(op, toJson(params));
    }

    /**
     * Runs {@code generate_text} with host tools: the loop streamed ({@code stream_text}), each call of a tool in
     * {@code tools} run on its own virtual thread and answered (see {@link Tool}); returns the result JSON as the
     * AI SDK's {@code generateText} gives it (text, toolCalls and toolResults of the last step, every step, usage
     * summed). A tool's thrown exception throws {@code ToolExecutionError} (an {@link AimuxException}) whose
     * {@link Throwable#getCause()} is that very exception. Interrupting the calling thread cancels the loop.
     */
    public static String call(String op, String paramsJson, Map<String, Tool> tools) {
        if (!"generate_text".equals(op)) {
            throw Envelopes.local(dev.aimux.errors.AimuxErrorType.AIMUX_UNSUPPORTED_FUNCTIONALITY,
                    "host tools run with generate_text or stream_text, not " + op, null);
        }
        try (ToolStream s = stream("stream_text", paramsJson, tools)) {
            return LoopResult.of(s);
        }
    }

    /** {@link #call(String, String, Map)} with params as plain Java values; returns the parsed result. */
    public static Map<String, Object> call(String op, Map<String, ?> params, Map<String, Tool> tools) {
        String result = call(op, toJson(params), tools);
        try {
            return ErrorNode.MAPPER.readValue(result, MAP);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the loop's result is not a JSON object", e);
        }
    }

    /**
     * Starts a stream-mode op with host tools: each {@code tool-call} event of a tool in {@code tools}, as the stream
     * hands it out, runs that tool on its own virtual thread and its outcome is answered to the stream. Close it.
     */
    public static ToolStream stream(String op, String paramsJson, Map<String, Tool> tools) {
        String params = withTools(paramsJson, tools);
        check(op, params);
        return new ToolStream(new AimuxStream(Native.stream(op, params)), tools);
    }

    /** {@link #stream(String, String, Map)} with params as plain Java values. */
    public static ToolStream stream(String op, Map<String, ?> params, Map<String, Tool> tools) {
        return stream(op, toJson(params), tools);
    }

    /** The params with every tool {@code tools} names marked as the host's ({@code "execute": true}). */
    static String withTools(String paramsJson, Map<String, Tool> tools) {
        java.util.Objects.requireNonNull(tools, "tools");
        com.fasterxml.jackson.databind.JsonNode root;
        try {
            root = ErrorNode.MAPPER.readTree(paramsJson == null ? "{}" : paramsJson);
        } catch (JsonProcessingException e) {
            root = null;
        }
        if (root == null || !root.isObject() || (root.has("tools") && !root.get("tools").isObject() && !root.get("tools").isNull())) {
            throw Envelopes.local(dev.aimux.errors.AimuxErrorType.BINDING_INVALID_WIRE_JSON,
                    "params_json with host tools must be a JSON object whose tools is an object", "params_json");
        }
        var obj = (com.fasterxml.jackson.databind.node.ObjectNode) root;
        var specs = obj.has("tools") && obj.get("tools").isObject()
                ? (com.fasterxml.jackson.databind.node.ObjectNode) obj.get("tools") : obj.putObject("tools");
        for (Map.Entry<String, Tool> e : tools.entrySet()) {
            java.util.Objects.requireNonNull(e.getValue(), "tools." + e.getKey());
            var spec = specs.get(e.getKey());
            var marked = spec != null && spec.isObject()
                    ? (com.fasterxml.jackson.databind.node.ObjectNode) spec : specs.putObject(e.getKey());
            marked.put("execute", true);
        }
        return obj.toString();
    }

    // -- the typed ops (dev.aimux.types, generated from the core's models) -------------------------

    /**
     * {@code generate_text}: one call (or the tool loop of {@code stopWhen}); failures throw the
     * decoded {@link AimuxException} (e.g. {@code RetryException} whose cause is the last attempt).
     */
    public static GenerateTextResult generateText(GenerateTextParams params) {
        return GenerateTextResult.fromJson(Native.call("generate_text", typedJson(params)));
    }

    /** {@code generate_text} with host tools, run as {@link #call(String, String, Map)} runs them. */
    public static GenerateTextResult generateText(GenerateTextParams params, Map<String, Tool> tools) {
        return GenerateTextResult.fromJson(call("generate_text", typedJson(params), tools));
    }

    /** {@code generate_object}: a JSON object of {@code schema} ({@link GenerateObjectResult#object()}). */
    public static GenerateObjectResult generateObject(GenerateObjectParams params) {
        return GenerateObjectResult.fromJson(Native.call("generate_object", typedJson(params)));
    }

    /** {@code stream_text}: its typed events. Close the stream (try-with-resources). */
    public static TextStream streamText(StreamTextParams params) {
        return new TextStream(new AimuxStream(Native.stream("stream_text", typedJson(params))));
    }

    /** {@code stream_text} with host tools (each call of one runs on its own virtual thread). */
    public static TextStream streamText(StreamTextParams params, Map<String, Tool> tools) {
        return new TextStream(stream("stream_text", typedJson(params), tools));
    }

    private static String typedJson(dev.aimux.types.JsonObject params) {
        java.util.Objects.requireNonNull(params, "params");
        String json = params.toJson();
        check("", json);
        return json;
    }

    /** {@code aimux_abi_version()} of the loaded library. */
    public static int abiVersion() {
        return Native.abiVersion();
    }

    /** Where the library was loaded from. */
    public static Path libraryPath() {
        Native.Lib.check();
        return Native.Lib.PATH;
    }

    private static String toJson(Map<String, ?> params) {
        if (params == null) {
            return null;
        }
        try {
            return ErrorNode.MAPPER.writeValueAsString(params);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("params cannot be serialised to JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** C strings end at NUL: refuse what the library could not see whole. Null passes (the core answers 204). */
    private static void check(String op, String params) {
        if (op != null && op.indexOf('\0') >= 0) {
            throw Envelopes.unknownOp(op);
        }
        if (params != null && params.indexOf('\0') >= 0) {
            throw Envelopes.local(dev.aimux.errors.AimuxErrorType.BINDING_INVALID_WIRE_JSON,
                    "params_json is not valid JSON: it contains a NUL character", "params_json");
        }
    }
}
