package dev.aimux.kotlin

import dev.aimux.AimuxException
import dev.aimux.ToolResult
import dev.aimux.errors.APICallException
import dev.aimux.errors.RetryException
import dev.aimux.errors.ToolExecutionException
import dev.aimux.types.ErrorEvent
import dev.aimux.types.FinishEvent
import dev.aimux.types.FinishReason
import dev.aimux.types.GenerateTextParams
import dev.aimux.types.ModelSpec
import dev.aimux.types.RecordingMode
import dev.aimux.types.RecordingSpec
import dev.aimux.types.StopCondition
import dev.aimux.types.StreamTextParams
import dev.aimux.types.TextDeltaEvent
import dev.aimux.types.ToolSpec
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.Optional

/** The Kotlin API over the real library: suspend calls, the Flow of typed events, cancellation, suspend tools. */
class KotlinApiTest {
    private fun replay(): StreamTextParams =
        StreamTextParams
            .builder()
            .model(
                ModelSpec
                    .builder()
                    .provider("openai")
                    .modelId("gpt-4o-mini")
                    .baseUrl("http://127.0.0.1:1/v1")
                    .build(),
            ).prompt("Say hello in one word.")
            .recording(
                RecordingSpec
                    .builder()
                    .mode(RecordingMode.REPLAY)
                    .path(Repo.path("recordings/demo.jsonl").toString())
                    .build(),
            ).build()

    private fun FaultServer.model(spec: String): ModelSpec =
        ModelSpec
            .builder()
            .provider("openai")
            .modelId("fault:$spec")
            .baseUrl("$base/v1")
            .apiKey("sk-test")
            .build()

    @Test
    fun generateTextSuspends() =
        runBlocking {
            val r = generateText(GenerateTextParams.fromJson(replay()._json()))
            assertEquals("Hello!", r.text())
            assertEquals(FinishReason.STOP, r.finishReason())
            assertEquals(Optional.of(14L), r.usage().totalTokens())
        }

    @Test
    fun streamTextIsAFlowOfTypedEvents() =
        runBlocking {
            val events = streamText(replay()).toList()
            assertEquals(listOf("text-delta", "text-delta", "finish"), events.map { it.type() })
            val text =
                streamText(replay())
                    .filterIsInstance<TextDeltaEvent>()
                    .map { it.text() }
                    .toList()
                    .joinToString("")
            assertEquals("Hello!", text)
            assertEquals(FinishReason.STOP, (events.last() as FinishEvent).finishReason())
        }

    @Test
    fun cancellingTheCollectorCancelsTheStream() =
        runBlocking {
            FaultServer().use { fault ->
                val spec = "mode=ok;gate=kotlin-cancel"
                val first = CompletableDeferred<String>()
                val job =
                    launch {
                        streamText { model(fault.model(spec)).prompt("hi").maxRetries(0) }.collect { e ->
                            if (e is TextDeltaEvent) first.complete(e.text())
                        }
                    }
                assertEquals("Hel", first.await()) // the server holds the rest until the gate opens
                job.cancelAndJoin()
                assertTrue(job.isCancelled)
                assertTrue(fault.saw("gone", spec), "the server did not see the client go away")
            }
        }

    @Test
    fun aTerminalOperatorThatStopsEarlyEndsTheCall() =
        runBlocking {
            FaultServer().use { fault ->
                val spec = "mode=ok;gate=kotlin-first"
                val e = streamText { model(fault.model(spec)).prompt("hi").maxRetries(0) }.first()
                assertEquals("Hel", (e as TextDeltaEvent).text())
                assertTrue(fault.saw("gone", spec))
            }
        }

    @Test
    fun failuresAreTheDecodedExceptions() =
        runBlocking {
            FaultServer().use { fault ->
                val e =
                    assertThrows<APICallException> {
                        generateText { model(fault.model("mode=status;status=429;retry_after=2")).prompt("hi").maxRetries(0) }
                    }
                assertEquals(429L, e.status)
                assertTrue(e.retryable())
                val events = streamText { model(fault.model("mode=errframe;after=1")).prompt("hi").maxRetries(0) }.toList()
                assertInstanceOf(AimuxException::class.java, (events.last() as ErrorEvent).error())
            }
            val refused =
                assertThrows<RetryException> {
                    generateText {
                        model(
                            ModelSpec
                                .builder()
                                .provider("openai")
                                .modelId("m")
                                .baseUrl("http://127.0.0.1:1/v1")
                                .apiKey("k")
                                .build(),
                        )
                        prompt("hi").maxRetries(1).retry(
                            dev.aimux.types.RetrySpec
                                .builder()
                                .initialDelayMs(10.0)
                                .build(),
                        )
                    }
                }
            assertNull(refused.status)
        }

    private fun FaultServer.toolParams(): GenerateTextParams =
        GenerateTextParams
            .builder()
            .model(model("mode=tool"))
            .prompt("What is the weather?")
            .tools(mapOf("weather" to ToolSpec.builder().description("The weather.").build()))
            .stopWhen(StopCondition.builder().stepCount(2).build())
            .maxRetries(0)
            .build()

    @Test
    fun toolsAreSuspendLambdas() =
        runBlocking {
            FaultServer().use { fault ->
                val cities = mutableListOf<String>()
                val r =
                    generateText(
                        fault.toolParams(),
                        mapOf(
                            "weather" to { input, _ ->
                                delay(1) // a suspend function, in the tool
                                cities += input.get("city").asText()
                                mapOf("temperature" to 21)
                            },
                        ),
                    )
                assertEquals(listOf("Paris", "Paris"), cities)
                val steps = r.steps().orElseThrow()
                assertEquals(2, steps.size)
                assertEquals(
                    21,
                    steps[0]
                        .toolResults()[0]
                        .output()
                        .orElseThrow()
                        .get("temperature")
                        .asInt(),
                )
                // a tool-level error the model reads, then a thrown one: the caller's, with that very cause
                val answered = generateText(fault.toolParams(), mapOf("weather" to { _, _ -> ToolResult.error("no data") }))
                assertEquals(2, answered.steps().orElseThrow().size)
                val boom = IllegalStateException("boom")
                val e =
                    assertThrows<ToolExecutionException> {
                        generateText(
                            fault.toolParams(),
                            mapOf(
                                "weather" to {
                                    _,
                                    _,
                                    ->
                                    throw boom
                                },
                            ),
                        )
                    }
                assertSame(boom, e.cause)
                assertFalse(e.toJson().contains("sk-test"))
            }
        }

    @Test
    fun aTypedStreamsToolFailureIsCausedByTheVeryExceptionThrown() =
        runBlocking {
            FaultServer().use { fault ->
                val boom = IllegalStateException("boom")
                val params = StreamTextParams.fromJson(fault.toolParams().toJson())
                val errors =
                    streamText(
                        params,
                        mapOf(
                            "weather" to {
                                _,
                                _,
                                ->
                                throw boom
                            },
                        ),
                    ).filterIsInstance<ErrorEvent>().toList()
                assertEquals(1, errors.size)
                val e = assertInstanceOf(ToolExecutionException::class.java, errors[0].error())
                assertEquals(22, e.code())
                assertSame(boom, e.cause)
            }
        }
}
