package dev.aimux;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tiny OpenAI-compatible Chat Completions server on 127.0.0.1 (an ephemeral port) for the stream
 * and concurrency tests: real HTTP, real sockets, bounded in time. No test measures a duration: a
 * test relies on what the server saw (a barrier of N requests in flight at once).
 */
final class LocalServer implements AutoCloseable {
    enum Mode {
        /** Streams one text delta, then holds the connection open until released (or 30 s). */
        STREAM_THEN_HANG,
        /** Streams one text delta, then closes the connection without the terminal event. */
        STREAM_THEN_DROP,
        /**
         * Answers a non-streaming completion once {@code parties} requests are in flight at once;
         * when they never are (calls that do not overlap), 409 "barrier not reached" after 60 s.
         */
        BARRIER_COMPLETION
    }

    final HttpServer server;
    final Mode mode;
    final int parties;
    final CyclicBarrier barrier;
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger maxInFlight = new AtomicInteger();

    LocalServer(Mode mode, int parties) throws IOException {
        this.mode = mode;
        this.parties = parties;
        this.barrier = parties > 0 ? new CyclicBarrier(parties) : null;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.setExecutor(Executors.newFixedThreadPool(20));
        server.createContext("/v1/chat/completions", this::handle);
        server.start();
    }

    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1";
    }

    String params(boolean stream) {
        return """
                {"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "%s", "apiKey": "sk-local"},
                 "prompt": "Say hello in one word.", "maxRetries": 0}
                """.formatted(baseUrl());
    }

    private static final String CHUNK = "data: {\"id\":\"chatcmpl-local\",\"object\":\"chat.completion.chunk\",\"created\":0,"
            + "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},"
            + "\"finish_reason\":null}]}\n\n";

    private static final String COMPLETION = "{\"id\":\"chatcmpl-local\",\"object\":\"chat.completion\",\"created\":0,"
            + "\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi!\"},"
            + "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}";

    private void handle(HttpExchange ex) throws IOException {
        requests.incrementAndGet();
        int now = inFlight.incrementAndGet();
        maxInFlight.accumulateAndGet(now, Math::max);
        try (ex) {
            ex.getRequestBody().readAllBytes();
            switch (mode) {
                case BARRIER_COMPLETION -> {
                    int status = 200;
                    byte[] body = COMPLETION.getBytes(StandardCharsets.UTF_8);
                    try {
                        barrier.await(60, TimeUnit.SECONDS);
                    } catch (TimeoutException | BrokenBarrierException e) {
                        status = 409;
                        body = ("{\"error\":{\"message\":\"barrier not reached: " + inFlight.get()
                                + " of " + parties + " calls in flight together\",\"type\":\"invalid_request_error\"}}")
                                .getBytes(StandardCharsets.UTF_8);
                    }
                    ex.getResponseHeaders().add("content-type", "application/json");
                    ex.sendResponseHeaders(status, body.length);
                    ex.getResponseBody().write(body);
                }
                case STREAM_THEN_HANG, STREAM_THEN_DROP -> {
                    ex.getResponseHeaders().add("content-type", "text/event-stream");
                    ex.sendResponseHeaders(200, 0);
                    OutputStream out = ex.getResponseBody();
                    out.write(CHUNK.getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    if (mode == Mode.STREAM_THEN_HANG) {
                        release.await(30, TimeUnit.SECONDS);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            inFlight.decrementAndGet();
        }
    }

    @Override
    public void close() {
        release.countDown();
        server.stop(0);
        ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
    }
}
