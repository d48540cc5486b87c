/*
 * The Kotlin API of aimux-ops, over the Java binding (dev.aimux): suspend functions for the call
 * ops, a cold Flow of typed events for stream_text, host tools as suspend lambdas. The params,
 * results and events are the Java binding's generated types (dev.aimux.types).
 */
package dev.aimux.kotlin

import com.fasterxml.jackson.databind.JsonNode
import dev.aimux.Aimux
import dev.aimux.AimuxException
import dev.aimux.TextStream
import dev.aimux.Tool
import dev.aimux.ToolContext
import dev.aimux.types.GenerateObjectParams
import dev.aimux.types.GenerateObjectResult
import dev.aimux.types.GenerateTextParams
import dev.aimux.types.GenerateTextResult
import dev.aimux.types.StreamTextEvent
import dev.aimux.types.StreamTextParams
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asExecutor
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.runInterruptible
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlin.coroutines.resumeWithException

/** The events of [streamText]: the generated sealed interface (TextDeltaEvent, FinishEvent, ErrorEvent, ...). */
typealias StreamEvent = StreamTextEvent

/**
 * A host tool: runs one call of the model's ([input] is its input JSON). What it returns is the
 * tool's result the model reads ([dev.aimux.ToolResult.error] a tool-level error it may recover
 * from); what it throws ends the call with a ToolExecutionError caused by that very exception.
 */
typealias SuspendTool = suspend (input: JsonNode, context: ToolContext) -> Any?

/**
 * generate_text. Failures throw the decoded [AimuxException] (RetryException, APICallException, ...).
 * The call runs on [Dispatchers.IO]; cancelling the coroutine interrupts the waiting thread (with
 * [tools], the loop is cancelled; a single model call without tools runs to its end first).
 */
suspend fun generateText(
    params: GenerateTextParams,
    tools: Map<String, SuspendTool> = emptyMap(),
): GenerateTextResult =
    runInterruptible(Dispatchers.IO) {
        if (tools.isEmpty()) Aimux.generateText(params) else Aimux.generateText(params, javaTools(tools))
    }

/** generate_text with the params built in place: `generateText { model(...); prompt("Hello") }`. */
suspend fun generateText(
    tools: Map<String, SuspendTool> = emptyMap(),
    build: GenerateTextParams.Builder.() -> Unit,
): GenerateTextResult = generateText(GenerateTextParams.builder().apply(build).build(), tools)

/** generate_object: a JSON object of the params' schema ([GenerateObjectResult.object]). */
suspend fun generateObject(params: GenerateObjectParams): GenerateObjectResult =
    runInterruptible(Dispatchers.IO) { Aimux.generateObject(params) }

/** generate_object with the params built in place. */
suspend fun generateObject(build: GenerateObjectParams.Builder.() -> Unit): GenerateObjectResult =
    generateObject(GenerateObjectParams.builder().apply(build).build())

/**
 * stream_text as a cold [Flow]: each collection starts one call, its events typed. Cancelling the
 * collecting coroutine (or a terminal operator that stops early, such as `first()` or `take(n)`)
 * cancels the call at once and frees the stream. A failure before the first event throws from the
 * collection; one after it is an [dev.aimux.types.ErrorEvent] whose `error()` is the decoded exception.
 */
fun streamText(
    params: StreamTextParams,
    tools: Map<String, SuspendTool> = emptyMap(),
): Flow<StreamEvent> =
    flow {
        val stream = open { if (tools.isEmpty()) Aimux.streamText(params) else Aimux.streamText(params, javaTools(tools)) }
        stream.use {
            while (stream.awaitNext()) {
                emit(stream.next())
            }
        }
    }

/** stream_text with the params built in place: `streamText { model(...); prompt("Hello") }`. */
fun streamText(
    tools: Map<String, SuspendTool> = emptyMap(),
    build: StreamTextParams.Builder.() -> Unit,
): Flow<StreamEvent> = streamText(StreamTextParams.builder().apply(build).build(), tools)

/** The HTTP status of the failure (a retry error: its last attempt's); null when no response came. */
val AimuxException.status: Long?
    get() = statusCode().orElse(null)

/**
 * Starts a stream off the caller's thread (the core answers once the first event is there); a
 * coroutine cancelled meanwhile goes on at once, and the stream is closed when it arrives.
 */
private suspend fun open(start: () -> TextStream): TextStream =
    suspendCancellableCoroutine { cont ->
        Dispatchers.IO.asExecutor().execute {
            runCatching(start).fold(
                onSuccess = { stream -> cont.resume(stream) { _, opened, _ -> opened.close() } },
                onFailure = { cont.resumeWithException(it) },
            )
        }
    }

/**
 * Waits for the next event off the caller's thread; a cancelled coroutine cancels the stream,
 * which wakes the waiting thread (the stream then ends, and `use` frees it).
 */
private suspend fun TextStream.awaitNext(): Boolean =
    suspendCancellableCoroutine { cont ->
        cont.invokeOnCancellation { cancel() }
        Dispatchers.IO.asExecutor().execute {
            cont.resumeWith(runCatching { hasNext() })
        }
    }

/** Each suspend tool as the Java binding's [Tool]: run on the call's own (virtual) thread. */
private fun javaTools(tools: Map<String, SuspendTool>): Map<String, Tool> =
    tools.mapValues { (_, tool) -> Tool { input, context -> runBlocking { tool(input, context) } } }
