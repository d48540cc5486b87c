package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

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
