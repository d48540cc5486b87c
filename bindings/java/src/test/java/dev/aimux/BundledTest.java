package dev.aimux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The extraction of the library a jar carries (Bundled): into {@code <root>/<hash>/}, complete or not at
 * all, the same tree for processes (here threads) extracting at once, and an index naming a path outside
 * its directory or a file the jar lacks refused with nothing left behind.
 */
class BundledTest {
    private static final String HASH = "ab".repeat(32);

    /** Resources from a map: the index (its hash, then the paths) and each file's text. */
    private static Bundled.Resources resources(Map<String, String> files, String... extraIndexLines) {
        List<String> index = new ArrayList<>(List.of("sha256 " + HASH));
        index.addAll(files.keySet());
        index.addAll(List.of(extraIndexLines));
        Map<String, String> all = new LinkedHashMap<>(files);
        all.put("index", String.join("\n", index) + "\n");
        return name -> all.containsKey(name) ? new ByteArrayInputStream(all.get(name).getBytes(StandardCharsets.UTF_8)) : null;
    }

    private static List<String> entries(Path root) throws IOException {
        try (Stream<Path> s = Files.list(root)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void extractsTheTreeIntoADirectoryNamedByItsHash(@TempDir Path root) throws Exception {
        Map<String, String> files = Map.of("libaimux.so.1", "lib", "aimux/python3.11/aimux_ops/__init__.py", "init");
        Path lib = Bundled.library(resources(files), root);
        assertEquals(root.resolve(HASH).resolve("libaimux.so.1"), lib);
        assertEquals("lib", Files.readString(lib));
        assertEquals("init", Files.readString(root.resolve(HASH).resolve("aimux/python3.11/aimux_ops/__init__.py")));
        assertEquals(List.of(HASH), entries(root), "no temporary directory left");
        // a second use finds the tree complete and reads nothing but the index
        Bundled.Resources indexOnly = name -> name.equals("index") ? resources(files).open("index") : null;
        assertEquals(lib, Bundled.library(indexOnly, root));
    }

    @Test
    void threadsExtractingAtOnceEndWithOneCompleteTree(@TempDir Path root) throws Exception {
        Map<String, String> files = new LinkedHashMap<>();
        files.put("libaimux.so.1", "lib");
        for (int i = 0; i < 200; i++) {
            files.put("aimux/python3.11/pkg/m" + i + ".py", "x".repeat(1000));
        }
        int n = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<Path>> got = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Callable<Path> task = () -> {
                    start.await();
                    return Bundled.library(resources(files), root);
                };
                got.add(pool.submit(task));
            }
            start.countDown();
            for (Future<Path> f : got) {
                assertEquals(root.resolve(HASH).resolve("libaimux.so.1"), f.get());
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(List.of(HASH), entries(root), "one tree, no temporary directory left");
        try (Stream<Path> s = Files.walk(root.resolve(HASH))) {
            assertEquals(files.size() + 1, s.filter(Files::isRegularFile).count(), "every file and the completion mark");
        }
    }

    @Test
    void anIndexNamingAPathOutsideItsDirectoryIsRefused(@TempDir Path root) throws Exception {
        IOException e = assertThrows(IOException.class,
                () -> Bundled.library(resources(Map.of("libaimux.so.1", "lib"), "../escaped"), root));
        assertTrue(e.getMessage().contains("outside its directory"), e.getMessage());
        assertEquals(List.of(), entries(root), "nothing extracted, no temporary directory left");
        assertFalse(Files.exists(root.getParent().resolve("escaped")));
    }

    @Test
    void anIndexNamingAFileTheJarLacksIsRefused(@TempDir Path root) throws Exception {
        IOException e = assertThrows(IOException.class,
                () -> Bundled.library(resources(Map.of("libaimux.so.1", "lib"), "aimux/missing.py"), root));
        assertTrue(e.getMessage().contains("which the jar lacks"), e.getMessage());
        assertEquals(List.of(), entries(root));
    }

    @Test
    void noIndexMeansTheJarCarriesNoLibrary(@TempDir Path root) throws Exception {
        assertNull(Bundled.library(name -> null, root));
        assertEquals(List.of(), entries(root));
    }
}
