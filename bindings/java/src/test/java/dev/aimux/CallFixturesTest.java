package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import dev.aimux.types.GenerateObjectParams;
import dev.aimux.types.GenerateTextParams;
import dev.aimux.types.StreamTextEvent;
import dev.aimux.types.StreamTextParams;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The call-level shared fixtures (contract-tests/calls/cases.json) through this binding's public
 * API, {@link Aimux#call(String, String)} / {@link Aimux#stream(String, String)} (JSON text in:
 * params encoded, paramsText as given). docs/DESIGN.md "Call-level fixtures".
 */
class CallFixturesTest {
    private static final ObjectMapper M = new ObjectMapper();

    /** want ⊆ got: objects member by member, arrays and scalars exactly. */
    static boolean subset(JsonNode want, JsonNode got) {
        if (want.isObject()) {
            if (got == null || !got.isObject()) {
                return false;
            }
            for (Map.Entry<String, JsonNode> e : want.properties()) {
                if (!got.has(e.getKey()) || !subset(e.getValue(), got.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        if (want.isArray()) {
            if (got == null || !got.isArray() || got.size() != want.size()) {
                return false;
            }
            for (int i = 0; i < want.size(); i++) {
                if (!subset(want.get(i), got.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return want.equals(got);
    }

    static JsonNode outcome(JsonNode c) throws Exception {
        String op = c.get("op").textValue();
        String params = c.has("paramsText") ? c.get("paramsText").textValue()
                : M.writeValueAsString(c.get("params")).replace("@REPO@", Repo.root().toString());
        ObjectNode out = M.createObjectNode();
        try {
            if (c.get("api").textValue().equals("call")) {
                out.set("result", M.readTree(Aimux.call(op, params)));
            } else {
                ArrayNode events = out.putArray("events");
                try (AimuxStream s = Aimux.stream(op, params)) {
                    for (StreamEvent e : s) {
                        events.add(M.readTree(e.json()));
                    }
                }
            }
        } catch (AimuxException e) {
            out.removeAll();
            ObjectNode err = out.putObject("error");
            err.put("kind", e.kind());
            err.put("code", e.code());
            err.put("name", e.name());
        }
        return out;
    }

    /**
     * The same case through the typed API ({@link Aimux#generateText}, {@link Aimux#streamText},
     * {@link Aimux#generateObject}): params read into the generated types (kept whole, so invalid
     * params reach the core as they are), the result and events back out as their JSON. Null for a
     * case the typed API cannot say ({@link #typed}: an op it has no function for, params text, a wrong mode) is left out.
     */
    static boolean typed(JsonNode c) {
        String api = c.get("api").textValue();
        boolean mode = switch (c.get("op").textValue()) {
            case "generate_text", "generate_object" -> api.equals("call");
            case "stream_text" -> api.equals("stream");
            default -> false;
        };
        return mode && !c.has("paramsText");
    }

    static JsonNode typedOutcome(JsonNode c) throws Exception {
        String op = c.get("op").textValue();
        JsonNode params = M.readTree(M.writeValueAsString(c.get("params")).replace("@REPO@", Repo.root().toString()));
        ObjectNode out = M.createObjectNode();
        try {
            switch (op) {
                case "generate_text" -> out.set("result", Aimux.generateText(GenerateTextParams.fromJson(params))._json());
                case "generate_object" -> out.set("result", Aimux.generateObject(GenerateObjectParams.fromJson(params))._json());
                default -> {
                    ArrayNode events = out.putArray("events");
                    try (TextStream s = Aimux.streamText(StreamTextParams.fromJson(params))) {
                        for (StreamTextEvent e : s) {
                            events.add(e._json());
                        }
                    }
                }
            }
        } catch (AimuxException e) {
            out.removeAll();
            ObjectNode err = out.putObject("error");
            err.put("kind", e.kind());
            err.put("code", e.code());
            err.put("name", e.name());
        }
        return out;
    }

    @TestFactory
    List<DynamicTest> everyCallCaseTyped() throws Exception {
        JsonNode doc = M.readTree(Files.readString(Repo.path("contract-tests/calls/cases.json")));
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : doc.get("cases")) {
            if (!typed(c)) {
                continue;
            }
            tests.add(DynamicTest.dynamicTest(c.get("key").textValue(), () -> {
                JsonNode got = typedOutcome(c);
                assertTrue(subset(c.get("expect"), got),
                        c.get("description").textValue() + "\n want " + c.get("expect") + "\n  got " + got);
            }));
        }
        assertTrue(tests.size() >= 6, "only " + tests.size() + " typed call cases");
        return tests;
    }

    @TestFactory
    List<DynamicTest> everyCallCase() throws Exception {
        JsonNode doc = M.readTree(Files.readString(Repo.path("contract-tests/calls/cases.json")));
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : doc.get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("key").textValue(), () -> {
                JsonNode got = outcome(c);
                assertTrue(subset(c.get("expect"), got),
                        c.get("description").textValue() + "\n want " + c.get("expect") + "\n  got " + got);
            }));
        }
        assertTrue(tests.size() >= 10, "only " + tests.size() + " call cases");
        return tests;
    }
}
