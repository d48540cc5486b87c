package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every vector of contract-tests/vectors, decoded in-process; and a few through bindings/java/decode-chain. */
class ContractVectorsTest {
    private static final ObjectMapper M = new ObjectMapper();

    /** The envelope as the vector runner sends it (its exact text when the vector has one). */
    static String wire(JsonNode doc) throws Exception {
        JsonNode text = doc.get("envelopeText");
        return text != null ? text.textValue() : M.writeValueAsString(doc.get("envelope"));
    }

    @TestFactory
    List<DynamicTest> everyVectorDecodesToItsChain() throws Exception {
        List<Path> vectors = Repo.vectors();
        assertTrue(vectors.size() >= 20, "expected the shared vectors, found " + vectors.size());
        return vectors.stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> {
            JsonNode doc = M.readTree(Files.readString(p));
            String envelope = wire(doc);
            String what = p.getFileName() + ": " + doc.path("description").asText();
            if (doc.has("rejected")) {
                assertThrows(IllegalArgumentException.class, () -> AimuxDecoder.decode(envelope), what);
                assertEquals(doc.get("rejected").asInt(), DecodeChain.answer(envelope).path("rejected").path("code").asInt(), what);
                return;
            }
            AimuxException e = AimuxDecoder.decode(envelope);
            assertEquals(doc.get("chain"), DecodeChain.chain(e), what);
            // The root's own retryable / retryAfterMs, as given (CONTRACT §4).
            assertEquals(doc.get("root"), M.readTree(DecodeChain.answer(envelope).get("root").toString()), what);
            // The root keeps the envelope exactly; known variants decode to their generated class.
            assertEquals(envelope, e.toJson());
            e.variant().ifPresent(v -> assertTrue(v.nodeInterface().isInstance(e), v + " vs " + e.getClass()));
        })).toList();
    }

    /** The long-lived mode: one process answers every vector, one line each. */
    @Test
    void decodeChainLinesMode() throws Exception {
        List<Path> vectors = Repo.vectors();
        Process proc = new ProcessBuilder(Repo.path("bindings/java/decode-chain").toString(), "--lines")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        StringBuilder in = new StringBuilder();
        List<JsonNode> docs = new java.util.ArrayList<>();
        for (Path p : vectors) {
            JsonNode doc = M.readTree(Files.readString(p));
            docs.add(doc);
            in.append(wire(doc)).append('\n');
        }
        proc.getOutputStream().write(in.toString().getBytes(StandardCharsets.UTF_8));
        proc.getOutputStream().close();
        String[] lines = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8).split("\n");
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, proc.exitValue());
        assertEquals(docs.size(), lines.length);
        for (int i = 0; i < lines.length; i++) {
            JsonNode got = M.readTree(lines[i]), doc = docs.get(i);
            if (doc.has("rejected")) {
                assertEquals(doc.get("rejected").asInt(), got.path("rejected").path("code").asInt(), vectors.get(i).toString());
            } else {
                assertEquals(doc.get("chain"), got.get("chain"), vectors.get(i).toString());
                assertEquals(doc.get("root"), got.get("root"), vectors.get(i).toString());
            }
        }
    }

    /** The executable the lead's run_decode_chain.py drives, on a retry chain and an unknown kind. */
    @Test
    void decodeChainExecutable() throws Exception {
        Path exe = Repo.path("bindings/java/decode-chain");
        for (String name : List.of("transport-retry-connection-refused.json", "unknown-kind.json")) {
            JsonNode doc = M.readTree(Files.readString(Repo.path("contract-tests/vectors/" + name)));
            Process proc = new ProcessBuilder(exe.toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            proc.getOutputStream().write(M.writeValueAsBytes(doc.get("envelope")));
            proc.getOutputStream().close();
            String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, proc.exitValue(), name);
            assertEquals(doc.get("chain"), M.readTree(out), name);
        }
    }

    @Test
    void decodeChainRejectsNonEnvelopes() throws Exception {
        Process proc = new ProcessBuilder(Repo.path("bindings/java/decode-chain").toString()).start();
        proc.getOutputStream().write("[1,2]".getBytes(StandardCharsets.UTF_8));
        proc.getOutputStream().close();
        proc.getInputStream().readAllBytes();
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(2, proc.exitValue());
    }
}
