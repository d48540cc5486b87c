package dev.aimux;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.aimux.errors.AimuxErrorType;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * {@code bindings/java/decode-chain}: reads one envelope on stdin, decodes it with this binding's
 * decoder, walks {@link Throwable#getCause()} and prints {@code [{"kind","code","name","message"}]}.
 * With {@code --lines} it is long-lived (docs/DESIGN.md "decode-chain"): one envelope per stdin
 * line, one answer line each, {@code {"chain": [...], "root": {"retryable", "retryAfterMs"}}} or
 * {@code {"rejected": {"code", "message"}}} when the decoder refuses the envelope. Needs no native
 * library.
 */
public final class DecodeChain {
    private DecodeChain() {}

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("--lines")) {
            serve();
            return;
        }
        if (args.length > 0) {
            System.err.println("usage: decode-chain [--lines]");
            System.exit(2);
            return;
        }
        String input = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        AimuxException root;
        try {
            root = AimuxDecoder.decode(input);
        } catch (IllegalArgumentException e) {
            System.err.println("decode-chain: " + e.getMessage());
            System.exit(2);
            return;
        }
        byte[] out = (ErrorNode.MAPPER.writeValueAsString(chain(root)) + "\n").getBytes(StandardCharsets.UTF_8);
        PrintStream stdout = System.out;
        stdout.write(out);
        stdout.flush();
    }

    private static void serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream stdout = System.out;
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            stdout.write((ErrorNode.MAPPER.writeValueAsString(answer(line)) + "\n").getBytes(StandardCharsets.UTF_8));
            stdout.flush();
        }
    }

    /** The long-lived mode's answer for one envelope. */
    public static ObjectNode answer(String envelope) {
        ObjectNode out = ErrorNode.MAPPER.createObjectNode();
        AimuxException root;
        try {
            root = AimuxDecoder.decode(envelope);
        } catch (IllegalArgumentException e) {
            ObjectNode rejected = out.putObject("rejected");
            rejected.put("code", AimuxErrorType.BINDING_INVALID_WIRE_JSON.code());
            rejected.put("message", e.getMessage());
            return out;
        }
        out.set("chain", chain(root));
        ObjectNode fields = out.putObject("root");
        fields.put("retryable", root.retryable());
        if (root.retryAfter().isPresent()) {
            fields.put("retryAfterMs", root.retryAfter().get().toMillis());
        } else {
            fields.putNull("retryAfterMs");
        }
        return out;
    }

    /** The native chain as decode-chain prints it. */
    public static ArrayNode chain(Throwable root) {
        ArrayNode arr = ErrorNode.MAPPER.createArrayNode();
        for (Throwable t = root; t != null; t = t.getCause()) {
            ObjectNode link = arr.addObject();
            if (t instanceof AimuxNode n) {
                link.put("kind", n.kind());
                link.put("code", n.code());
                link.put("name", n.name());
                link.put("message", n.getMessage());
            } else if (t instanceof AimuxSourceException s) {
                link.put("kind", "source");
                link.put("code", 0);
                link.put("name", s.type());
                link.put("message", s.getMessage());
            } else {
                link.put("kind", "java");
                link.put("code", 0);
                link.put("name", t.getClass().getName());
                link.put("message", t.getMessage());
            }
        }
        return arr;
    }
}
