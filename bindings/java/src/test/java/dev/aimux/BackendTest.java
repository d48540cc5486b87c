package dev.aimux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The backend seam ({@link NativeBackend}): FFM on JDK 22+, JNA before (the suite runs on JDK 25 and again on
 * JDK 17, bindings/java/pom.xml); with {@code -Daimux.backend=jna} the JNA backend on any JDK; strings cross as
 * UTF-8 whatever the JVM's default charset (an empty environment makes it ASCII on JDK 17).
 */
class BackendTest {
    private static final String PROBE = """
            import dev.aimux.*;
            public class Probe {
                public static void main(String[] args) throws Exception {
                    var backend = Class.forName("dev.aimux.Native").getDeclaredMethod("backend");
                    backend.setAccessible(true);
                    try {
                        Aimux.call("g\\u00e9n\\u00e9r\\u00e9_\\u6587", "{\\"k\\": \\"\\u00e9\\"}");
                        System.out.println("OK?");
                    } catch (AimuxException e) {
                        System.out.println(backend.invoke(null) + " " + e.code() + " " + e.name() + " "
                                + java.net.URLEncoder.encode(e.getMessage(), "UTF-8"));
                    }
                }
            }
            """;

    @Test
    void ffmFromJdk22AndJnaBefore() {
        assertTrue(Aimux.abiVersion() > 0);
        assertEquals(Runtime.version().feature() >= 22 ? "ffm" : "jna", Native.backend());
    }

    /** A fresh JVM under an empty locale, with the jar and its dependencies from target/ (AIMUX_LIB as the suite's). */
    private static String probe(Path dir, String... jvmArgs) throws Exception {
        Files.writeString(dir.resolve("Probe.java"), PROBE);
        Path target = Repo.path("bindings/java/target");
        String cp = target.resolve("aimux-ops.jar") + java.io.File.pathSeparator + target.resolve("lib") + "/*";
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(), "-cp", cp));
        cmd.addAll(List.of(jvmArgs));
        cmd.add("Probe.java");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("LC_") || k.equals("LANG") || k.startsWith("JAVA_TOOL"));
        pb.environment().put("LC_ALL", "C");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.waitFor(), out);
        String last = out.lines().reduce((a, b) -> b).orElse("");
        return java.net.URLDecoder.decode(last, StandardCharsets.UTF_8);
    }

    @Test
    void stringsCrossAsUtf8UnderAnAsciiLocale(@TempDir Path dir) throws Exception {
        String out = probe(dir);
        String backend = Runtime.version().feature() >= 22 ? "ffm" : "jna";
        assertTrue(out.startsWith(backend + " 300 UnknownOpError "), out);
        assertTrue(out.contains("'g\u00e9n\u00e9r\u00e9_\u6587'"), "the op name came back whole: " + out);
    }

    @Test
    void jnaOnAnyJdkWhenAsked(@TempDir Path dir) throws Exception {
        String out = probe(dir, "-Daimux.backend=jna");
        assertTrue(out.startsWith("jna 300 UnknownOpError "), out);
        assertTrue(out.contains("'g\u00e9n\u00e9r\u00e9_\u6587'"), "the op name came back whole: " + out);
    }
}
