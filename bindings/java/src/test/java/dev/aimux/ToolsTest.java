package dev.aimux;

import com.sun.net.httpserver.HttpServer;
import dev.aimux.types.ErrorEvent;
import dev.aimux.types.StreamTextEvent;
import dev.aimux.types.StreamTextParams;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Host tools in Java's idiom against a local HTTP server speaking OpenAI's streamed Chat Completions:
 * every answer is one call of {@code weather}; what it was asked is counted.
 */
class ToolsTest {
    private static final String SSE = String.join("", java.util.List.of(
            "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\","
                    + "\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]}}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n",
            "data: [DONE]\n\n"));

    private HttpServer server;
    private final AtomicInteger requests = new AtomicInteger();
    private String params;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            requests.incrementAndGet();
            byte[] body = SSE.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("content-type", "text/event-stream");
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        server.start();
        params = "{\"model\":{\"provider\":\"openai\",\"modelId\":\"m\",\"baseURL\":\"http://127.0.0.1:" + server.getAddress().getPort()
                + "/v1\",\"apiKey\":\"k\"},\"prompt\":\"What is the weather?\",\"tools\":{\"weather\":{\"description\":\"The weather.\","
                + "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}},\"stopWhen\":{\"stepCount\":5},"
                + "\"maxRetries\":0}";
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    /** A tool that blocks until interrupted; {@code interrupted} counts down when it saw it. */
    static Tool blocking(CountDownLatch started, CountDownLatch interrupted, AtomicBoolean sawCancelled) {
        return (input, ctx) -> {
            started.countDown();
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                sawCancelled.set(ctx.cancelled());
                interrupted.countDown();
                throw e;
            }
            return "never";
        };
    }

    @Test
    void closingTheStreamWhileAToolRunsInterruptsIt() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        AtomicBoolean sawCancelled = new AtomicBoolean();
        try (ToolStream s = Aimux.stream("stream_text", params, Map.of("weather", blocking(started, interrupted, sawCancelled)))) {
            while (s.hasNext()) {
                if ("tool-call".equals(s.next().type())) {
                    break;
                }
            }
            assertTrue(started.await(30, TimeUnit.SECONDS));
        }
        assertTrue(interrupted.await(30, TimeUnit.SECONDS), "the running tool was never interrupted");
        assertTrue(sawCancelled.get());
        assertEquals(1, requests.get(), "the model was asked again");
    }

    @Test
    void cancelFromAnotherThreadEndsTheStreamAndInterruptsTheTool() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        try (ToolStream s = Aimux.stream("stream_text", params, Map.of("weather", blocking(started, interrupted, new AtomicBoolean())))) {
            new Thread(() -> {
                try {
                    started.await();
                } catch (InterruptedException e) {
                    return;
                }
                s.cancel();
            }).start();
            int after = 0;
            boolean sawCall = false;
            for (StreamEvent e : s) {
                sawCall |= "tool-call".equals(e.type());
                after += sawCall && !"tool-call".equals(e.type()) ? 1 : 0;
            }
            assertTrue(sawCall);
            assertEquals(0, after, "events after the cancel");
            assertFalse(s.hasNext());
        }
        assertTrue(interrupted.await(30, TimeUnit.SECONDS));
        assertEquals(1, requests.get());
    }

    @Test
    void aThrownExceptionReachesTheCallerAsItsVeryCause() {
        IOException root = new IOException("disk quota exceeded");
        UncheckedIOException thrown = new UncheckedIOException("cannot save the forecast", root);
        AimuxException e = assertThrows(AimuxException.class,
                () -> Aimux.call("generate_text", params, Map.of("weather", (input, ctx) -> {
                    throw thrown;
                })));
        assertEquals(22, e.code());
        assertEquals("AI_ToolExecutionError", e.name());
        assertEquals("t1", e.errorFields().get("toolCallId"));
        assertSame(thrown, e.getCause());
        assertSame(root, e.getCause().getCause());
        assertTrue(e.getMessage().contains("cannot save the forecast"), e.getMessage());
        assertEquals(1, requests.get(), "the model saw it");
    }

    @Test
    void aTypedStreamsErrorEventIsCausedByTheVeryExceptionThrown() {
        IOException root = new IOException("disk quota exceeded");
        UncheckedIOException thrown = new UncheckedIOException("cannot save the forecast", root);
        AimuxException error = null;
        try (TextStream s = Aimux.streamText(StreamTextParams.fromJson(params), Map.of("weather", (input, ctx) -> {
            throw thrown;
        }))) {
            for (StreamTextEvent event : s) {
                if (event instanceof ErrorEvent e) {
                    error = e.error();
                    assertSame(error, e._error().value().orElseThrow());
                }
            }
        }
        assertTrue(error != null, "no error event");
        assertEquals(22, error.code());
        assertEquals("AI_ToolExecutionError", error.name());
        assertSame(thrown, error.getCause());
        assertSame(root, error.getCause().getCause());
    }

    @Test
    void theFailureNodeCarriesTheChain() {
        String answer = ToolStream.failureAnswer(new IllegalStateException("outer", new IOException("inner")));
        assertEquals("{\"failure\":{\"message\":\"outer\",\"type\":\"java.lang.IllegalStateException\","
                + "\"cause\":{\"message\":\"inner\",\"type\":\"java.io.IOException\"}}}", answer);
        assertEquals("{\"error\":{\"message\":\"no city\",\"data\":{\"n\":1}}}", ToolResult.errorWithData("no city", Map.of("n", 1)).answerJson());
        assertEquals("{\"error\":{\"message\":\"no city\"}}", ToolResult.error("no city").answerJson());
    }

    @Test
    void hostToolsOnlyWithGenerateText() {
        AimuxException e = assertThrows(AimuxException.class, () -> Aimux.call("generate_object", "{}", Map.of("weather", (i, c) -> 1)));
        assertEquals(8, e.code());
        AimuxException bad = assertThrows(AimuxException.class, () -> Aimux.stream("stream_text", "[1]", Map.of("weather", (i, c) -> 1)));
        assertEquals(202, bad.code());
    }
}
