package dev.aimux;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * {@code bindings/java/decode-chain}: reads one envelope on stdin, decodes it with this binding's
 * decoder, walks {@link Throwable#getCause()} and prints {@code [{"kind","code","name","message"}]}.
 * Needs no native library.
 */
public final class DecodeChain {
    private DecodeChain() {}

    public static void main(String[] args) throws IOException {
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
