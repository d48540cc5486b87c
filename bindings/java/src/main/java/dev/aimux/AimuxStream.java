package dev.aimux;

import java.lang.ref.Cleaner;
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
 */
public final class AimuxStream implements Iterator<StreamEvent>, Iterable<StreamEvent>, AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

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
    // consumer-thread state
    private StreamEvent buffered;
    private boolean ended;

    AimuxStream(long handle) {
        this.handle = handle;
        this.cleanable = CLEANER.register(this, new Free(handle));
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
        synchronized (lock) {
            if (closed || freed) {
                ended = true;
                return false;
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
        if (json == null) {
            return false;
        }
        buffered = new StreamEvent(json);
        return true;
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
