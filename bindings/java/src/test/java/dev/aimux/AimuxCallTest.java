package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import dev.aimux.errors.AimuxErrorType;
import dev.aimux.errors.AimuxManifest;
import dev.aimux.errors.InvalidParamsException;
import dev.aimux.errors.InvalidWireJSONException;
import dev.aimux.errors.NullArgumentException;
import dev.aimux.errors.UnknownOpException;
import dev.aimux.errors.WrongModeException;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Calls through libaimux (no provider needed). */
class AimuxCallTest {
    private static final ObjectMapper M = new ObjectMapper();

    @Test
    void version() throws Exception {
        JsonNode v = M.readTree(Aimux.call("aimux.version", "{}"));
        assertEquals("aimux-ops", v.get("name").asText());
        assertEquals(AimuxManifest.VERSION, v.get("version").asText());
        assertEquals(AimuxManifest.ABI_VERSION, v.get("abiVersion").asInt());
        assertEquals(AimuxManifest.ABI_VERSION, Aimux.abiVersion());
    }

    @Test
    void mapOverload() {
        Map<String, Object> v = Aimux.call("aimux.version", Map.of());
        assertEquals("aimux-ops", v.get("name"));
    }

    /** The library's manifest is the one the error classes were generated from (no drift). */
    @Test
    void manifestMatchesTheGeneratedClasses() throws Exception {
        JsonNode live = M.readTree(Aimux.call("aimux.manifest", "{}"));
        JsonNode file = M.readTree(Files.readString(Repo.path("schema/manifest.json")));
        assertEquals(file.get("errors"), live.get("errors"), "schema/manifest.json is stale against the core");
        Set<String> generated = new HashSet<>();
        for (AimuxErrorType t : AimuxErrorType.values()) {
            generated.add(t.kind() + " " + t.code() + " " + t.errorName());
        }
        Set<String> core = new HashSet<>();
        for (JsonNode e : live.get("errors")) {
            core.add(e.get("kind").asText() + " " + e.get("code").asInt() + " " + e.get("name").asText());
        }
        assertEquals(core, generated);
    }

    @Test
    void unknownOp() {
        UnknownOpException e = assertThrows(UnknownOpException.class, () -> Aimux.call("nope", "{}"));
        assertEquals("protocol", e.kind());
        assertEquals(300, e.code());
        assertEquals("UnknownOpError", e.name());
        assertEquals(java.util.Optional.of("nope"), e.op());
        List<?> ops = (List<?>) e.availableOps().orElseThrow();
        assertTrue(ops.contains("aimux.version"), ops.toString());
        assertFalse(e.retryable());
        assertTrue(e.toJson().startsWith("{\"kind\":\"protocol\",\"code\":300,"), e.toJson());
    }

    @Test
    void invalidParamsWithTheValidatorAsSourceCause() {
        InvalidParamsException e = assertThrows(InvalidParamsException.class,
                () -> Aimux.call("aimux.version", "{\"x\": 1}"));
        assertEquals(301, e.code());
        List<?> violations = (List<?>) e.violations().orElseThrow();
        assertEquals("x", ((Map<?, ?>) violations.get(0)).get("path"));
        AimuxSourceException src = assertInstanceOf(AimuxSourceException.class, e.getCause());
        assertTrue(src.type() != null && src.type().contains("ValidationError"), src.type());
    }

    @Test
    void paramsThatAreNotJson() {
        AimuxException e = assertThrows(AimuxException.class, () -> Aimux.call("aimux.version", "{not json"));
        assertTrue(e.code() == 202 || e.code() == 301, e.toJson());
        assertEquals(AimuxErrorType.kindOfCode(e.code()), e.kind());
    }

    @Test
    void nullArgumentsReachTheCoreAsNull() {
        NullArgumentException op = assertThrows(NullArgumentException.class, () -> Aimux.call(null, "{}"));
        assertEquals(204, op.code());
        assertEquals(java.util.Optional.of("op"), op.argument());
        NullArgumentException params = assertThrows(NullArgumentException.class,
                () -> Aimux.call("aimux.version", (String) null));
        assertEquals(204, params.code());
    }

    @Test
    void nulInsideAStringIsRefusedNotTruncated() {
        InvalidWireJSONException e = assertThrows(InvalidWireJSONException.class,
                () -> Aimux.call("aimux.version", "{}\u0000garbage"));
        assertEquals(202, e.code());
        assertThrows(UnknownOpException.class, () -> Aimux.call("aimux.version\u0000x", "{}"));
    }

    @Test
    void nonAsciiParamsSurviveTheBoundary() {
        InvalidParamsException e = assertThrows(InvalidParamsException.class,
                () -> Aimux.call("aimux.version", "{\"h\u00e9llo\u2603\": 1}"));
        assertTrue(e.getMessage().contains("h\u00e9llo\u2603"), e.getMessage());
    }

    @Test
    void wrongMode() {
        WrongModeException e = assertThrows(WrongModeException.class,
                () -> Aimux.call("stream_text", Repo.replayParams()));
        assertEquals(302, e.code());
        assertEquals("protocol", e.kind());
        assertEquals("WrongModeError", e.name());
        // the message names the Java API, not the C ABI's aimux_stream; the envelope is the core's
        assertEquals("op 'stream_text' is a stream op; use Aimux.stream (typed: Aimux.streamText)", e.getMessage());
        assertTrue(e.toString().endsWith(e.getMessage()), e.toString());
        assertTrue(e.toJson().contains("use aimux_stream"), e.toJson());
        AimuxException s = assertThrows(AimuxException.class, () -> {
            try (AimuxStream st = Aimux.stream("generate_text", Repo.replayParams())) {
                while (st.hasNext()) {
                    st.next();
                }
            }
        });
        assertInstanceOf(WrongModeException.class, s);
        assertEquals("op 'generate_text' is a call op; use Aimux.call (typed: Aimux.generateText, Aimux.generateObject)",
                s.getMessage());
    }

    @Test
    void libraryIsFoundAndAMissingOneIsReportedByPath() {
        assertTrue(Aimux.libraryPath().toString().matches(".*libaimux\\.so(\\.1)?$"), Aimux.libraryPath().toString());
        String saved = System.getProperty("aimux.lib");
        System.setProperty("aimux.lib", "/nonexistent/libaimux.so");
        try {
            Native.LoadFailure e = assertThrows(Native.LoadFailure.class, () -> Native.locate(Native.loader()));
            assertTrue(e.getMessage().contains("-Daimux.lib=/nonexistent/libaimux.so: no such file"), e.getMessage());
            assertTrue(e.getMessage().contains("Fix: "), e.getMessage());
        } finally {
            if (saved == null) {
                System.clearProperty("aimux.lib");
            } else {
                System.setProperty("aimux.lib", saved);
            }
        }
    }
}
