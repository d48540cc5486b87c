package dev.aimux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * CONTRACT §3's lookup, each case in a fresh JVM running the built jar copied outside the checkout
 * (so the in-repo fallback cannot apply): no library findable is a 207 RuntimeInitError naming what
 * was tried; {@code libaimux.so.1} is found through {@code java.library.path} and through the system
 * loader ({@code LD_LIBRARY_PATH}) with no AIMUX_LIB.
 */
class LoaderTest {
    private static final String PROBE = """
            import dev.aimux.*;
            public class Probe {
                public static void main(String[] args) {
                    try {
                        String v = Aimux.call("aimux.version", "{}");
                        System.out.println("OK " + Aimux.libraryPath() + " " + v);
                    } catch (AimuxException e) {
                        System.out.println("ERR " + e.code() + " " + e.name() + " "
                                + (e instanceof dev.aimux.errors.RuntimeInitException) + " " + e.getMessage());
                    }
                }
            }
            """;

    /** The jar and its runtime dependencies, copied into {@code dir}; returns the class path. */
    private static String copyJars(Path dir) throws IOException {
        Path target = Repo.path("bindings/java/target");
        List<String> cp = new ArrayList<>();
        Path jar = dir.resolve("aimux-ops.jar");
        Files.copy(target.resolve("aimux-ops.jar"), jar);
        cp.add(jar.toString());
        try (Stream<Path> libs = Files.list(target.resolve("lib"))) {
            for (Path l : libs.toList()) {
                Path c = dir.resolve(l.getFileName());
                Files.copy(l, c);
                cp.add(c.toString());
            }
        }
        return String.join(java.io.File.pathSeparator, cp);
    }

    private static String runProbe(Path dir, Map<String, String> env, String... jvmArgs) throws Exception {
        return runProbeWith(dir, env, "--enable-native-access=ALL-UNNAMED", jvmArgs);
    }

    private static String runProbeWith(Path dir, Map<String, String> env, String access, String... jvmArgs) throws Exception {
        String cp = copyJars(dir);
        Files.writeString(dir.resolve("Probe.java"), PROBE);
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> cmd = new ArrayList<>(List.of(java, access, "-cp", cp));
        cmd.addAll(List.of(jvmArgs));
        cmd.add("Probe.java");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().remove("AIMUX_LIB");
        pb.environment().remove("LD_LIBRARY_PATH");
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    @Test
    void noLibraryFindableIsA207RuntimeInitErrorNamingWhatWasTried(@TempDir Path dir) throws Exception {
        String out = runProbe(dir, Map.of(), "-Djava.library.path=" + dir.resolve("empty"));
        assertTrue(out.startsWith("ERR 207 RuntimeInitError true aimux: cannot load libaimux. Tried: "), out);
        assertTrue(out.contains("libaimux.so.1 in java.library.path=" + dir.resolve("empty")), out);
        assertTrue(out.contains("libaimux.so.1 through the system loader (LD_LIBRARY_PATH="), out);
        // the loader's own reason, which names the file (FFM's, or dlerror() under JNA)
        assertTrue(out.matches("(?s).*the default directories\\): [^;]*libaimux\\.so\\.1[^;]*;.*"), out);
        assertTrue(!out.contains("in-repo build"), "a jar outside the checkout has no in-repo build: " + out);
        assertTrue(out.contains("Fix: install the library"), out);
    }

    @Test
    void foundThroughJavaLibraryPath(@TempDir Path dir) throws Exception {
        Path libDir = Files.createDirectories(dir.resolve("lib"));
        Files.createSymbolicLink(libDir.resolve("libaimux.so.1"), Aimux.libraryPath());
        String out = runProbe(dir, Map.of(), "-Djava.library.path=" + libDir);
        assertTrue(out.startsWith("OK " + libDir.resolve("libaimux.so.1") + " "), out);
        assertTrue(out.contains("\"abiVersion\":1"), out);
    }

    @Test
    void foundThroughTheSystemLoader(@TempDir Path dir) throws Exception {
        Path libDir = Files.createDirectories(dir.resolve("lib"));
        Files.createSymbolicLink(libDir.resolve("libaimux.so.1"), Aimux.libraryPath());
        String out = runProbe(dir, Map.of("LD_LIBRARY_PATH", libDir.toString()), "-Djava.library.path=" + dir.resolve("empty"));
        // libraryPath() is the file the loader mapped (the symlink's target, from /proc/self/maps).
        assertTrue(out.startsWith("OK " + Aimux.libraryPath().toRealPath() + " "), out);
        assertTrue(out.contains("\"abiVersion\":1"), out);
    }

    @Test
    void refusedNativeAccessIsA207NamingTheFlag(@TempDir Path dir) throws Exception {
        // --illegal-native-access exists from JDK 24 on; the suite runs on JDK 25 (bindings/java/Makefile).
        org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() >= 24, "needs JDK 24+");
        Path libDir = Files.createDirectories(dir.resolve("lib"));
        Files.createSymbolicLink(libDir.resolve("libaimux.so.1"), Aimux.libraryPath());
        String out = runProbeWith(dir, Map.of(), "--illegal-native-access=deny", "-Djava.library.path=" + libDir);
        assertTrue(out.startsWith("ERR 207 RuntimeInitError true aimux: the JVM refused native access to libaimux: "), out);
        assertTrue(out.contains("--enable-native-access=ALL-UNNAMED"), out);
    }
}
