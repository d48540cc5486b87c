package dev.aimux.kotlin

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.ObjectMapper
import dev.aimux.AimuxException
import dev.aimux.types.GenerateObjectParams
import dev.aimux.types.GenerateTextParams
import dev.aimux.types.StreamTextParams
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import java.nio.file.Files

/**
 * The call-level shared fixtures (contract-tests/calls/cases.json) through the Kotlin API: each case
 * the typed ops can say (generate_text and generate_object called, stream_text streamed, params as
 * JSON) with its params read into the generated types, the outcome compared as every binding does.
 */
class CallFixturesTest {
    private val m = ObjectMapper()

    /** want ⊆ got: objects member by member, arrays and scalars exactly. */
    private fun subset(
        want: JsonNode,
        got: JsonNode?,
    ): Boolean =
        when {
            want.isObject -> got != null && got.isObject && want.properties().all { (k, v) -> got.has(k) && subset(v, got.get(k)) }
            want.isArray ->
                got != null &&
                    got.isArray &&
                    got.size() == want.size() &&
                    (0 until want.size()).all { subset(want[it], got[it]) }
            else -> want == got
        }

    private fun typed(c: JsonNode): Boolean {
        val api = c["api"].textValue()
        val mode =
            when (c["op"].textValue()) {
                "generate_text", "generate_object" -> api == "call"
                "stream_text" -> api == "stream"
                else -> false
            }
        return mode && !c.has("paramsText")
    }

    private suspend fun outcome(c: JsonNode): JsonNode {
        val params = m.readTree(m.writeValueAsString(c["params"]).replace("@REPO@", Repo.root.toString()))
        val out = m.createObjectNode()
        try {
            when (c["op"].textValue()) {
                "generate_text" -> out.set<JsonNode>("result", generateText(GenerateTextParams.fromJson(params))._json())
                "generate_object" -> out.set<JsonNode>("result", generateObject(GenerateObjectParams.fromJson(params))._json())
                else -> {
                    val events = out.putArray("events")
                    streamText(StreamTextParams.fromJson(params)).toList().forEach { events.add(it._json()) }
                }
            }
        } catch (e: AimuxException) {
            out.removeAll()
            out
                .putObject("error")
                .put("kind", e.kind())
                .put("code", e.code())
                .put("name", e.name())
        }
        return out
    }

    @TestFactory
    fun everyTypedCallCase(): List<DynamicTest> {
        val doc = m.readTree(Files.readString(Repo.path("contract-tests/calls/cases.json")))
        val tests =
            doc["cases"].filter(::typed).map { c ->
                DynamicTest.dynamicTest(c["key"].textValue()) {
                    val got = runBlocking { outcome(c) }
                    assertTrue(subset(c["expect"], got), "${c["description"].textValue()}\n want ${c["expect"]}\n  got $got")
                }
            }
        assertTrue(tests.size >= 6, "only ${tests.size} typed call cases")
        return tests
    }
}
