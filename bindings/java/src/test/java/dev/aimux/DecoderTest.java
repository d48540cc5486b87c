package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import dev.aimux.errors.APICallCauseException;
import dev.aimux.errors.APICallError;
import dev.aimux.errors.APICallException;
import dev.aimux.errors.AimuxErrorType;
import dev.aimux.errors.OtherException;
import dev.aimux.errors.RetryCauseException;
import dev.aimux.errors.RetryError;
import dev.aimux.errors.RetryException;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DecoderTest {
    private static final ObjectMapper M = new ObjectMapper();

    static String envelope(String vector) throws Exception {
        JsonNode doc = M.readTree(Files.readString(Repo.path("contract-tests/vectors/" + vector)));
        return M.writeValueAsString(doc.get("envelope"));
    }

    @Test
    void retryLastAttemptIsTheCauseAndEarlierAttemptsAreSuppressed() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("transport-retry-connection-refused.json"));
        RetryException retry = assertInstanceOf(RetryException.class, e);
        assertEquals("aimux", retry.kind());
        assertEquals(14, retry.code());
        assertEquals("AI_RetryError", retry.name());
        assertEquals(Optional.of("maxRetriesExceeded"), retry.reason());
        assertSame(AimuxErrorType.AIMUX_RETRY, retry.variant().orElseThrow());
        List<?> attempts = (List<?>) retry.errors().orElseThrow();
        assertEquals(attempts.size() - 1, retry.getSuppressed().length);
        for (Throwable s : retry.getSuppressed()) {
            assertInstanceOf(APICallCauseException.class, s);
        }
        APICallCauseException last = assertInstanceOf(APICallCauseException.class, retry.getCause());
        assertEquals(Optional.of(true), last.isRetryable());
        Throwable t = last;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        AimuxSourceException os = assertInstanceOf(AimuxSourceException.class, t);
        assertEquals("ConnectionRefusedError", os.type());
        assertTrue(os.getMessage().contains("Connection refused"));
    }

    @Test
    void printStackTraceShowsTheWholeChainAndTheSuppressedAttempts() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("transport-retry-connection-refused.json"));
        StringWriter sw = new StringWriter();
        e.printStackTrace(new PrintWriter(sw));
        String trace = sw.toString();
        assertTrue(trace.startsWith("dev.aimux.errors.RetryException [aimux 14 AI_RetryError]: Failed after 3 attempts"), trace);
        assertTrue(trace.contains("\tat dev.aimux."), "the root keeps its Java frames:\n" + trace);
        assertTrue(trace.contains("Caused by: dev.aimux.errors.APICallCauseException [aimux 11 AI_APICallError]: Cannot connect to API"), trace);
        assertTrue(trace.contains("Caused by: dev.aimux.AimuxSourceException [httpx.ConnectError]: [Errno 111] Connection refused"), trace);
        assertTrue(trace.contains("Caused by: dev.aimux.AimuxSourceException [ConnectionRefusedError]: [Errno 111] Connection refused"), trace);
        assertEquals(e.getSuppressed().length, count(trace, "Suppressed: dev.aimux.errors.APICallCauseException"), trace);
    }

    static int count(String s, String sub) {
        int n = 0;
        for (int i = s.indexOf(sub); i >= 0; i = s.indexOf(sub, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void variantIdentityOnCauseNodesThroughTheGeneratedInterface() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("nested-retry-in-cause.json"));
        assertInstanceOf(OtherException.class, e);
        // the Retry node sits in the middle of the chain: same interface as a root RetryException
        RetryError mid = assertInstanceOf(RetryError.class, e.getCause());
        assertInstanceOf(RetryCauseException.class, mid);
        assertTrue(AimuxErrorType.AIMUX_RETRY.matches(e.getCause()));
        assertTrue(((AimuxNode) e.getCause()).is(AimuxErrorType.AIMUX_RETRY));
        assertFalse(AimuxErrorType.AIMUX_RETRY.matches(e));
        assertEquals(1, e.getCause().getSuppressed().length);
        APICallError api = assertInstanceOf(APICallError.class, e.getCause().getCause());
        assertEquals(11, api.code());
        // the suppressed earlier attempt carried a status code
        APICallError first = assertInstanceOf(APICallError.class, e.getCause().getSuppressed()[0]);
        assertEquals(Optional.of(500L), first.statusCode());
    }

    @Test
    void rootFieldsRetryableRetryAfterAndTypedPayload() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("api-call-429-retry-after.json"));
        APICallException api = assertInstanceOf(APICallException.class, e);
        assertTrue(api.retryable());
        assertEquals(Optional.of(Duration.ofMillis(250)), api.retryAfter());
        assertEquals(Optional.of(429L), api.statusCode());
        assertEquals(Optional.of(true), api.isRetryable());
        Map<?, ?> headers = (Map<?, ?>) api.responseHeaders().orElseThrow();
        assertEquals("250", headers.get("retry-after-ms"));
        assertEquals("AI_APICallError", api.errorFields().get("name"));
        assertNull(api.getCause());
    }

    @Test
    void noRetryAfterUnlessObserved() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("transport-retry-connection-refused.json"));
        assertEquals(Optional.empty(), e.retryAfter());
    }

    @Test
    void unknownCodeDecodesGenericallyAndKeepsTheRawJson() throws Exception {
        String env = envelope("unknown-code.json");
        AimuxException e = AimuxDecoder.decode(env);
        assertSame(AimuxException.class, e.getClass());
        assertEquals(77, e.code());
        assertEquals("AI_FutureError", e.name());
        assertEquals(Optional.empty(), e.variant());
        assertEquals(env, e.toJson());
        assertEquals(List.of(1, 2), e.field("futureField").orElseThrow());
        assertInstanceOf(AimuxSourceException.class, e.getCause());
    }

    @Test
    void unknownKindDecodesGenerically() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("unknown-kind.json"));
        assertSame(AimuxException.class, e.getClass());
        assertEquals("telemetry", e.kind());
        assertEquals(901, e.code());
        assertTrue(e.retryable());
        assertEquals(Optional.of(Duration.ofMillis(5)), e.retryAfter());
        AimuxCauseException c = assertInstanceOf(AimuxCauseException.class, e.getCause());
        assertSame(AimuxCauseException.class, c.getClass());
        assertEquals(902, c.code());
        assertTrue(c.toJson().contains("\"QueueFullError\""));
    }

    @Test
    void anUnknownNameWithAKnownCodeIsANewerVariantNotAMisclassifiedOne() {
        AimuxException e = AimuxDecoder.decode(
                "{\"kind\":\"aimux\",\"code\":11,\"message\":\"m\",\"error\":{\"name\":\"AI_SomethingNew\"},\"retryable\":false}");
        assertSame(AimuxException.class, e.getClass());
        AimuxException byCode = AimuxDecoder.decode(
                "{\"kind\":\"aimux\",\"code\":11,\"message\":\"m\",\"error\":{},\"retryable\":false}");
        assertInstanceOf(APICallException.class, byCode);
        assertNull(byCode.name());
    }

    @Test
    void everyGeneratedVariantRoundTripsThroughTheDecoder() {
        for (AimuxErrorType t : AimuxErrorType.values()) {
            String env = "{\"kind\":\"" + t.kind() + "\",\"code\":" + t.code() + ",\"message\":\"x\",\"error\":{\"name\":\""
                    + t.errorName() + "\"},\"cause\":{\"kind\":\"" + t.kind() + "\",\"code\":" + t.code()
                    + ",\"message\":\"y\",\"error\":{\"name\":\"" + t.errorName() + "\"}},\"retryable\":false}";
            AimuxException e = AimuxDecoder.decode(env);
            assertSame(t, e.variant().orElseThrow(), env);
            assertTrue(t.nodeInterface().isInstance(e));
            assertTrue(t.nodeInterface().isInstance(e.getCause()));
            assertInstanceOf(AimuxCauseException.class, e.getCause());
            assertTrue(t.matches(e.getCause()));
        }
    }

    @Test
    void notAnEnvelope() {
        assertThrows(IllegalArgumentException.class, () -> AimuxDecoder.decode("not json"));
        assertThrows(IllegalArgumentException.class, () -> AimuxDecoder.decode("[]"));
        assertThrows(IllegalArgumentException.class, () -> AimuxDecoder.decode("{\"message\":\"a source node\"}"));
    }

    @Test
    void causeNodesCarryNoJavaFrames() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("transport-retry-connection-refused.json"));
        assertTrue(e.getStackTrace().length > 0);
        List<Throwable> below = new ArrayList<>();
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            below.add(t);
        }
        assertEquals(4, below.size());
        for (Throwable t : below) {
            assertEquals(0, t.getStackTrace().length, t.toString());
        }
    }

    @Test
    void decodedChainsSurviveJavaSerialization() throws Exception {
        AimuxException e = AimuxDecoder.decode(envelope("transport-retry-connection-refused.json"));
        java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(buf)) {
            out.writeObject(e);
        }
        Object back;
        try (java.io.ObjectInputStream in = new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(buf.toByteArray()))) {
            back = in.readObject();
        }
        RetryException r = assertInstanceOf(RetryException.class, back);
        assertEquals(e.toJson(), r.toJson());
        assertEquals(Optional.of("maxRetriesExceeded"), r.reason());
        assertEquals(DecodeChain.chain(e), DecodeChain.chain(r));
        assertEquals(e.getSuppressed().length, r.getSuppressed().length);
    }
}
