package dev.aimux;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** Paths of the repository the tests run in. */
final class Repo {
    private Repo() {}

    static Path root() {
        String p = System.getProperty("aimux.repo");
        return (p != null ? Path.of(p) : Path.of("../..")).toAbsolutePath().normalize();
    }

    static Path path(String rel) {
        return root().resolve(rel);
    }

    static List<Path> vectors() throws java.io.IOException {
        try (Stream<Path> s = Files.list(path("contract-tests/vectors"))) {
            return s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
    }

    /** The replay params of recordings/README.md, with an absolute path. */
    static String replayParams() {
        return """
                {"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1"},
                 "prompt": "Say hello in one word.",
                 "recording": {"mode": "replay", "path": "%s"}}
                """.formatted(path("recordings/demo.jsonl").toString().replace("\\", "\\\\"));
    }

    /** The same call on the second provider: recordings/anthropic.jsonl (the Messages API). */
    static String anthropicReplayParams() {
        return """
                {"model": {"provider": "anthropic", "modelId": "claude-sonnet-4-5", "baseURL": "http://127.0.0.1:1/v1"},
                 "prompt": "Say hello in one word.",
                 "recording": {"mode": "replay", "path": "%s"}}
                """.formatted(path("recordings/anthropic.jsonl").toString().replace("\\", "\\\\"));
    }

    /** The failing call of recordings/README.md: port 1 on loopback is closed. */
    static final String FAILING_PARAMS = """
            {"model": {"provider": "openai", "modelId": "gpt-4o-mini", "baseURL": "http://127.0.0.1:1/v1", "apiKey": "sk-test"},
             "prompt": "hi", "maxRetries": 1, "retry": {"initialDelayMs": 10}}
            """;
}
