package dev.aimux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry points of the Java binding: every op of the core through libaimux.
 *
 * <pre>{@code
 * String result = Aimux.call("generate_text", paramsJson);
 * try (AimuxStream s = Aimux.stream("stream_text", paramsJson)) {
 *     for (StreamEvent e : s) { ... }            // cancel() from any thread ends it
 * }
 * }</pre>
 *
 * Failures throw {@link AimuxException} (a generated subclass per variant) whose {@link
 * Throwable#getCause()} chain mirrors the envelope's native chain down to the OS error.
 * All methods are safe to call from any number of threads at once. The library is found at
 * {@code -Daimux.lib}, else {@code $AIMUX_LIB}, else {@code <repo>/native/build/libaimux.so}; the JVM
 * needs {@code --enable-native-access=ALL-UNNAMED}.
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
