package dev.aimux;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** 16 threads calling at once. */
class ConcurrencyTest {
    private static final int THREADS = 16;
    private static final ObjectMapper M = new ObjectMapper();

    @Test
    void sixteenThreadsOnTheRecordingCallsStreamsAndErrors() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<String>> results = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                final int n = i;
                results.add(pool.submit(() -> {
                    start.await(30, TimeUnit.SECONDS);
                    StringBuilder sb = new StringBuilder();
                    for (int round = 0; round < 5; round++) {
                        switch ((n + round) % 3) {
                            case 0 -> sb.append(M.readTree(Aimux.call("generate_text", Repo.replayParams())).get("text").asText());
                            case 1 -> {
                                try (AimuxStream s = Aimux.stream("stream_text", Repo.replayParams())) {
                                    while (s.hasNext()) {
                                        s.next().text().ifPresent(sb::append);
                                    }
                                }
                            }
                            default -> {
                                AimuxException e = assertThrows(AimuxException.class, () -> Aimux.call("nope-" + n, "{}"));
                                assertEquals(300, e.code());
                                sb.append("Hello!");
                            }
                        }
                    }
                    return sb.toString();
                }));
            }
            for (Future<String> f : results) {
                assertEquals("Hello!".repeat(5), f.get(120, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The core releases the interpreter lock while it waits on the network: 16 calls overlap (the
     * server answers none of them until all 16 are in flight at once).
     */
    @Test
    void sixteenConcurrentCallsOverlap() throws Exception {
        try (LocalServer server = new LocalServer(LocalServer.Mode.BARRIER_COMPLETION, THREADS)) {
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            try {
                CyclicBarrier start = new CyclicBarrier(THREADS);
                List<Future<String>> results = new ArrayList<>();
                for (int i = 0; i < THREADS; i++) {
                    results.add(pool.submit(() -> {
                        start.await(30, TimeUnit.SECONDS);
                        return M.readTree(Aimux.call("generate_text", server.params(false))).get("text").asText();
                    }));
                }
                for (Future<String> f : results) {
                    // a call that did not overlap the others fails: "barrier not reached"
                    assertEquals("Hi!", f.get(120, TimeUnit.SECONDS));
                }
                assertEquals(THREADS, server.requests.get());
                assertEquals(THREADS, server.maxInFlight.get(), "all calls were in flight at once");
            } finally {
                pool.shutdownNow();
            }
        }
    }
}
