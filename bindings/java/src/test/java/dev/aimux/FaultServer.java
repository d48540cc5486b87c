package dev.aimux;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The project's fault-injecting OpenAI-compatible server (tests/fault_server.py) in a child process on 127.0.0.1
 * (an ephemeral port). A test waits on what the server saw ({@code GET /__wait}), never on the clock.
 */
final class FaultServer implements AutoCloseable {
    final Process process;
    final String base;

    FaultServer() throws IOException {
        Path venv = Repo.path(".venv/bin/python");
        String python = Files.isExecutable(venv) ? venv.toString() : System.getProperty("aimux.python", "python3");
        process = new ProcessBuilder(python, Repo.path("tests/fault_server.py").toString(), "--port", "0")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        Matcher m = Pattern.compile("fault server on (http://127\\.0\\.0\\.1:\\d+)").matcher(line == null ? "" : line);
        if (!m.find()) {
            process.destroyForcibly();
            throw new IOException("fault server did not start: " + line);
        }
        base = m.group(1);
    }

    /** Params of a stream_text call whose behaviour is {@code spec} (fault_server.py's modes). */
    String params(String spec) {
        String model = "fault:" + spec.replace("\\", "\\\\").replace("\"", "\\\"");
        return """
                {"model": {"provider": "openai", "modelId": "%s", "baseURL": "%s/v1", "apiKey": "sk-test"},
                 "prompt": "hi", "maxRetries": 0}
                """.formatted(model, base);
    }

    /** Waits (a 60 s safety bound, not a speed claim) until the server saw {@code event} for {@code scenario}. */
    boolean saw(String event, String scenario) throws IOException, InterruptedException {
        String q = "event=" + event + "&scenario=" + URLEncoder.encode(scenario, StandardCharsets.UTF_8)
                + "&n=1&timeout_ms=60000";
        HttpClient http = HttpClient.newHttpClient(); // not AutoCloseable before JDK 21 (the suite also runs on 17)
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/__wait?" + q)).build(),
                HttpResponse.BodyHandlers.ofString());
        return r.statusCode() == 200;
    }

    @Override
    public void close() {
        process.destroy();
    }
}
