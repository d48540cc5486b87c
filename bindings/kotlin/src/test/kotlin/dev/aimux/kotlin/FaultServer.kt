package dev.aimux.kotlin

import java.net.URI
import java.net.URLEncoder
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.nio.file.Path

/** The repository the tests run in. */
object Repo {
    val root: Path = Path.of(System.getProperty("aimux.repo") ?: "../..").toAbsolutePath().normalize()

    fun path(rel: String): Path = root.resolve(rel)
}

/**
 * The project's fault-injecting OpenAI-compatible server (tests/fault_server.py) in a child process on
 * 127.0.0.1 (an ephemeral port). A test waits on what the server saw (`GET /__wait`), never on the clock.
 */
class FaultServer : AutoCloseable {
    private val process: Process
    val base: String

    init {
        val venv = Repo.path(".venv/bin/python")
        val python = if (Files.isExecutable(venv)) venv.toString() else "python3"
        process =
            ProcessBuilder(python, Repo.path("tests/fault_server.py").toString(), "--port", "0")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start()
        val line =
            process.inputStream
                .bufferedReader()
                .readLine()
                .orEmpty()
        base = Regex("fault server on (http://127\\.0\\.0\\.1:\\d+)").find(line)?.groupValues?.get(1)
            ?: run {
                process.destroyForcibly()
                error("fault server did not start: $line")
            }
    }

    /** Waits (a 60 s safety bound, not a speed claim) until the server saw [event] for [scenario]. */
    fun saw(
        event: String,
        scenario: String,
    ): Boolean {
        val q = "event=$event&scenario=${URLEncoder.encode(scenario, StandardCharsets.UTF_8)}&n=1&timeout_ms=60000"
        HttpClient.newHttpClient().use { http ->
            val r = http.send(HttpRequest.newBuilder(URI.create("$base/__wait?$q")).build(), HttpResponse.BodyHandlers.ofString())
            return r.statusCode() == 200
        }
    }

    override fun close() {
        process.destroy()
    }
}
