package dev.aimux;

import dev.aimux.errors.AimuxErrorType;

import java.util.Map;
import java.util.Optional;

/**
 * An aimux-shaped node inside a chain (below the root): {@code {kind, code, message, error, cause?}}.
 * Known variants are generated subclasses ({@code APICallCauseException}, …) implementing the
 * variant's interface ({@code APICallError}, …), the same interface the root class implements.
 * Carries no Java stack trace of its own: it is a snapshot of what happened inside the core.
 */
public class AimuxCauseException extends RuntimeException implements AimuxNode {
    private static final long serialVersionUID = 1L;

    private final ErrorNode node;

    public AimuxCauseException(ErrorNode node) {
        super(node.message);
        this.node = node;
    }

    @Override public String kind() { return node.kind; }
    @Override public int code() { return node.code; }
    @Override public String name() { return node.name; }
    @Override public String toJson() { return node.toJson(); }
    @Override public Optional<AimuxErrorType> variant() { return node.variant(); }
    @Override public Map<String, Object> errorFields() { return node.errorFields(); }

    /** A snapshot of what happened inside the core: no Java frames of its own. */
    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }

    @Override
    public String toString() {
        String msg = getLocalizedMessage();
        String head = getClass().getName() + " " + node.describe();
        return msg != null ? head + ": " + msg : head;
    }
}
