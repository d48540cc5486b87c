package dev.aimux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A stream with host tools ({@link Aimux#stream(String, String, Map)}): an {@link AimuxStream} whose
 * {@code tool-call} events of the given tools start each call on its own virtual thread (a platform thread before JDK 21) as the event is
 * handed out (a step's calls run concurrently); each outcome is answered to the stream through
 * {@code aimux_stream_tool_result}. {@link #cancel()} and {@link #close()} (and the end of the stream)
 * interrupt every running call. An {@code error} event of a tool's failure decodes
 * ({@link StreamEvent#error()}) to the {@code ToolExecutionError} whose cause is the very exception thrown.
 */
public final class ToolStream implements Iterator<StreamEvent>, Iterable<StreamEvent>, AutoCloseable {
    /** At most this many nodes of a thrown exception's cause chain go into the failure node. */
    static final int MAX_DEPTH = 16;

    private final AimuxStream stream;
    private final Map<String, Tool> tools;
    private final ExecutorService executor = newExecutor();
    private final Map<String, Future<?>> running = new ConcurrentHashMap<>();
    private final Map<String, Throwable> raised = new ConcurrentHashMap<>();
    private volatile boolean stopped;

    ToolStream(AimuxStream stream, Map<String, Tool> tools) {
        this.stream = stream;
        this.tools = Map.copyOf(tools);
    }

    /** The native stream handle (for diagnostics). */
    public long handle() {
        return stream.handle();
    }

    @Override
    public boolean hasNext() {
        boolean more = stream.hasNext();
        if (!more) {
            stopTools();
        }
        return more;
    }

    @Override
    public StreamEvent next() {
        StreamEvent event = stream.next();
        String type = event.type();
        if ("tool-call".equals(type)) {
            start(event.node());
        } else if ("error".equals(type)) {
            attachOriginal(event);
        }
        return event;
    }

    @Override
    public Iterator<StreamEvent> iterator() {
        return this;
    }

    /** Cancels the stream and interrupts every running call (any thread). */
    public void cancel() {
        stopTools();
        stream.cancel();
    }

    @Override
    public void close() {
        stopTools();
        stream.close();
    }

    /** A virtual thread per task (JDK 21+), else a daemon platform thread per task (JDK 17). */
    private static ExecutorService newExecutor() {
        try {
            return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (ReflectiveOperationException noVirtualThreads) {
            return Executors.newCachedThreadPool(task -> {
                Thread t = new Thread(task, "aimux-tool");
                t.setDaemon(true);
                return t;
            });
        }
    }

    private void start(JsonNode call) {
        String name = ErrorNode.text(call.get("toolName"));
        String id = ErrorNode.text(call.get("toolCallId"));
        JsonNode invalid = call.get("invalid");
        Tool tool = name == null ? null : tools.get(name);
        if (tool == null || id == null || (invalid != null && invalid.asBoolean()) || stopped) {
            return;
        }
        JsonNode input = call.has("input") ? call.get("input") : ErrorNode.MAPPER.nullNode();
        ToolContext ctx = new ToolContext() {
            @Override public String toolCallId() {
                return id;
            }

            @Override public String toolName() {
                return name;
            }

            @Override public boolean cancelled() {
                return stopped;
            }
        };
        running.put(id, executor.submit(() -> {
            String answer = run(tool, input, ctx);
            running.remove(id);
            if (!stopped) {
                try {
                    Native.streamToolResult(stream.handle(), id, answer);
                } catch (AimuxException refused) {
                    // an answer the stream no longer takes (cancelled, freed) is nobody's: dropped
                }
            }
        }));
    }

    private String run(Tool tool, JsonNode input, ToolContext ctx) {
        Object value;
        try {
            value = tool.execute(input, ctx);
        } catch (Throwable t) {
            raised.put(ctx.toolCallId(), t);
            return failureAnswer(t);
        }
        if (value instanceof ToolResult r) {
            return r.answerJson();
        }
        try {
            ObjectNode answer = ErrorNode.MAPPER.createObjectNode();
            answer.set("output", ErrorNode.MAPPER.valueToTree(value));
            return ErrorNode.MAPPER.writeValueAsString(answer);
        } catch (IllegalArgumentException | JsonProcessingException e) {
            IllegalArgumentException t = new IllegalArgumentException("the tool's value cannot be serialised to JSON", e);
            raised.put(ctx.toolCallId(), t);
            return failureAnswer(t);
        }
    }

    /** {@code {"failure": {message, type, cause?}}} of a thrown exception and its cause chain. */
    static String failureAnswer(Throwable thrown) {
        ObjectNode answer = ErrorNode.MAPPER.createObjectNode();
        ObjectNode node = answer.putObject("failure");
        Throwable t = thrown;
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int depth = 1;; depth++) {
            seen.add(t);
            node.put("message", t.getMessage() != null ? t.getMessage() : t.getClass().getName());
            node.put("type", t.getClass().getName());
            Throwable next = t.getCause();
            if (next == null || seen.contains(next) || depth >= MAX_DEPTH) {
                return answer.toString();
            }
            node = node.putObject("cause");
            t = next;
        }
    }

    /** A tool's failure (code 22): its decoded error gets the very exception the tool threw as its cause. */
    private void attachOriginal(StreamEvent event) {
        JsonNode env = event.node().get("error");
        if (env == null || !env.isObject() || env.path("code").asInt() != 22) {
            return;
        }
        Throwable original = raised.get(env.path("error").path("toolCallId").asText(""));
        if (original != null) {
            event.hostError = AimuxDecoder.decodeWithCause(env, env.toString(), original);
        }
    }

    private void stopTools() {
        if (stopped) {
            return;
        }
        stopped = true;
        running.values().forEach(f -> f.cancel(true));
        executor.shutdownNow();
    }
}
