package dev.aimux;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A JVM that exits ({@code System.exit}, which runs the C exit handlers) while the core's stream loop is busy ends
 * with its own exit code, every time (DESIGN.md "The host's exit": nothing the core's threads use is torn down by
 * an exit handler; native/tests/test_guest.c {@code exit} proves it deterministically).
 */
class ExitTest {
    /** The child JVM: 20 fast streams, each read up to its first event, then {@code System.exit(7)}. */
    public static void main(String[] args) {
        List<AimuxStream> open = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            AimuxStream s = Aimux.stream("stream_text", """
                    {"model": {"provider": "openai", "modelId": "fault:mode=chunks;n=20000", "baseURL": "%s/v1",
                     "apiKey": "sk-test"}, "prompt": "hi", "maxRetries": 0}
                    """.formatted(args[0]));
            s.next();
            open.add(s); // never closed: the loop keeps filling their queues
        }
        System.exit(open.size() == 20 ? 7 : 3);
    }

    @Test
    void aJvmThatExitsWhileStreamsRunEndsWithItsOwnExitCode() throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        try (FaultServer server = new FaultServer()) {
            for (int round = 0; round < 3; round++) {
                Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
                        "-cp", System.getProperty("java.class.path"),
                        "-Daimux.repo=" + Repo.root(), ExitTest.class.getName(), server.base)
                        .redirectErrorStream(true)
                        .start();
                byte[] out = child.getInputStream().readAllBytes();
                assertTrue(child.waitFor(120, TimeUnit.SECONDS), "round " + round + ": the child JVM did not end");
                assertEquals(7, child.exitValue(),
                        "round " + round + ": " + new String(out, StandardCharsets.UTF_8));
            }
        }
    }
}
