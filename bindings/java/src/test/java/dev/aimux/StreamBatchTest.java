package dev.aimux;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An {@link AimuxStream} reads batches ({@code aimux_stream_next_batch}) and hands out one event at a time: the same
 * events, byte for byte and in order, as one {@code aimux_stream_next} per event, against the project's
 * fault-injecting server (tests/fault_server.py). No duration is asserted.
 */
class StreamBatchTest {
    private static FaultServer server;

    @BeforeAll
    static void start() throws IOException {
        server = new FaultServer();
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** n one-character pieces full of what a batch splitter can trip on (no ';' or '=': the spec's separators). */
    static String trickyText(int n) {
        String[] pieces = {",", "]", "}", "\"", "\\", "[", "{", "a", "é"};
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(pieces[i % pieces.length]);
        }
        return b.toString();
    }

    /** Every event through the binding (batches). */
    static List<StreamEvent> batched(String params) {
        List<StreamEvent> out = new ArrayList<>();
        try (AimuxStream s = Aimux.stream("stream_text", params)) {
            for (StreamEvent e : s) {
                out.add(e);
            }
            assertFalse(s.hasNext());
        }
        return out;
    }

    /** Every event through the C ABI, one aimux_stream_next per event. */
    static List<String> perEvent(String params) {
        List<String> out = new ArrayList<>();
        long h = Native.stream("stream_text", params);
        try {
            for (String ev = Native.streamNext(h); ev != null; ev = Native.streamNext(h)) {
                out.add(ev);
            }
        } finally {
            Native.streamFree(h);
        }
        return out;
    }

    static List<String> jsons(List<StreamEvent> events) {
        return events.stream().map(StreamEvent::json).toList();
    }

    /** The events with the response's Date header blanked (two requests a second apart differ there). */
    static List<String> undated(List<String> events) {
        return events.stream().map(e -> e.replaceAll("\"date\":\"[^\"]*\"", "\"date\":\"\"")).toList();
    }

    /** The first index where the two lists differ (-1: equal): a short failure message. */
    static int firstDifference(List<String> a, List<String> b) {
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            if (!a.get(i).equals(b.get(i))) {
                return i;
            }
        }
        return a.size() == b.size() ? -1 : Math.min(a.size(), b.size());
    }

    @Test
    void manyEventsAsPerEventReads() {
        assertTrue(Native.batchesLoaded(), "the library has aimux_stream_next_batch");
        String text = trickyText(1500);
        String params = server.params("mode=ok;parts=1500;text=" + text);
        List<StreamEvent> got = batched(params);
        List<String> want = perEvent(params);
        assertEquals(1501, got.size(), "1,500 deltas and the finish");
        assertEquals(-1, firstDifference(undated(want), undated(jsons(got)))); // byte for byte, in order
        StringBuilder joined = new StringBuilder();
        for (StreamEvent e : got) {
            e.text().ifPresent(joined::append);
        }
        assertEquals(text, joined.toString());
        assertEquals("finish", got.get(1500).type());
    }

    @Test
    void thePerEventPathGivesTheSame() {
        String params = server.params("mode=ok;parts=300;text=" + trickyText(300));
        int saved = AimuxStream.batchEvents;
        AimuxStream.batchEvents = 0;
        List<StreamEvent> got;
        try {
            got = batched(params);
        } finally {
            AimuxStream.batchEvents = saved;
        }
        assertEquals(-1, firstDifference(undated(jsons(batched(params))), undated(jsons(got))));
        assertEquals(301, got.size());
    }

    @Test
    void moreThanOneBatchInOrder() {
        // 5,000 deltas at once, 256 to a server write: batches of many events, more than one crossing takes at most
        try (AimuxStream s = Aimux.stream("stream_text", server.params("mode=chunks;n=5000"))) {
            int n = 0;
            int mostHeld = 0;
            StreamEvent last = null;
            while (s.hasNext()) {
                last = s.next();
                if ("text-delta".equals(last.type())) {
                    assertEquals("{\"type\":\"text-delta\",\"text\":\"w" + n + " \"}", last.json());
                    n++;
                }
                mostHeld = Math.max(mostHeld, s.heldCount());
            }
            assertEquals(5000, n);
            assertEquals("finish", last.type());
            assertTrue(mostHeld > 0 && mostHeld < AimuxStream.BATCH, "held at most " + mostHeld);
        }
    }

