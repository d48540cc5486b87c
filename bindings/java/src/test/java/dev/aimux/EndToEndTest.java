package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import dev.aimux.errors.APICallCauseException;
import dev.aimux.errors.APICallError;
import dev.aimux.errors.RecordingNoMatchException;
import dev.aimux.errors.RecordingOpenFileException;
import dev.aimux.errors.RetryException;

import org.junit.jupiter.api.Test;

import java.io.PrintStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shipped recording and the failing call of recordings/README.md, through libaimux. */
class EndToEndTest {
    private static final ObjectMapper M = new ObjectMapper();

    @Test
    void generateTextOnTheRecording() throws Exception {
        JsonNode r = M.readTree(Aimux.call("generate_text", Repo.replayParams()));
        JsonNode want = M.readTree("""
                {"text": "Hello!", "finishReason": "stop", "usage": {"inputTokens": 12, "outputTokens": 2, "totalTokens": 14},
                 "toolCalls": [], "response": {"id": "chatcmpl-demo-1", "modelId": "gpt-4o-mini"}}""");
        // the recorded response's headers (redacted), as the live call had them
        assertEquals("application/json", r.get("response").get("headers").get("content-type").asText());
        ((ObjectNode) r.get("response")).remove("headers");
        for (String f : List.of("text", "finishReason", "usage", "toolCalls", "response")) {
            assertEquals(want.get(f), r.get(f), f + " in " + r);
        }
    }

    @Test
    void bothCallsOnTheAnthropicRecording() throws Exception {
        JsonNode r = M.readTree(Aimux.call("generate_text", Repo.anthropicReplayParams()));
        assertEquals("Hello!", r.get("text").asText());
        assertEquals("stop", r.get("finishReason").asText());
        assertEquals("msg_01QC4g3HwBThD4BaNtBckFDJ", r.get("response").get("id").asText());
        StringBuilder text = new StringBuilder();
        List<String> types = new ArrayList<>();
        try (AimuxStream s = Aimux.stream("stream_text", Repo.anthropicReplayParams())) {
            for (StreamEvent e : s) {
                types.add(e.type());
                e.text().ifPresent(text::append);
            }
        }
        assertEquals(List.of("text-delta", "text-delta", "finish"), types);
        assertEquals("Hello!", text.toString());
    }

    @Test
    void generateTextWithTheMapOverload() throws Exception {
        @SuppressWarnings("unchecked")
        Map<String, Object> params = M.readValue(Repo.replayParams(), Map.class);
        Map<String, Object> r = Aimux.call("generate_text", params);
        assertEquals("Hello!", r.get("text"));
        assertEquals("stop", r.get("finishReason"));
    }

    @Test
    void streamTextOnTheRecording() {
        List<String> types = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        StreamEvent finish = null;
        try (AimuxStream s = Aimux.stream("stream_text", Repo.replayParams())) {
            for (StreamEvent e : s) {
                types.add(e.type());
                e.text().ifPresent(text::append);
                if ("finish".equals(e.type())) {
                    finish = e;
                }
                assertEquals(Optional.empty(), e.error());
            }
            assertFalse(s.hasNext());
        }
        assertEquals(List.of("text-delta", "text-delta", "finish"), types);
        assertEquals("Hello!", text.toString());
        assertEquals("stop", finish.asMap().get("finishReason"));
    }

    @Test
    void failingCallChainReachesTheOsError() {
        RetryException e = assertThrows(RetryException.class, () -> Aimux.call("generate_text", Repo.FAILING_PARAMS));
        assertEquals(14, e.code());
        assertEquals(Optional.of("maxRetriesExceeded"), e.reason());
        // maxRetries 1: two attempts, the last one is the cause, the first one suppressed
        assertEquals(1, e.getSuppressed().length);
        APICallError attempt = assertInstanceOf(APICallError.class, e.getSuppressed()[0]);
        assertEquals(Optional.empty(), attempt.statusCode());
        APICallCauseException last = assertInstanceOf(APICallCauseException.class, e.getCause());
        assertTrue(last.getMessage().startsWith("Cannot connect to API"), last.getMessage());
        Throwable t = last;
        List<Throwable> chain = new ArrayList<>();
        while (t.getCause() != null) {
            t = t.getCause();
            chain.add(t);
        }
        assertFalse(chain.isEmpty());
        AimuxSourceException os = assertInstanceOf(AimuxSourceException.class, t);
        assertTrue(os.getMessage().contains("Connection refused"), os.getMessage());
        for (Throwable link = e; link != null; link = link.getCause()) {
            assertFalse(link.getMessage().contains("127.0.0.1:1"), "a URL leaked into " + link);
        }
        assertFalse(e.toJson().contains("sk-test"), "the API key leaked");
    }

    /** What a user sees: e.printStackTrace() shows the whole chain with Caused by: down to the OS error. */
    @Test
    void printStackTraceOfAFailedCall() {
        AimuxException e = assertThrows(AimuxException.class, () -> Aimux.call("generate_text", Repo.FAILING_PARAMS));
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            e.printStackTrace();
        } finally {
            System.setErr(saved);
        }
        String trace = buf.toString(StandardCharsets.UTF_8);
        assertTrue(trace.startsWith("dev.aimux.errors.RetryException [aimux 14 AI_RetryError]: "), trace);
        assertTrue(trace.contains("\tat dev.aimux.EndToEndTest"), "the call site is in the root's frames:\n" + trace);
        assertTrue(trace.contains("Caused by: dev.aimux.errors.APICallCauseException [aimux 11 AI_APICallError]: Cannot connect to API"), trace);
        assertTrue(trace.contains("Suppressed: dev.aimux.errors.APICallCauseException"), trace);
        String[] lines = trace.split("\n");
        String lastCausedBy = "";
        int causedBy = 0;
        for (String line : lines) {
            if (line.startsWith("Caused by: ")) {
                lastCausedBy = line;
                causedBy++;
            }
        }
        assertTrue(causedBy >= 2, trace);
        assertTrue(lastCausedBy.startsWith("Caused by: dev.aimux.AimuxSourceException"), lastCausedBy);
        assertTrue(lastCausedBy.contains("Connection refused"), lastCausedBy);
    }

    @Test
    void recordingFailuresAreTheRecordingDomainWithTheOsErrorAsCause() {
        String params = Repo.replayParams().replace(Repo.path("recordings/demo.jsonl").toString(), "/nonexistent/demo.jsonl");
        RecordingOpenFileException e = assertThrows(RecordingOpenFileException.class, () -> Aimux.call("generate_text", params));
        assertEquals("recording", e.kind());
        assertEquals(101, e.code());
        assertEquals(Optional.of("/nonexistent/demo.jsonl"), e.path());
        AimuxSourceException os = assertInstanceOf(AimuxSourceException.class, e.getCause());
        assertEquals("FileNotFoundError", os.type());
    }

    @Test
    void replayWithoutAMatchingExchange() {
        String params = Repo.replayParams().replace("Say hello in one word.", "Something never recorded.");
        RecordingNoMatchException e = assertThrows(RecordingNoMatchException.class, () -> Aimux.call("generate_text", params));
        assertEquals(102, e.code());
        assertFalse(e.retryable());
    }
}
