package dev.aimux;

/** What a running {@link Tool} call knows of itself: its id, and whether its stream was cancelled. */
public interface ToolContext {
    /** The {@code toolCallId} of the call. */
    String toolCallId();

    /** The tool's name. */
    String toolName();

    /** True once the stream was cancelled or closed (the thread is interrupted then, too). */
    boolean cancelled();
}
