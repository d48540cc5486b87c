package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The loop fixtures (contract-tests/calls/loops.json) through {@link Aimux#call(String, String, Map)} /
 * {@link Aimux#stream(String, String, Map)}, each tool behaviour in Java's idiom. The replay matches every
 * request body byte for byte, so a wrong answer to the model finds no recorded exchange (a 102).
 */
class LoopFixturesTest {
    private static final ObjectMapper M = new ObjectMapper();
    static final String MISSING_FILE = "/nonexistent/aimux/weather.json";

    static Tool tool(String behaviour) {
        CountDownLatch osloStarted = new CountDownLatch(1);
        return (input, ctx) -> {
            String city = input.path("city").asText();
            switch (behaviour) {
                case "value":
                    return "sunny in " + city;
                case "tool-error":
                    return ToolResult.error("no weather for " + city);
                case "tool-error-data":
                    return ToolResult.errorWithData("no weather for " + city, Map.of("city", city));
                case "raise-io":
                    return Files.readString(Path.of(MISSING_FILE));
                case "raise":
                    throw new IllegalStateException("weather service down");
                case "value-paired":
                    if (city.equals("Oslo")) {
                        osloStarted.countDown();
                    } else if (!osloStarted.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the Oslo call never started: calls ran one by one");
                    }
                    return "sunny in " + city;
                default:
                    throw new IllegalArgumentException("unknown behaviour " + behaviour);
            }
        };
    }

    static JsonNode outcome(JsonNode c) throws Exception {
        String op = c.get("op").textValue();
        String params = M.writeValueAsString(c.get("params")).replace("@REPO@", Repo.root().toString());
        Map<String, Tool> tools = new HashMap<>();
        c.get("tools").properties().forEach(e -> tools.put(e.getKey(), tool(e.getValue().textValue())));
        ObjectNode out = M.createObjectNode();
        try {
            if (c.get("api").textValue().equals("call")) {
                out.set("result", M.readTree(Aimux.call(op, params, tools)));
            } else {
                ArrayNode events = out.putArray("events");
                try (ToolStream s = Aimux.stream(op, params, tools)) {
                    for (StreamEvent e : s) {
                        events.add(M.readTree(e.json()));
                    }
                }
            }
        } catch (AimuxException e) {
            if (c.get("tools").path("weather").asText().equals("raise-io")) {
                // the very exception Files.readString threw: an IOException of the JDK's own
                NoSuchFileException io = assertInstanceOf(NoSuchFileException.class, e.getCause());
                assertInstanceOf(IOException.class, io);
                assertEquals(MISSING_FILE, io.getFile());
                assertEquals("weather", e.errorFields().get("toolName"));
            }
            out.removeAll();
            ObjectNode err = out.putObject("error");
            err.put("kind", e.kind());
            err.put("code", e.code());
            err.put("name", e.name());
        }
        return out;
    }

    @TestFactory
    List<DynamicTest> everyLoopCase() throws Exception {
        JsonNode doc = M.readTree(Files.readString(Repo.path("contract-tests/calls/loops.json")));
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : doc.get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("key").textValue(), () -> {
                JsonNode got = outcome(c);
                assertTrue(CallFixturesTest.subset(c.get("expect"), got),
                        c.get("description").textValue() + "\n want " + c.get("expect") + "\n  got " + got);
            }));
        }
        assertTrue(tests.size() >= 14, "only " + tests.size() + " loop cases");
        return tests;
    }
}
