package dev.aimux;

import dev.aimux.types.ErrorEvent;
import dev.aimux.types.StreamTextEvent;

import java.util.Iterator;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A running {@code stream_text} ({@link Aimux#streamText}): its events typed
 * ({@link StreamTextEvent}, a sealed interface: {@code TextDeltaEvent}, {@code FinishEvent},
 * {@code ErrorEvent} whose {@code error()} is the decoded exception, ... and {@code Unknown} for a
 * type a newer core sends). Iterate it once, or take {@link #stream()}; close it (try-with-resources):
 * closing early cancels the call. {@link #cancel()} works from any thread.
 */
public final class TextStream implements Iterator<StreamTextEvent>, Iterable<StreamTextEvent>, AutoCloseable {
    private final Iterator<StreamEvent> events;
    private final Runnable cancel;
    private final AutoCloseable closer;

    TextStream(AimuxStream s) {
        this(s, s::cancel, s);
    }

    TextStream(ToolStream s) {
        this(s, s::cancel, s);
    }

    private TextStream(Iterator<StreamEvent> events, Runnable cancel, AutoCloseable closer) {
        this.events = events;
        this.cancel = cancel;
        this.closer = closer;
    }

    @Override
    public boolean hasNext() {
        return events.hasNext();
    }

    @Override
    public StreamTextEvent next() {
        StreamEvent event = events.next();
        // a host tool's failure: the decoded error caused by the very exception the tool threw
        AimuxException hostError = event.hostError;
        if (hostError != null && "error".equals(event.type())) {
            return ErrorEvent.fromJson(event.node(), hostError);
        }
        return StreamTextEvent.fromJson(event.node());
    }

    /** This stream itself (it is iterated once). */
    @Override
    public Iterator<StreamTextEvent> iterator() {
        return this;
    }

    /** The events as a sequential {@link Stream}; closing it closes this. */
    public Stream<StreamTextEvent> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(this, Spliterator.ORDERED | Spliterator.NONNULL), false)
                .onClose(this::close);
    }

    /** Ends the call: the stream's last event is an {@code AbortedError} error event. Any thread. */
    public void cancel() {
        cancel.run();
    }

    @Override
    public void close() {
        try {
            closer.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
