package dev.aimux;

import dev.aimux.errors.AimuxManifest;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The calls into libaimux (native/aimux.h), through the backend this JVM has ({@link NativeBackend}: FFM on
 * JDK 22+, JNA on JDK 17-21), found the one way every binding finds it. Every {@code char *} and
 * {@code aimux_error_t *} the library hands over is freed here, exactly once, before the Java value leaves
 * this class.
 */
final class Native {
    private Native() {}

    /** The name the system loader knows the library by (its SONAME). */
    static final String SONAME = "libaimux.so.1";

    static final String FIX = "Fix: install the library (`make install PREFIX=<dir>` in an aimux-ops checkout) and run "
            + "with -Djava.library.path=<dir>/lib or LD_LIBRARY_PATH=<dir>/lib (or register it with ldconfig), "
            + "or set AIMUX_LIB (or -Daimux.lib) to the path of libaimux.so.1";

    /** Why the library cannot be used: reported as a 207 RuntimeInitError on every use. */
    static final class LoadFailure extends Exception {
        private static final long serialVersionUID = 1L;

        LoadFailure(String message) {
            super(message);
        }
    }

    /** A library that was found: where, and the backend bound to it. */
    record Found(Path path, NativeBackend backend) {}

    /** The FFM API is final from this JDK on; before it the binding calls C through JNA. */
    static final int FFM_FEATURE = 22;

    /** The backend of this JVM: FFM on JDK 22+, else JNA ({@code -Daimux.backend=jna|ffm} picks one). */
    static NativeBackend.Loader loader() throws LoadFailure {
        String pick = System.getProperty("aimux.backend", "");
        boolean ffm = pick.isEmpty() ? Runtime.version().feature() >= FFM_FEATURE : pick.equals("ffm");
        if (!pick.isEmpty() && !pick.equals("ffm") && !pick.equals("jna")) {
            throw new LoadFailure("aimux: -Daimux.backend=" + pick + " is neither ffm nor jna. Fix: set it to one of them, "
                    + "or unset it (FFM on JDK " + FFM_FEATURE + "+, JNA before)");
        }
        if (ffm) {
            if (Runtime.version().feature() < FFM_FEATURE) {
                throw new LoadFailure("aimux: -Daimux.backend=ffm needs JDK " + FFM_FEATURE + "+; this is JDK "
                        + Runtime.version().feature() + ". Fix: unset it (JNA is used before JDK " + FFM_FEATURE + ")");
            }
            try {
                return (NativeBackend.Loader) Class.forName("dev.aimux.FfmNative").getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | LinkageError e) {
                throw new LoadFailure("aimux: this jar has no FFM backend (dev.aimux.FfmNative): " + e
                        + ". Fix: use a jar built by `make -C bindings/java` (JDK 22+)");
            }
        }
        try {
            return new JnaNative();
        } catch (LinkageError e) {
            throw new LoadFailure("aimux: on JDK " + Runtime.version().feature() + " the binding calls libaimux through "
                    + "JNA (net.java.dev.jna:jna, a dependency of dev.aimux:aimux-ops), which cannot be used: " + e
                    + ". Fix: put the jna jar on the class path (or module path), or run on JDK " + FFM_FEATURE + "+");
        }
    }

    /** A library at {@code where} that lacks one of the contract's symbols. */
    static LoadFailure missingSymbol(String where, String name) {
        return new LoadFailure("aimux: " + where + " has no symbol " + name + ". " + FIX);
    }

    /** Loaded on first use; the decoder alone never touches the library. */
    static final class Lib {
        static final Path PATH;
        /** The bound backend, or null when loading failed. */
        static final NativeBackend C;
        /** Which backend ({@code ffm} or {@code jna}), or null when none could be chosen. */
        static final String BACKEND;
        /** Why loading failed (reported on every use, not only the first), or null. */
        private static final String FAILURE;

        static {
            Path path = null;
            NativeBackend c = null;
            String backend = null;
            String failure = null;
            try {
                NativeBackend.Loader loader = loader();
                backend = loader.name();
                Found found = locate(loader);
                path = found.path();
                int abi = found.backend().abiVersion();
                if (abi != AimuxManifest.ABI_VERSION) {
                    throw new LoadFailure("aimux: " + path + " has ABI version " + abi + "; this binding was generated for "
                            + AimuxManifest.ABI_VERSION + ". Fix: install the libaimux that matches this jar, or set AIMUX_LIB to it");
                }
                c = found.backend();
            } catch (LoadFailure f) {
                failure = f.getMessage();
            } catch (IllegalCallerException t) {
                failure = "aimux: the JVM refused native access to libaimux: " + t.getMessage() + ". Fix: run it with "
                        + "--enable-native-access=ALL-UNNAMED (class path) or --enable-native-access=dev.aimux (module path)";
            } catch (Throwable t) {
                failure = "aimux: cannot use libaimux" + (path == null ? "" : " from " + path) + ": " + t + ". " + FIX;
            }
            PATH = path;
            C = c;
            BACKEND = backend;
            FAILURE = failure;
        }

