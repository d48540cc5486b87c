package dev.aimux;

import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * A running stream op: an {@link Iterator} of {@link StreamEvent}s (also {@link Iterable} once, for
 * for-each) that must be closed.
 *
 * <p>One thread consumes it; {@link #cancel()} and {@link #close()} may be called from any thread, also
 * while the consumer is blocked in {@link #hasNext()}: cancel wakes it and the stream ends. The native
 * handle is freed exactly once: on close, when the stream ends, or (if the owner forgot both) when the
 * stream becomes unreachable.
 *
 * <p>Events are taken from the library several per call ({@code aimux_stream_next_batch}, at most {@link #BATCH})
 * and handed out one by one, each exactly the JSON {@code aimux_stream_next} gives, in the same order. Events taken
 * and not handed out yet are dropped by {@link #cancel()} and {@link #close()} (the stream then ends, as it would
 * reading one event at a time). While it hands out held events, {@link #hasNext()} reads the library
 * ({@code aimux_stream_poll}, one event at most, kept in order) whenever {@link #TOUCH_MILLIS} passed since its last
 * call into it, so the core's idle reaper ({@code AIMUX_STREAM_IDLE_TIMEOUT_MS}) sees a consumer that keeps iterating
 * as reading, as it does one that reads each event from the library.
 */
public final class AimuxStream implements Iterator<StreamEvent>, Iterable<StreamEvent>, AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /** At most this many events per call into the library (the library's queue bound). */
    public static final int BATCH = 1024;
    /** While events are held: a read of the library at least this often (milliseconds). */
    public static final long TOUCH_MILLIS = 100;
    private static final long TOUCH_NANOS = TOUCH_MILLIS * 1_000_000L;

    /** Events per crossing for streams opened from now on; 0 reads one per {@code aimux_stream_next} (tests). */
    static volatile int batchEvents = BATCH;

    /** Holds only the handle, so the Cleaner never keeps the stream reachable. */
    private static final class Free implements Runnable {
        private final long handle;

        Free(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            Native.streamFree(handle);
        }
    }

    private final long handle;
    private final Cleaner.Cleanable cleanable;
    private final Object lock = new Object();
    // guarded by lock
    private boolean freed;
    private boolean inNext;
    private boolean closed;
    private boolean freeWhenIdle;
    private boolean iterated;
    private volatile boolean cancelled;
    // consumer-thread state
    private StreamEvent buffered;
    private boolean ended;
    private final int batch; // events per crossing; 0: one aimux_stream_next per event
    private String held; // the batch being handed out ("[e1,e2,...]") from heldPos, or null
    private int heldPos;
    private final ArrayDeque<String> polled = new ArrayDeque<>(); // events a touch took, after the batch's
    private boolean heldEnded; // no event follows the held ones
    private long lastRead; // System.nanoTime() of the last call into the library

    AimuxStream(long handle) {
        this.handle = handle;
        this.cleanable = CLEANER.register(this, new Free(handle));
        this.batch = Native.batchesLoaded() ? batchEvents : 0;
    }

    /** The native stream handle (for diagnostics). */
    public long handle() {
        return handle;
    }

    /** Blocks until the next event is there or the stream ended. */
    @Override
    public boolean hasNext() {
        if (buffered != null) {
            return true;
        }
        if (ended) {
            return false;
        }
        String json = batch > 0 ? readBatched() : readOne();
        if (json == null) {
            return false;
        }
        buffered = new StreamEvent(json);
        return true;
    }

    /** One event per {@code aimux_stream_next}, or null at the end. */
    private String readOne() {
        synchronized (lock) {
            if (closed || freed) {
                ended = true;
                return null;
            }
            inNext = true;
        }
        String json = null;
        try {
            json = Native.streamNext(handle);
        } catch (RuntimeException e) {
            ended = true;
            throw e;
        } finally {
            synchronized (lock) {
                inNext = false;
                if (json == null) {
                    ended = true;
                    freeWhenIdle = true; // ended (or failed): nothing more to read
                }
                if (freeWhenIdle) {
                    freeLocked();
                }
            }
        }
        return json;
    }

    /** The next event: a held one, else the first of the next batch; null at the end. */
    private String readBatched() {
        if (cancelled) {
            dropHeld(); // a cancel ends the stream at once, as for a read of one event
        }
        if (holding()) {
            synchronized (lock) {
                if (closed || freed) { // closed meanwhile: the held events are not handed out
                    ended = true;
                    dropHeld();
                    return null;
                }
            }
            long now = System.nanoTime();
            if (now - lastRead >= TOUCH_NANOS) {
                touch(now);
            }
            if (holding()) {
                return takeHeld();
            }
        }
        if (heldEnded) {
            end();
            return null;
        }
        Native.Batch b = cross(true, batch);
        if (b == null || b.json() == null) {
            return null; // the end (cross recorded it)
        }
        held = b.json();
        heldPos = 1;
        heldEnded = b.ended();
        return takeHeld();
    }

    /**
     * A read of the library while events are held ({@code aimux_stream_poll}, one event at most, never blocks): the
     * core's reaper counts it. Its event goes after the held ones; its error (the stream is then over) is thrown now,
     * as the next read of one event would have thrown it.
     */
    private void touch(long now) {
        Native.Batch b = cross(false, 1);
        lastRead = now;
        if (b == null) { // closed meanwhile
            dropHeld();
            return;
        }
        String json = b.json();
        if (json != null && json.length() >= 2) {
            polled.add(json.substring(1, json.length() - 1)); // "[ev]" -> ev
        }
        heldEnded |= b.ended();
    }

    /**
     * One call into the library ({@code aimux_stream_next_batch}, or {@code aimux_stream_poll} when not blocking),
     * with the handle kept alive meanwhile (a concurrent close defers the free to its end). Null when the stream was
     * closed; at the end of the stream (a blocking read with no batch) or on an error, the stream is ended and freed.
     */
    private Native.Batch cross(boolean blocking, int max) {
        synchronized (lock) {
            if (closed || freed) {
                ended = true;
                return null;
            }
            inNext = true;
        }
        Native.Batch b = null;
        try {
            b = Native.streamBatch(handle, max, blocking);
        } catch (RuntimeException e) {
            ended = true;
            dropHeld();
            throw e;
        } finally {
            lastRead = System.nanoTime();
            synchronized (lock) {
                inNext = false;
                if (b == null || (blocking && b.json() == null)) {
                    ended = true;
                    freeWhenIdle = true; // ended (or failed): nothing more to read
                }
                if (freeWhenIdle) {
                    freeLocked();
                }
            }
        }
        return b;
    }

    private boolean holding() {
        return held != null || !polled.isEmpty();
    }

    /** The next held event: the rest of the batch first, then what touches took after it. */
    private String takeHeld() {
        String b = held;
        if (b == null) {
            return polled.poll();
        }
        int end = eventEnd(b, heldPos);
        String ev = b.substring(heldPos, end);
        heldPos = end + 1;
        if (heldPos >= b.length()) {
            held = null;
        }
        return ev;
    }

    private void dropHeld() {
        held = null;
        polled.clear();
    }

    /** The stream is over after the held events: ended, and freed. */
    private void end() {
        ended = true;
        synchronized (lock) {
            if (!inNext) {
                freeLocked();
            } else {
                freeWhenIdle = true;
            }
        }
    }

    /**
     * In a batch {@code [e1,e2,...]}, the index of the ',' or ']' that ends the event starting at {@code pos}: depth
     * 0, outside strings (the library's own scanner, so an event's text is exactly what {@code aimux_stream_next}
     * returns).
     */
    static int eventEnd(String b, int pos) {
        int depth = 0;
        int n = b.length();
        for (int i = pos; i < n; i++) {
            char c = b.charAt(i);
            if (c == '"') {
                for (i++; i < n && b.charAt(i) != '"'; i++) {
                    if (b.charAt(i) == '\\') {
                        i++;
                    }
                }
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (depth == 0) {
                    return i;
                }
                depth--;
            } else if (c == ',' && depth == 0) {
                return i;
            }
        }
        return n; // malformed: the rest (never for the library's arrays)
    }

    /** Events taken from the library and not handed out yet (tests). */
    int heldCount() {
        int n = polled.size();
        for (int pos = heldPos; held != null && pos < held.length(); n++) {
            pos = eventEnd(held, pos) + 1;
        }
        return n;
    }

    @Override
    public StreamEvent next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the stream has ended");
        }
        StreamEvent e = buffered;
        buffered = null;
        return e;
    }

    /** This stream, for a single for-each loop. */
    @Override
    public Iterator<StreamEvent> iterator() {
        synchronized (lock) {
            if (iterated) {
                throw new IllegalStateException("an AimuxStream can be iterated once");
            }
            iterated = true;
        }
        return this;
    }

    /**
     * Asks the core to stop the stream ({@code aimux_stream_cancel}); a consumer blocked in
     * {@link #hasNext()} wakes up and the stream ends. Any thread; idempotent.
     */
    public void cancel() {
        cancelled = true;
        synchronized (lock) {
            if (!freed) {
                Native.streamCancel(handle);
            }
        }
    }

    /** Cancels if still running and frees the native stream (once). Any thread; idempotent. */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            if (freed) {
                return;
            }
            if (inNext) {
                Native.streamCancel(handle);
                freeWhenIdle = true; // the consumer frees it when aimux_stream_next returns
            } else {
                freeLocked();
            }
        }
    }

    private void freeLocked() {
        if (!freed) {
            freed = true;
            cleanable.clean(); // runs Free at most once
        }
    }
}
