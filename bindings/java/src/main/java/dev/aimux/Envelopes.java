package dev.aimux;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.aimux.errors.AimuxErrorType;

/** Envelopes the binding itself has to produce (never a hand-built JSON string). */
final class Envelopes {
    private Envelopes() {}

    /** When the library's JSON is unusable: rebuild a minimal envelope from aimux_error_code / message. */
    static AimuxException fromCodeAndMessage(int code, String message) {
        String kind = AimuxErrorType.kindOfCode(code);
        if (kind == null) {
            kind = "unknown";
        }
        ObjectNode env = ErrorNode.MAPPER.createObjectNode();
        env.put("kind", kind);
        env.put("code", code);
        env.put("message", message == null ? "" : message);
        env.putObject("error");
        env.put("retryable", false);
        return AimuxDecoder.decode(env, env.toString());
    }

    /** An error raised before the call reaches the library (e.g. a NUL inside a string). */
    static AimuxException local(AimuxErrorType type, String message, String argument) {
        ObjectNode env = ErrorNode.MAPPER.createObjectNode();
        env.put("kind", type.kind());
        env.put("code", type.code());
        env.put("message", message);
        ObjectNode err = env.putObject("error");
        err.put("name", type.errorName());
        err.put("argument", argument);
        env.put("retryable", false);
        return AimuxDecoder.decode(env, env.toString());
    }

    /** 207 RuntimeInitError: the library cannot be found or loaded (CONTRACT §3). */
    static AimuxException runtimeInit(String message) {
        ObjectNode env = ErrorNode.MAPPER.createObjectNode();
        AimuxErrorType type = AimuxErrorType.BINDING_RUNTIME_INIT;
        env.put("kind", type.kind());
        env.put("code", type.code());
        env.put("message", message);
        env.putObject("error").put("name", type.errorName());
        env.put("retryable", false);
        return AimuxDecoder.decode(env, env.toString());
    }

    /** An op name the library could never have registered (it contains a NUL character). */
    static AimuxException unknownOp(String op) {
        ObjectNode env = ErrorNode.MAPPER.createObjectNode();
        AimuxErrorType type = AimuxErrorType.PROTOCOL_UNKNOWN_OP;
        env.put("kind", type.kind());
        env.put("code", type.code());
        env.put("message", "unknown op (the name contains a NUL character)");
        ObjectNode err = env.putObject("error");
        err.put("name", type.errorName());
        err.put("op", op);
        env.put("retryable", false);
        return AimuxDecoder.decode(env, env.toString());
    }
}