        /** Throws a fresh 207 RuntimeInitError (an AimuxException) if loading failed. */
        static void check() {
            if (FAILURE != null) {
                throw Envelopes.runtimeInit(FAILURE);
            }
        }
    }

    /**
     * Finds the library the one way every binding does (CONTRACT §3): {@code -Daimux.lib}, else
     * {@code $AIMUX_LIB}; else {@code libaimux.so.1} in a {@code java.library.path} directory, then through
     * the system loader ({@code LD_LIBRARY_PATH}, the loader cache, the default directories); else the
     * build the jar carries ({@link Bundled}, extracted into a cache directory); else the in-repo build
     * {@code <repo>/native/build/libaimux.so}, found by walking up from where this class was loaded
     * (development only).
     */
    static Found locate(NativeBackend.Loader loader) throws LoadFailure {
        String p = System.getProperty("aimux.lib");
        String from = "-Daimux.lib";
        if (p == null || p.isEmpty()) {
            p = System.getenv("AIMUX_LIB");
            from = "AIMUX_LIB";
        }
        if (p != null && !p.isEmpty()) {
            Path path = Path.of(p).toAbsolutePath();
            String why = Files.isRegularFile(path) ? null : "no such file";
            if (why == null) {
                try {
                    return new Found(path, loader.open(path));
                } catch (IllegalArgumentException e) {
                    why = e.getMessage();
                }
            }
            throw new LoadFailure("aimux: cannot load libaimux from " + from + "=" + path + ": " + why + ". Fix: point "
                    + from + " at an installed libaimux.so.1 (<prefix>/lib after `make install PREFIX=<prefix>`), "
                    + "or unset it to use the system loader");
        }
        List<String> tried = new ArrayList<>();
        tried.add("AIMUX_LIB and -Daimux.lib (not set)");
        String jlp = System.getProperty("java.library.path", "");
        List<String> jlpTried = new ArrayList<>();
        for (String dir : jlp.split(java.io.File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path cand = Path.of(dir, SONAME).toAbsolutePath();
            if (Files.isRegularFile(cand)) {
                try {
                    return new Found(cand, loader.open(cand));
                } catch (IllegalArgumentException e) {
                    jlpTried.add(cand + ": " + e.getMessage());
                }
            }
        }
        tried.add(SONAME + " in java.library.path=" + jlp + (jlpTried.isEmpty() ? " (not there)" : ": " + jlpTried));
        try {
            NativeBackend bound = loader.openSystem(SONAME);
            return new Found(mappedPath(), bound);
        } catch (IllegalArgumentException e) {
            String ld = System.getenv("LD_LIBRARY_PATH");
            tried.add(SONAME + " through the system loader (LD_LIBRARY_PATH=" + (ld == null ? "" : ld)
                    + ", the loader cache, the default directories): " + e.getMessage());
        }
        try {
            Path bundled = Bundled.library();
            if (bundled == null) {
                tried.add("the jar's own " + Bundled.PLATFORM + " build (this jar carries none)");
            } else {
                try {
                    return new Found(bundled, loader.open(bundled));
                } catch (IllegalArgumentException e) {
                    tried.add("the jar's own build, extracted to " + bundled + ": " + e.getMessage());
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            tried.add("the jar's own build, extracted under " + Bundled.cacheRoot() + ": " + e);
        }
        Path dev = inRepoBuild();
        if (dev != null) {
            try {
                return new Found(dev, loader.open(dev));
            } catch (IllegalArgumentException e) {
                tried.add("the in-repo build " + dev + ": " + e.getMessage());
            }
        }
        throw new LoadFailure("aimux: cannot load libaimux. Tried: " + String.join("; ", tried) + ". " + FIX);
    }

    /** {@code <repo>/native/build/libaimux.so} above where this class was loaded from, or null. */
    private static Path inRepoBuild() {
        try {
            var src = Native.class.getProtectionDomain().getCodeSource();
            if (src == null) {
                return null;
            }
            for (Path d = Path.of(src.getLocation().toURI()).toAbsolutePath(); d != null; d = d.getParent()) {
                Path cand = d.resolve("native/build/libaimux.so");
                if (Files.isRegularFile(cand) && Files.isRegularFile(d.resolve("native/aimux.h"))) {
                    return cand;
                }
            }
        } catch (URISyntaxException | SecurityException | IllegalArgumentException ignored) {
            // no code source to start from
        }
        return null;
    }

    /** The file the system loader mapped for {@code libaimux.so.1} (from /proc/self/maps), else the SONAME. */
    static Path mappedPath() {
        try (var lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.map(l -> l.indexOf('/') >= 0 ? l.substring(l.indexOf('/')).trim() : "")
                    .filter(f -> !f.isEmpty() && Path.of(f).getFileName().toString().startsWith("libaimux.so"))
                    .findFirst().map(Path::of).orElse(Path.of(SONAME));
        } catch (java.io.IOException | RuntimeException e) {
            return Path.of(SONAME);
        }
    }

    // ---- strings and errors ------------------------------------------------------------------------

    /** Reads a library-owned C string and frees it (NULL -> null). */
    static String takeString(long s) {
        if (s == 0) {
            return null;
        }
        try {
            return Lib.C.read(s);
        } finally {
            Lib.C.stringFree(s);
        }
    }

    /** Turns a library-owned error into the decoded exception and frees it. */
    static AimuxException takeError(long err) {
        NativeBackend c = Lib.C;
        try {
            String json = takeString(c.errorJson(err));
            if (json != null) {
                try {
                    return AimuxDecoder.decode(json);
                } catch (IllegalArgumentException notAnEnvelope) {
                    // fall through to the C accessors
                }
            }
            int code = c.errorCode(err);
            String msg = takeString(c.errorMessage(err));
            return Envelopes.fromCodeAndMessage(code, msg);
        } finally {
            c.errorFree(err);
        }
    }

    // ---- calls ---------------------------------------------------------------------------------------

    static String call(String op, String params) {
        Lib.check();
        long[] out = new long[1];
        long err = Lib.C.call(op, params, out);
        if (err != 0) {
            takeString(out[0]); // NULL per the ABI; freed should a library ever set both
            throw takeError(err).namingOwnApi();
        }
        String result = takeString(out[0]);
        if (result == null) {
            throw new IllegalStateException("aimux_call returned neither a result nor an error");
        }
        return result;
    }

    static long stream(String op, String params) {
        Lib.check();
        long[] out = new long[1];
        long err = Lib.C.stream(op, params, out);
        if (err != 0) {
            throw takeError(err).namingOwnApi();
        }
        return out[0];
    }

    /** The next event's JSON, or null when the stream ended. */
    static String streamNext(long handle) {
        Lib.check();
        long[] out = new long[1];
        long err = Lib.C.streamNext(handle, out);
        if (err != 0) {
            takeString(out[0]);
            throw takeError(err);
        }
        return takeString(out[0]);
    }

    /** Whether the loaded library has the batch reads ({@code aimux_stream_next_batch}, {@code aimux_stream_poll}). */
    static boolean batchesLoaded() {
        return Lib.FAILURE == null && Lib.C.hasBatches();
    }

    /** Which backend calls the library: {@code ffm} (JDK 22+) or {@code jna} (JDK 17-21); null if none could be chosen. */
    static String backend() {
        return Lib.BACKEND;
    }

    /** A batch of events: the JSON array text ({@code [e1,e2,...]}) or null, and whether no event follows it. */
    record Batch(String json, boolean ended) {}

    /**
     * The next events of a stream, at most {@code max}: blocking, {@code aimux_stream_next_batch} (no batch only at
     * the end); else {@code aimux_stream_poll} (never blocks; no batch when nothing is ready).
     */
    static Batch streamBatch(long handle, long max, boolean blocking) {
        Lib.check();
        long[] out = new long[1];
        int[] ended = new int[1];
        long err = Lib.C.streamBatch(handle, max, blocking, out, ended);
        if (err != 0) {
            takeString(out[0]); // NULL per the ABI; freed should a library ever set both
            throw takeError(err);
        }
        return new Batch(takeString(out[0]), ended[0] != 0);
    }

    /** Answers one host tool call ({@code aimux_stream_tool_result}); a refusal throws its AimuxException. */
    static void streamToolResult(long handle, String toolCallId, String answerJson) {
        Lib.check();
        if (!Lib.C.hasToolResult()) {
            throw Envelopes.local(dev.aimux.errors.AimuxErrorType.AIMUX_UNSUPPORTED_FUNCTIONALITY,
                    "the loaded libaimux has no aimux_stream_tool_result (host tools need a newer library)", null);
        }
        long err = Lib.C.streamToolResult(handle, toolCallId, answerJson);
        if (err != 0) {
            throw takeError(err);
        }
    }

    static void streamCancel(long handle) {
        Lib.check();
        Lib.C.streamCancel(handle);
    }

    static void streamFree(long handle) {
        Lib.check();
        Lib.C.streamFree(handle);
    }

    static int abiVersion() {
        Lib.check();
        return Lib.C.abiVersion();
    }

    /** A Throwable out of a downcall, rethrown unchecked (RuntimeException and Error as they are). */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
