package dev.aimux;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import dev.aimux.errors.APICallError;
import dev.aimux.errors.APICallException;
import dev.aimux.errors.RetryException;
import dev.aimux.types.AbstractSource;
import dev.aimux.types.AbstractToolCall;
import dev.aimux.types.CallParams;
import dev.aimux.types.ErrorEvent;
import dev.aimux.types.FinishEvent;
import dev.aimux.types.FinishReason;
import dev.aimux.types.GenerateObjectParams;
import dev.aimux.types.GenerateObjectResult;
import dev.aimux.types.GenerateTextParams;
import dev.aimux.types.GenerateTextResult;
import dev.aimux.types.InvalidDataException;
import dev.aimux.types.Message;
import dev.aimux.types.ModelSpec;
import dev.aimux.types.Provider;
import dev.aimux.types.RecordingMode;
import dev.aimux.types.RecordingSpec;
import dev.aimux.types.Role;
import dev.aimux.types.Source;
import dev.aimux.types.SourceEvent;
import dev.aimux.types.StreamTextEvent;
import dev.aimux.types.StreamTextParams;
import dev.aimux.types.TextContent;
import dev.aimux.types.TextDeltaEvent;
import dev.aimux.types.ToolCall;
import dev.aimux.types.ToolCallEvent;
import dev.aimux.types.ToolCallOutput;
import dev.aimux.types.ToolChoiceMode;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The typed surface (dev.aimux.types, generated from the core's models) against the real library. */
class TypedTest {
    private static final ObjectMapper M = new ObjectMapper();

    static StreamTextParams replay(String recording, String provider) {
        return StreamTextParams.builder()
                .model(ModelSpec.builder().provider(provider).modelId(provider.equals("openai") ? "gpt-4o-mini" : "claude-sonnet-4-5")
                        .baseUrl("http://127.0.0.1:1/v1").build())
                .prompt("Say hello in one word.")
                .recording(RecordingSpec.builder().mode(RecordingMode.REPLAY).path(Repo.path(recording).toString()).build())
                .build();
    }

    static GenerateTextParams replayGenerate() {
        return GenerateTextParams.fromJson(replay("recordings/demo.jsonl", "openai")._json());
    }

    /** The fields the models share by inheritance are one class's: every params type is a CallParams. */
    private static String promptOf(CallParams p) {
        return p.prompt().orElse("");
    }

    @Test
    void classesMadeOfOneModelShareItsFieldsAndSetters() {
        ModelSpec model = ModelSpec.builder().provider(Provider.OPENAI).modelId("m").build();
        GenerateTextParams g = GenerateTextParams.builder().model(model).prompt("a").maxRetries(0).build();
        StreamTextParams s = StreamTextParams.builder().prompt("b").model(model).build(); // shared setters keep the builder's type
        GenerateObjectParams o = GenerateObjectParams.builder().model(model).prompt("c").schema(Map.of("type", "object")).build();
        assertEquals(List.of("a", "b", "c"), List.of(promptOf(g), promptOf(s), promptOf(o)));
        assertEquals(Optional.of(0L), g.maxRetries());

        List<AbstractToolCall> calls = List.of(
                ToolCall.builder().toolCallId("t1").toolName("weather").build(),
                ToolCallEvent.builder().toolCallId("t2").toolName("weather").input(Map.of("city", "Paris")).build(),
                ToolCallOutput.builder().toolCallId("t3").toolName("weather").providerExecuted(true).build());
        assertEquals(List.of("t1", "t2", "t3"), calls.stream().map(AbstractToolCall::toolCallId).toList());
        assertEquals("Paris", calls.get(1).input().orElseThrow().get("city").asText());
        assertEquals(Optional.of(true), calls.get(2).providerExecuted());
        assertEquals("tool-call", ((ToolCallEvent) calls.get(1)).type()); // each keeps its own constant

        AbstractSource source = SourceEvent.fromJson("{\"type\":\"source\",\"sourceType\":\"url\",\"id\":\"s\",\"url\":\"https://e.com\"}");
        assertEquals(Optional.of("https://e.com"), source.url());
        assertFalse(source instanceof Source); // siblings, not one another
        assertEquals(Source.fromJson(source.toJson()).url(), source.url());
    }

    @Test
    void generateTextIsTypedEndToEnd() {
        GenerateTextResult r = Aimux.generateText(replayGenerate());
        assertEquals("Hello!", r.text());
        assertEquals(FinishReason.STOP, r.finishReason());
        assertTrue(r.finishReason().isKnown());
        assertEquals(Optional.of(12L), r.usage().inputTokens());
        assertEquals(Optional.of(14L), r.usage().totalTokens());
        assertEquals(Optional.of("chatcmpl-demo-1"), r.response().id());
        assertEquals(List.of(), r.toolCalls());
    }

    @Test
    void streamTextGivesTypedEvents() {
        StringBuilder text = new StringBuilder();
        List<String> types = new ArrayList<>();
        FinishEvent finish = null;
        try (TextStream s = Aimux.streamText(replay("recordings/anthropic.jsonl", "anthropic"))) {
            for (StreamTextEvent e : s) {
                types.add(e.type());
                if (e instanceof TextDeltaEvent d) {
                    text.append(d.text());
                } else if (e instanceof FinishEvent f) {
                    finish = f;
                }
            }
        }
        assertEquals(List.of("text-delta", "text-delta", "finish"), types);
        assertEquals("Hello!", text.toString());
        assertEquals(FinishReason.STOP, finish.finishReason());
    }

    @Test
    void streamAsAJavaStream() {
        String text;
        try (var events = Aimux.streamText(replay("recordings/demo.jsonl", "openai")).stream()) {
            text = events.filter(TextDeltaEvent.class::isInstance).map(e -> ((TextDeltaEvent) e).text()).reduce("", String::concat);
        }
        assertEquals("Hello!", text);
    }

    @Test
    void aStreamErrorEventIsTheDecodedException() throws Exception {
        List<StreamTextEvent> events = new ArrayList<>();
        try (FaultServer fault = new FaultServer();
                TextStream s = Aimux.streamText(StreamTextParams.fromJson(fault.params("mode=errframe;after=1")))) {
            s.forEachRemaining(events::add);
        }
        assertInstanceOf(TextDeltaEvent.class, events.get(0));
        ErrorEvent err = assertInstanceOf(ErrorEvent.class, events.get(events.size() - 1));
        AimuxException e = err.error();
        assertInstanceOf(APICallError.class, e, e.toString());
        assertEquals(e.toJson(), err._json().get("error").toString());
    }

    @Test
    void refusedConnectionThrowsWithTheChain() {
        GenerateTextParams p = GenerateTextParams.fromJson(Repo.FAILING_PARAMS);
        RetryException e = assertThrows(RetryException.class, () -> Aimux.generateText(p));
        assertEquals(Optional.empty(), e.statusCode());
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        assertTrue(t.getMessage().contains("Connection refused"), t.getMessage());
    }

    @Test
    void a429WithRetryAfterHasItsStatusOnTheCaughtError() throws Exception {
        try (FaultServer fault = new FaultServer()) {
            GenerateTextParams once = GenerateTextParams.fromJson(fault.params("mode=status;status=429;retry_after=2"));
            APICallException e = assertThrows(APICallException.class, () -> Aimux.generateText(once));
            assertEquals(Optional.of(429L), e.statusCode());
            assertTrue(e.retryable());
            assertEquals(Optional.of(Duration.ofSeconds(2)), e.retryAfter());

            // retried: the retry error's status is its last attempt's (retry-after 0 keeps it quick)
            GenerateTextParams retried = once.toBuilder().maxRetries(1)
                    .model(once.model().toBuilder().modelId("fault:mode=status;status=429;retry_after=0").build()).build();
            RetryException r = assertThrows(RetryException.class, () -> Aimux.generateText(retried));
            assertEquals(Optional.of(429L), r.statusCode());
        }
    }

    @Test
    void generateObjectGivesTheObject() throws Exception {
        try (FaultServer fault = new FaultServer()) {
            GenerateTextParams base = GenerateTextParams.fromJson(fault.params("mode=object"));
            GenerateObjectResult r = Aimux.generateObject(GenerateObjectParams.builder()
                    .model(base.model())
                    .prompt("Who?")
                    .schema(Map.of("type", "object", "properties", Map.of("name", Map.of("type", "string"), "age", Map.of("type", "integer"))))
                    .schemaName("person")
                    .maxRetries(0)
                    .build());
            assertEquals("Ada", r.object().get("name").textValue());
            assertEquals(36, r.object().get("age").intValue());
            assertEquals(FinishReason.STOP, r.finishReason());
        }
    }

    @Test
    void buildersCheckRequiredFieldsAndSerialiseToTheWireNames() throws Exception {
        IllegalStateException missing = assertThrows(IllegalStateException.class, () -> GenerateTextParams.builder().prompt("hi").build());
        assertEquals("GenerateTextParams.model is required", missing.getMessage());
        GenerateTextParams p = GenerateTextParams.builder()
                .model(ModelSpec.builder().provider(Provider.OPENAI).modelId("m").baseUrl("http://h/v1").apiKey("sk-secret").build())
                .messages(List.of(Message.builder().role(Role.USER).content(List.of(TextContent.builder().text("hi").build())).build()))
                .temperature(0)
                .maxOutputTokens(100)
                .toolChoice(ToolChoiceMode.AUTO)
                .stopWhen(List.of())
                .build();
        JsonNode want = M.readTree("""
                {"model": {"provider": "openai", "modelId": "m", "baseURL": "http://h/v1", "apiKey": "sk-secret"},
                 "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                 "temperature": 0.0, "maxOutputTokens": 100, "toolChoice": "auto", "stopWhen": []}""");
        assertEquals(want, M.readTree(p.toJson()));
        assertFalse(p.toString().contains("sk-secret"), p.toString());
        assertTrue(p.messages().orElseThrow().get(0).content().orElseThrow().isList());
        assertEquals("hi", ((TextContent) p.messages().orElseThrow().get(0).content().orElseThrow().asList().orElseThrow().get(0)).text());
    }

    @Test
    void unknownFieldsValuesAndEventsAreKept() {
        GenerateTextResult r = GenerateTextResult.fromJson("""
                {"text": "x", "finishReason": "brand-new-reason", "usage": {"inputTokens": null}, "toolCalls": [],
                 "response": {}, "futureField": {"a": 1}}""");
        FinishReason reason = r.finishReason();
        assertFalse(reason.isKnown());
        assertEquals("brand-new-reason", reason.value());
        assertEquals(FinishReason.of("brand-new-reason"), reason);
        assertEquals(Map.of("futureField", M.createObjectNode().put("a", 1)), r._additionalProperties());
        assertTrue(r.toBuilder().text("y").build().toJson().contains("\"futureField\":{\"a\":1}"));
        // absent and null told apart
        assertTrue(r.usage()._inputTokens().isNull());
        assertTrue(r.usage()._outputTokens().isMissing());
        assertEquals(Optional.empty(), r.usage().inputTokens());
        // a wrong type is an error on the accessor, its raw value still readable
        GenerateTextResult bad = GenerateTextResult.fromJson("{\"text\": 7}");
        InvalidDataException e = assertThrows(InvalidDataException.class, bad::text);
        assertEquals("GenerateTextResult.text is not a string (got number)", e.getMessage());
        assertTrue(bad._text().isInvalid());
        assertEquals(7, bad._text().raw().orElseThrow().intValue());
        // an event type this build does not know
        StreamTextEvent future = StreamTextEvent.fromJson(M.createObjectNode().put("type", "x-future-event").put("url", "u"));
        StreamTextEvent.Unknown u = assertInstanceOf(StreamTextEvent.Unknown.class, future);
        assertEquals("x-future-event", u.type());
        assertEquals("u", u._additionalProperties().get("url").textValue());
    }
}
