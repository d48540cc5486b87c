package dev.aimux;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Streams against a local server that stops sending: cancellation and close from another thread. */
class StreamTest {
    private static final Duration LIMIT = Duration.ofSeconds(60); // bounds a broken run, not a speed claim

    @Test
    void cancelFromAnotherThreadWakesABlockedConsumer() throws Exception {
        ScheduledExecutorService other = Executors.newSingleThreadScheduledExecutor(); // not AutoCloseable before JDK 21
        try (LocalServer server = new LocalServer(LocalServer.Mode.STREAM_THEN_HANG, 0)) {
            AimuxStream s = Aimux.stream("stream_text", server.params(true));
            try (s) {
                StreamEvent first = s.next();
                assertEquals("text-delta", first.type());
                assertEquals("Hel", first.text().orElseThrow());
                AtomicBoolean fired = new AtomicBoolean();
                var cancelled = other.schedule(() -> {
                    fired.set(true);
                    s.cancel();
                }, 500, TimeUnit.MILLISECONDS);
                // the server sends nothing more: only the cancel can end this wait
                boolean more = assertTimeoutPreemptively(LIMIT, () -> s.hasNext());
                boolean afterCancel = fired.get();
                cancelled.get(5, TimeUnit.SECONDS);
                assertFalse(more, "a cancelled stream ends");
                assertTrue(afterCancel, "hasNext returned before the cancel");
                assertThrows(NoSuchElementException.class, s::next);
                s.cancel(); // idempotent, also after the end
            }
            s.close(); // idempotent
            s.cancel();
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void closeFromAnotherThreadWhileTheConsumerIsBlocked() throws Exception {
        try (LocalServer server = new LocalServer(LocalServer.Mode.STREAM_THEN_HANG, 0)) {
            AimuxStream s = Aimux.stream("stream_text", server.params(true));
            assertEquals("text-delta", s.next().type());
            CompletableFuture<Boolean> consumer = CompletableFuture.supplyAsync(s::hasNext);
            Thread.sleep(300);
            assertFalse(consumer.isDone(), "the consumer should be blocked on the silent server");
            s.close();
            assertFalse(consumer.get(LIMIT.toSeconds(), TimeUnit.SECONDS));
            assertFalse(s.hasNext());
            s.close();
        }
    }

    @Test
    void aDroppedStreamEndsWithAnErrorEvent() throws Exception {
        try (LocalServer server = new LocalServer(LocalServer.Mode.STREAM_THEN_DROP, 0);
             AimuxStream s = Aimux.stream("stream_text", server.params(true))) {
            assertEquals("text-delta", s.next().type());
            StreamEvent last = assertTimeoutPreemptively(LIMIT, s::next);
            assertEquals("error", last.type(), last.json());
            AimuxException err = last.error().orElseThrow();
            assertEquals("aimux", err.kind());
            assertTrue(err.code() > 0, err.toJson());
            assertFalse(s.hasNext(), "no finish after the error");
        }
    }

    @Test
    void iterableOnlyOnce() {
        try (AimuxStream s = Aimux.stream("stream_text", Repo.replayParams())) {
            int n = 0;
            for (StreamEvent e : s) {
                n++;
            }
            assertEquals(3, n);
            assertThrows(IllegalStateException.class, s::iterator);
        }
    }

    @Test
    void streamsThatAreNeverReadAreStillFreedOnClose() {
        for (int i = 0; i < 50; i++) {
            try (AimuxStream s = Aimux.stream("stream_text", Repo.replayParams())) {
                assertTrue(s.handle() != 0);
            }
        }
    }

    /** After close() the core no longer knows the handle: it was really freed (203 on reuse). */
    @Test
    void closeFreesTheNativeHandle() {
        long handle;
        try (AimuxStream s = Aimux.stream("stream_text", Repo.replayParams())) {
            handle = s.handle();
            assertEquals("text-delta", s.next().type());
        }
        dev.aimux.errors.InvalidHandleException e =
                assertThrows(dev.aimux.errors.InvalidHandleException.class, () -> Native.streamNext(handle));
        assertEquals(203, e.code());
        assertEquals(java.util.Optional.of(handle), e.handle());
    }

    /** A stream its owner forgot to close is freed once it becomes unreachable. */
    @Test
    void aForgottenStreamIsFreedByTheCleaner() throws Exception {
        long handle = openAndForget();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // a bound for a broken run
        while (true) {
            System.gc();
            try {
                Native.streamNext(handle); // still registered: the pending first event, then the rest
            } catch (dev.aimux.errors.InvalidHandleException freed) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "stream " + handle + " was never freed");
            Thread.sleep(50);
        }
    }

    private static long openAndForget() {
        AimuxStream s = Aimux.stream("stream_text", Repo.replayParams());
        return s.handle();
    }
}
