package dev.aimux;

import dev.aimux.errors.AimuxErrorType;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * A failed aimux call: the decoded root of an error envelope.
 *
 * <p>Every known variant is a generated subclass in {@code dev.aimux.errors} (e.g.
 * {@code RetryException}, {@code APICallException}); an envelope whose kind or code this build does
 * not know decodes to a plain {@code AimuxException} that still keeps {@link #kind()}, {@link #code()}
 * and the raw JSON ({@link #toJson()}).
 *
 * <p>The native cause chain is the standard {@link #getCause()}: {@link AimuxCauseException} for aimux
 * nodes, {@link AimuxSourceException} for snapshots of external exceptions, down to the OS error. For
 * an {@code AI_RetryError} the last attempt is the cause and the earlier attempts are
 * {@linkplain #getSuppressed() suppressed}, so {@code printStackTrace()} shows them all.
 */
public class AimuxException extends RuntimeException implements AimuxNode {
    private static final long serialVersionUID = 1L;

    private final ErrorNode node;
    /** The message shown instead of the core's (a wrong mode's, naming the Java API); null: the core's. */
    private String ownMessage;

    public AimuxException(ErrorNode node) {
        super(node.message);
        this.node = node;
    }

    /** The node's message (for a wrong mode, naming this binding's functions, not the C ABI's). */
    @Override
    public String getMessage() {
        return ownMessage != null ? ownMessage : super.getMessage();
    }

    /**
     * How this binding runs an op of each mode: the C ABI's name the core's wrong-mode message ends with, and the
     * name shown instead (the core cannot know its caller across the C ABI). Code, kind, name and envelope stay.
     */
    private static final Map<String, String[]> OWN_API = Map.of(
            "call", new String[] {"aimux_call", "Aimux.call (typed: Aimux.generateText, Aimux.generateObject)"},
            "stream", new String[] {"aimux_stream", "Aimux.stream (typed: Aimux.streamText)"});

    /** This exception, its message naming the Java API when it is a wrong mode's. */
    AimuxException namingOwnApi() {
        if (code() != AimuxErrorType.PROTOCOL_WRONG_MODE.code()) {
            return this;
        }
        var expected = node.json.path("error").path("expected");
        String[] names = OWN_API.get(expected.isTextual() ? expected.textValue() : "");
        String message = super.getMessage();
        String tail = "; use " + (names == null ? "" : names[0]);
        if (names != null && message != null && message.endsWith(tail)) {
            ownMessage = message.substring(0, message.length() - tail.length()) + "; use " + names[1];
        }
        return this;
    }

    @Override public String kind() { return node.kind; }
    @Override public int code() { return node.code; }
    @Override public String name() { return node.name; }
    /** The whole envelope, exactly as the core produced it. */
    @Override public String toJson() { return node.toJson(); }
    @Override public Optional<AimuxErrorType> variant() { return node.variant(); }
    @Override public Map<String, Object> errorFields() { return node.errorFields(); }

    /** Whether retrying the same call could succeed: the envelope's {@code retryable} as given (CONTRACT §4). */
    public boolean retryable() {
        var r = node.json.get("retryable");
        return r != null && r.isBoolean() && r.booleanValue();
    }

    /**
     * The server's retry hint: the envelope's {@code retryAfterMs} as given (a whole number from 0 to
     * 9223372036854; zero means "retry now"), present only when one was observed.
     */
    public Optional<Duration> retryAfter() {
        var r = ErrorNode.wholeNumber(node.json.get("retryAfterMs"));
        if (r == null || r.signum() < 0 || r.compareTo(java.math.BigInteger.valueOf(ErrorNode.RETRY_AFTER_MAX_MS)) > 0) {
            return Optional.empty();
        }
        return Optional.of(Duration.ofMillis(r.longValue()));
    }

    /**
     * The HTTP status of the failure: the envelope's {@code error.statusCode} (for an {@code AI_RetryError},
     * the core's copy of its last attempt's). Empty when no response was received (a refused connection, a
     * timeout before the headers) or the variant has none.
     */
    public Optional<Long> statusCode() {
        return longField("statusCode");
    }

    @Override
    public String toString() {
        String msg = getLocalizedMessage();
        String head = getClass().getName() + " " + node.describe();
        return msg != null ? head + ": " + msg : head;
    }
}
