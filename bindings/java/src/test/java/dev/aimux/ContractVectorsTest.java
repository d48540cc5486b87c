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
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every vector of contract-tests/vectors, decoded in-process; and a few through bindings/java/decode-chain. */
class ContractVectorsTest {
    private static final ObjectMapper M = new ObjectMapper();

    @TestFactory
    List<DynamicTest> everyVectorDecodesToItsChain() throws Exception {
        List<Path> vectors = Repo.vectors();
        assertTrue(vectors.size() >= 20, "expected the shared vectors, found " + vectors.size());
        return vectors.stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> {
            JsonNode doc = M.readTree(Files.readString(p));
            String envelope = M.writeValueAsString(doc.get("envelope"));
            AimuxException e = AimuxDecoder.decode(envelope);
            assertEquals(doc.get("chain"), DecodeChain.chain(e), p.getFileName() + ": " + doc.path("description").asText());
            // The root keeps the envelope exactly; known variants decode to their generated class.
            assertEquals(envelope, e.toJson());
            e.variant().ifPresent(v -> assertTrue(v.nodeInterface().isInstance(e), v + " vs " + e.getClass()));
        })).toList();
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
