package dev.aimux;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The library this jar carries ({@code make -C bindings/java install PREFIX=<dir>}): {@code libaimux.so.1}
 * and its payload under {@code dev/aimux/native/linux-x64/}, listed by {@code index} (first line
 * {@code sha256 <hash of every file>}, then one path a line). It is extracted once per content, into
 * {@code <cache>/aimux/<hash>/} ({@code $XDG_CACHE_HOME}, else {@code ~/.cache}), as sqlite-jdbc does: the
 * files go to a temporary directory beside it, which is renamed into place when complete, so a process
 * never loads a half-written tree and two processes extracting at once both end with the same one.
 */
final class Bundled {
    private Bundled() {}

    static final String PLATFORM = "linux-x64";
    private static final String DIR = "/dev/aimux/native/" + PLATFORM + "/";
    private static final String COMPLETE = ".complete";

    /** Whether this JVM runs on the platform the jar may carry a build for. */
    static boolean platformMatches() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        return os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"));
    }

    /** Where the files come from: a path under the platform's directory to its bytes, or null when absent. */
    interface Resources {
        InputStream open(String name) throws IOException;
    }

    /** The extracted {@code libaimux.so.1}, or null when the jar carries no build for this platform. */
    static Path library() throws IOException {
        if (!platformMatches()) {
            return null;
        }
        return library(name -> Bundled.class.getResourceAsStream(DIR + name), cacheRoot());
    }

    /** The tree {@code res} lists in its {@code index}, extracted under {@code root}: its library, or null without an index. */
    static Path library(Resources res, Path root) throws IOException {
        List<String> index;
        try (InputStream in = res.open("index")) {
            if (in == null) {
                return null;
            }
            index = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
        if (index.isEmpty() || !index.get(0).matches("sha256 [0-9a-f]{64}")) {
            throw new IOException("the jar's " + DIR + "index does not start with its sha256");
        }
        Path dir = root.resolve(index.get(0).substring("sha256 ".length()));
        if (!Files.isRegularFile(dir.resolve(COMPLETE))) {
            extract(res, index.subList(1, index.size()), root, dir);
        }
        return dir.resolve(Native.SONAME);
    }

    /** {@code $XDG_CACHE_HOME/aimux}, else {@code $HOME/.cache/aimux} (the JVM's user.home when HOME is unset). */
    static Path cacheRoot() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        if (xdg != null && !xdg.isEmpty() && Path.of(xdg).isAbsolute()) {
            return Path.of(xdg, "aimux");
        }
        String home = System.getenv("HOME");
        if (home == null || home.isEmpty() || !Path.of(home).isAbsolute()) {
            home = System.getProperty("user.home");
        }
        return Path.of(home, ".cache", "aimux");
    }

    private static void extract(Resources res, List<String> files, Path root, Path dir) throws IOException {
        Files.createDirectories(root);
        Path tmp = Files.createTempDirectory(root, ".extract-");
        try {
            for (String name : files) {
                Path to = tmp.resolve(name).normalize();
                if (name.isEmpty() || Path.of(name).isAbsolute() || !to.startsWith(tmp) || to.equals(tmp)) {
                    throw new IOException("the jar's index names " + name + ", outside its directory");
                }
                try (InputStream in = res.open(name)) {
                    if (in == null) {
                        throw new IOException("the jar's index names " + name + ", which the jar lacks");
                    }
                    Files.createDirectories(to.getParent());
                    Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Files.createFile(tmp.resolve(COMPLETE));
            try {
                Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileSystemException e) {
                // another process put its (identical) tree there first: use that one
                if (!Files.isRegularFile(dir.resolve(COMPLETE))) {
                    throw e;
                }
            }
        } finally {
            if (Files.exists(tmp)) {
                try (Stream<Path> walk = Files.walk(tmp)) {
                    walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }
}
