package dev.aimux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

import dev.aimux.errors.AimuxErrorType;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns an error envelope (JSON text) into the native exception with its native cause chain.
 *
 * <p>The chain rule (docs/DESIGN.md): root, then its {@code cause}, and so on; for an
 * {@code AI_RetryError} node (which has no {@code cause}) the next link is the last element of
 * {@code error.errors}, and the earlier attempts are attached with {@link Throwable#addSuppressed}.
 * A node with {@code kind} is an aimux node, one without is a source node. Nodes are looked up by
 * (kind, error.name), then (kind, code); anything unknown decodes to the generic classes.
 *
 * <p>Needs no native library.
 */
public final class AimuxDecoder {
    /** Guard against pathological nesting; the core bounds envelopes to 16 levels. */
    static final int MAX_DEPTH = 256;

    private AimuxDecoder() {}

    /**
     * Decodes an envelope.
     *
     * @throws IllegalArgumentException when {@code envelopeJson} is not a JSON object
     */
    public static AimuxException decode(String envelopeJson) {
        JsonNode root;
        try {
            root = ErrorNode.MAPPER.readTree(envelopeJson);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not an aimux envelope: " + e.getOriginalMessage(), e);
        }
        return decode(root, envelopeJson);
    }

    static AimuxException decode(JsonNode root, String raw) {
        return decodeWithCause(root, raw, null);
    }

    /** Decodes an envelope whose cause is {@code cause} (a host tool's own exception) instead of its chain; null: its chain. */
    static AimuxException decodeWithCause(JsonNode root, String raw, Throwable cause) {
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("not an aimux envelope: expected a JSON object");
        }
        if (!isAimuxNode(root)) {
            throw new IllegalArgumentException("not an aimux envelope: no string 'kind' (a source node is no envelope)");
        }
        AimuxErrorType variant = lookup(root);
        checkRootCode(root, variant);
        ErrorNode node = new ErrorNode(root, raw, variant);
        AimuxException ex = node.variant != null ? node.variant.newException(node) : new AimuxException(node);
        trimInternalFrames(ex);
        if (cause != null) {
            ex.initCause(cause);
        } else {
            link(ex, root, 0);
        }
        return ex;
    }

    /**
     * A root's code must be an integer from 1 to 2147483647 (aimux_error_code is an int32_t), or
     * absent / not a positive integer with an {@code error.name} this build knows, which then
     * supplies it (aimux_ops.wire.envelope.check_root): never a root with code 0.
     */
    private static void checkRootCode(JsonNode root, AimuxErrorType variant) {
        BigInteger whole = ErrorNode.wholeNumber(root.get("code"));
        if (whole != null && whole.compareTo(BigInteger.valueOf(ErrorNode.CODE_MAX)) > 0) {
            throw new IllegalArgumentException("not an aimux envelope: its code is out of range (1..2147483647)");
        }
        if (ErrorNode.wireCode(root.get("code")) < 1) {
            String name = errorName(root);
            if (name == null || variant == null || !name.equals(variant.errorName())) {
                throw new IllegalArgumentException(
                        "not an aimux envelope: no valid 'code' (an integer >= 1) and no known error name");
            }
        }
    }

    private static Throwable decodeLink(JsonNode json, int depth) {
        if (isAimuxNode(json)) {
            ErrorNode node = new ErrorNode(json, null, lookup(json));
            AimuxCauseException ex = node.variant != null ? node.variant.newCause(node) : new AimuxCauseException(node);
            link(ex, json, depth);
            return ex;
        }
        AimuxSourceException ex = new AimuxSourceException(json);
        link(ex, json, depth);
        return ex;
    }

    /** An aimux node has a (string) {@code kind}; anything else is a source node. */
    static boolean isAimuxNode(JsonNode json) {
        JsonNode kind = json.get("kind");
        return kind != null && kind.isTextual();
    }

    /**
     * Attaches the next link: {@code cause} when it is an object, else, for an {@code AI_RetryError}
     * node, the last attempt (the earlier attempts become suppressed exceptions).
     */
    private static void link(Throwable ex, JsonNode json, int depth) {
        if (depth + 1 >= MAX_DEPTH) {
            return;
        }
        JsonNode cause = json.get("cause");
        if (cause != null && cause.isObject()) {
            ex.initCause(decodeLink(cause, depth + 1));
            return;
        }
        if (isAimuxNode(json) && RETRY_NAME.equals(errorName(json))) {
            JsonNode attempts = json.get("error").get("errors");
            if (attempts != null && attempts.isArray()) {
                List<JsonNode> objs = new ArrayList<>();
                attempts.forEach(a -> {
                    if (a.isObject()) {
                        objs.add(a);
                    }
                });
                if (!objs.isEmpty()) {
                    int last = objs.size() - 1;
                    ex.initCause(decodeLink(objs.get(last), depth + 1));
                    for (int i = 0; i < last; i++) {
                        ex.addSuppressed(decodeLink(objs.get(i), depth + 1));
                    }
                }
            }
        }
    }

    private static final java.util.Set<String> INTERNAL = java.util.Set.of(
            "dev.aimux.AimuxDecoder", "dev.aimux.Native", "dev.aimux.Envelopes", "dev.aimux.ErrorNode",
            "dev.aimux.AimuxException", "dev.aimux.errors.AimuxErrorType");

    /** The root's trace starts where the user's call entered the binding, not inside the decoder. */
    private static void trimInternalFrames(Throwable ex) {
        StackTraceElement[] st = ex.getStackTrace();
        int i = 0;
        while (i < st.length - 1 && (INTERNAL.contains(st[i].getClassName())
                || st[i].getClassName().startsWith("dev.aimux.errors."))) {
            i++;
        }
        if (i > 0) {
            ex.setStackTrace(java.util.Arrays.copyOfRange(st, i, st.length));
        }
    }

    static final String RETRY_NAME = AimuxErrorType.AIMUX_RETRY.errorName();

    static String errorName(JsonNode json) {
        JsonNode err = json.get("error");
        return err != null && err.isObject() ? ErrorNode.text(err.get("name")) : null;
    }

    /**
     * (kind, error.name), then (kind, code) when the node has no name. A name this build does not
     * know is a newer variant, even when its code is known: it decodes to the generic classes.
     */
    private static AimuxErrorType lookup(JsonNode json) {
        String kind = ErrorNode.text(json.get("kind"));
        String name = errorName(json);
        AimuxErrorType t = AimuxErrorType.lookup(kind, name, ErrorNode.wireCode(json.get("code"))).orElse(null);
        if (t != null && name != null && !name.equals(t.errorName())) {
            return null;
        }
        return t;
    }
}