    @Test
    void errorMidStreamAsPerEventReads() {
        String params = server.params("mode=errframe;parts=1500;after=1200;text=" + trickyText(1500));
        List<StreamEvent> got = batched(params);
        List<String> want = perEvent(params);
        assertEquals(1201, got.size(), "1,200 deltas, then the terminal error event");
        assertEquals(-1, firstDifference(undated(want), undated(jsons(got))));
        AimuxException err = got.get(1200).error().orElseThrow();
        AimuxException wantErr = new StreamEvent(want.get(1200)).error().orElseThrow();
        assertEquals(11, err.code());
        // the same chain, node by node
        Throwable a = err;
        Throwable b = wantErr;
        for (; a != null && b != null; a = a.getCause(), b = b.getCause()) {
            assertEquals(b.getClass(), a.getClass());
            assertEquals(b.getMessage(), a.getMessage());
        }
        assertEquals(null, a);
        assertEquals(null, b);
    }

    /** A stream whose server sent 600 deltas and stalls, read until it holds events it has not handed out. */
    static AimuxStream heldStream(String spec) throws Exception {
        AimuxStream s = Aimux.stream("stream_text", server.params(spec));
        assertTrue(server.saw("stall", spec), "all 600 deltas were sent");
        for (int i = 0; s.heldCount() == 0 && i < 600; i++) {
            assertEquals("text-delta", s.next().type());
        }
        assertTrue(s.heldCount() > 0, "never more than one event per crossing");
        return s;
    }

    @Test
    void cancelMidBatchDropsHeldEvents() throws Exception {
        String spec = "mode=stall;parts=600;after=600;stall_ms=60000;text=cancel" + "c".repeat(594);
        try (AimuxStream s = heldStream(spec)) {
            Thread other = new Thread(s::cancel); // from another thread
            other.start();
            other.join();
            assertFalse(s.hasNext(), "a held event after cancel");
            assertEquals(0, s.heldCount());
            assertThrows(NoSuchElementException.class, s::next);
        }
        assertTrue(server.saw("gone", spec), "the stream's connection was closed");
    }

    @Test
    void closeMidBatchFreesTheStream() throws Exception {
        String spec = "mode=stall;parts=600;after=600;stall_ms=60000;text=close" + "c".repeat(595);
        AimuxStream s = heldStream(spec);
        long handle = s.handle();
        Thread other = new Thread(s::close);
        other.start();
        other.join();
        assertFalse(s.hasNext(), "a held event after close");
        assertEquals(0, s.heldCount());
        assertThrows(dev.aimux.errors.InvalidHandleException.class, () -> Native.streamNext(handle));
        assertTrue(server.saw("gone", spec));
    }

    /**
     * A consumer that keeps iterating while it works through held events is a reader: the core's idle reaper must
     * not close its stream, as it would not with one read per event. Runs in a child JVM
     * ({@code AIMUX_STREAM_IDLE_TIMEOUT_MS} is read once per process).
     */
    @Test
    void heldEventsCountAsReadsForTheReaper() throws Exception {
        String spec = "mode=stall;parts=40;after=40;stall_ms=60000;text=reaper" + "r".repeat(34);
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), ReaperChild.class.getName(), server.params(spec));
        pb.environment().put("AIMUX_STREAM_IDLE_TIMEOUT_MS", "1500");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("not reaped"), out);
    }

    /** The child of {@link #heldEventsCountAsReadsForTheReaper()}. */
    static final class ReaperChild {
        private ReaperChild() {}

        public static void main(String[] args) throws Exception {
            // 40 deltas, then the server stalls; ~60 ms of work per event holds a batch longer than the 1,500 ms
            // limit (read at once: the limit counts from the open, a wait here would be a real idle time)
            int mostHeld = 0;
            try (AimuxStream s = Aimux.stream("stream_text", args[0])) {
                for (int i = 0; i < 40; i++) {
                    StreamEvent e = s.next();
                    if (!"text-delta".equals(e.type())) {
                        System.out.println("after " + i + " deltas: " + e.json());
                        System.exit(1);
                    }
                    mostHeld = Math.max(mostHeld, s.heldCount());
                    Thread.sleep(60); // the consumer's work
                }
                if (mostHeld == 0) {
                    System.out.println("never more than one event per crossing");
                    System.exit(1);
                }
                // a read now finds the stream open, waiting for the stalled server (a reaped one answers the
                // reaper's terminal error event)
                Native.Batch b = Native.streamBatch(s.handle(), 1, false);
                if (b.json() != null || b.ended()) {
                    System.out.println("reaped: " + b);
                    System.exit(1);
                }
            }
            System.out.println("not reaped");
            System.exit(0);
        }
    }
}
