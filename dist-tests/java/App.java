package app;

import dev.aimux.Aimux;
import dev.aimux.AimuxException;
import dev.aimux.AimuxNode;
import dev.aimux.AimuxSourceException;
import dev.aimux.AimuxStream;
import dev.aimux.StreamEvent;

import java.util.Map;

public class App {
    public static void main(String[] args) {
        Map<String, Object> model = Map.of("provider", "openai", "modelId", "gpt-4o-mini", "baseURL", "http://127.0.0.1:1/v1");
        try {
            Map<String, Object> r = Aimux.call("generate_text", Map.of("model", model, "prompt", "Say hello in one word.",
                    "recording", Map.of("mode", "replay", "path", args[0])));
            System.out.println("text: " + r.get("text"));
            System.out.println("library: " + Aimux.libraryPath());
            StringBuilder text = new StringBuilder();
            String last = "none";
            try (AimuxStream s = Aimux.stream("stream_text", Map.of("model", model, "prompt", "Say hello in one word.",
                    "recording", Map.of("mode", "replay", "path", args[0])))) {
                for (StreamEvent ev : s) {
                    ev.text().ifPresent(text::append);
                    last = ev.type();
                }
            }
            System.out.println("stream: " + text + " (" + last + ")");
        } catch (AimuxException e) {
            System.out.println("error: " + e.code() + " " + e.name() + ": " + e.getMessage());
            System.exit(3);
        }
        Map<String, Object> failingModel = Map.of("provider", "openai", "modelId", "gpt-4o-mini",
                "baseURL", "http://127.0.0.1:1/v1", "apiKey", "sk-test");
        try {
            Aimux.call("generate_text", Map.of("model", failingModel, "prompt", "hi", "maxRetries", 1,
                    "retry", Map.of("initialDelayMs", 10)));
            System.out.println("the failing call succeeded");
        } catch (AimuxException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof AimuxNode n) {
                    System.out.println("chain: " + n.kind() + " " + n.code() + " " + n.name() + ": " + n.getMessage());
                } else if (t instanceof AimuxSourceException s) {
                    System.out.println("chain: source 0 " + s.type() + ": " + s.getMessage());
                } else {
                    System.out.println("chain: ? " + t);
                }
            }
        }
    }
}
