package dev.aimux;

import dev.aimux.errors.AimuxManifest;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The FFM downcalls into libaimux (native/aimux.h). Every {@code char *} and {@code aimux_error_t *}
 * the library hands over is freed here, exactly once, before the Java value leaves this class.
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

    /** A library that was found: where, and its symbols. */
    record Found(Path path, SymbolLookup lookup) {}

    /** Loaded on first use; the decoder alone never touches the library. */
    static final class Lib {
        static final Path PATH;
        static final MethodHandle ABI_VERSION, CALL, STREAM, STREAM_NEXT, STREAM_CANCEL, STREAM_FREE,
                ERROR_CODE, ERROR_MESSAGE, ERROR_JSON, ERROR_FREE, STRING_FREE;
        /**
         * Extensions (aimux.h, below the contract): {@code aimux_stream_next_batch} and {@code aimux_stream_poll},
         * both null when the library lacks either (a stream then reads one event per {@code aimux_stream_next}).
         */
        static final MethodHandle STREAM_NEXT_BATCH, STREAM_POLL;
        /** {@code aimux_stream_tool_result} (host tools), null when the library lacks it. */
        static final MethodHandle STREAM_TOOL_RESULT;
        /** Why loading failed (reported on every use, not only the first), or null. */
        private static final String FAILURE;

        static {
            Path path = null;
            MethodHandle[] hs = new MethodHandle[11];
            MethodHandle nextBatch = null;
            MethodHandle poll = null;
            MethodHandle toolResult = null;
            String failure = null;
            try {
                Found found = locate();
                path = found.path();
                Linker linker = Linker.nativeLinker();
                SymbolLookup lib = found.lookup();
                String[] names = {"aimux_abi_version", "aimux_call", "aimux_stream", "aimux_stream_next",
                    "aimux_stream_cancel", "aimux_stream_free", "aimux_error_code", "aimux_error_message",
                    "aimux_error_json", "aimux_error_free", "aimux_string_free"};
                FunctionDescriptor[] fds = {
                    FunctionDescriptor.of(JAVA_INT),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                    FunctionDescriptor.of(ADDRESS, JAVA_LONG, ADDRESS),
                    FunctionDescriptor.ofVoid(JAVA_LONG),
                    FunctionDescriptor.ofVoid(JAVA_LONG),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS),
                    FunctionDescriptor.of(ADDRESS, ADDRESS),
                    FunctionDescriptor.of(ADDRESS, ADDRESS),
                    FunctionDescriptor.ofVoid(ADDRESS),
                    FunctionDescriptor.ofVoid(ADDRESS),
                };
                for (int i = 0; i < names.length; i++) {
                    final String name = names[i];
                    final Path p = path;
                    MemorySegment sym = lib.find(name)
                            .orElseThrow(() -> new LoadFailure("aimux: " + p + " has no symbol " + name + ". " + FIX));
                    hs[i] = linker.downcallHandle(sym, fds[i]);
                }
                FunctionDescriptor batchFd = FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS);
                var nb = lib.find("aimux_stream_next_batch");
                var pl = lib.find("aimux_stream_poll");
                if (nb.isPresent() && pl.isPresent()) {
                    nextBatch = linker.downcallHandle(nb.get(), batchFd);
                    poll = linker.downcallHandle(pl.get(), batchFd);
                }
                var tr = lib.find("aimux_stream_tool_result");
                if (tr.isPresent()) {
                    toolResult = linker.downcallHandle(tr.get(), FunctionDescriptor.of(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
                }
                int abi = (int) hs[0].invokeExact();
                if (abi != AimuxManifest.ABI_VERSION) {
                    throw new LoadFailure("aimux: " + path + " has ABI version " + abi + "; this binding was generated for "
                            + AimuxManifest.ABI_VERSION + ". Fix: install the libaimux that matches this jar, or set AIMUX_LIB to it");
                }
            } catch (LoadFailure f) {
                failure = f.getMessage();
            } catch (IllegalCallerException t) {
                failure = "aimux: the JVM refused native access to libaimux: " + t.getMessage() + ". Fix: run it with "
                        + "--enable-native-access=ALL-UNNAMED (class path) or --enable-native-access=dev.aimux (module path)";
            } catch (Throwable t) {
                failure = "aimux: cannot use libaimux" + (path == null ? "" : " from " + path) + ": " + t + ". " + FIX;
            }
            PATH = path;
            FAILURE = failure;
            ABI_VERSION = hs[0];
            CALL = hs[1];
            STREAM = hs[2];
            STREAM_NEXT = hs[3];
            STREAM_CANCEL = hs[4];
            STREAM_FREE = hs[5];
            ERROR_CODE = hs[6];
            ERROR_MESSAGE = hs[7];
            ERROR_JSON = hs[8];
            ERROR_FREE = hs[9];
            STRING_FREE = hs[10];
            STREAM_NEXT_BATCH = nextBatch;
            STREAM_POLL = poll;
            STREAM_TOOL_RESULT = toolResult;
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
    static Found locate() throws LoadFailure {
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
                    return new Found(path, SymbolLookup.libraryLookup(path, Arena.global()));
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
                    return new Found(cand, SymbolLookup.libraryLookup(cand, Arena.global()));
                } catch (IllegalArgumentException e) {
                    jlpTried.add(cand + ": " + e.getMessage());
                }
            }
        }
        tried.add(SONAME + " in java.library.path=" + jlp + (jlpTried.isEmpty() ? " (not there)" : ": " + jlpTried));
        try {
            SymbolLookup lookup = SymbolLookup.libraryLookup(SONAME, Arena.global());
            return new Found(mappedPath(), lookup);
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
                    return new Found(bundled, SymbolLookup.libraryLookup(bundled, Arena.global()));
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
                return new Found(dev, SymbolLookup.libraryLookup(dev, Arena.global()));
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
    private static Path mappedPath() {
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
    static String takeString(MemorySegment s) {
        if (s == null || s.equals(MemorySegment.NULL)) {
            return null;
        }
        try {
            return s.reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
        } finally {
            stringFree(s);
        }
    }

    private static void stringFree(MemorySegment s) {
        try {
            Lib.STRING_FREE.invokeExact(s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Turns a library-owned error into the decoded exception and frees it. */
    static AimuxException takeError(MemorySegment err) {
        try {
            String json = takeString((MemorySegment) Lib.ERROR_JSON.invokeExact(err));
            if (json != null) {
                try {
                    return AimuxDecoder.decode(json);
                } catch (IllegalArgumentException notAnEnvelope) {
                    // fall through to the C accessors
                }
            }
            int code = (int) Lib.ERROR_CODE.invokeExact(err);
            String msg = takeString((MemorySegment) Lib.ERROR_MESSAGE.invokeExact(err));
            return Envelopes.fromCodeAndMessage(code, msg);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            try {
                Lib.ERROR_FREE.invokeExact(err);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
    }

    private static boolean isNull(MemorySegment s) {
        return s.equals(MemorySegment.NULL);
    }

    /** A C string argument; Java null becomes NULL (the core answers 204). */
    private static MemorySegment cstr(Arena arena, String s) {
        return s == null ? MemorySegment.NULL : arena.allocateFrom(s, StandardCharsets.UTF_8);
    }

    // ---- calls ---------------------------------------------------------------------------------------

    static String call(String op, String params) {
        Lib.check();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment err = (MemorySegment) Lib.CALL.invokeExact(cstr(arena, op), cstr(arena, params), out);
            if (!isNull(err)) {
                throw takeError(err);
            }
            String result = takeString(out.get(ADDRESS, 0));
            if (result == null) {
                throw new IllegalStateException("aimux_call returned neither a result nor an error");
            }
            return result;
        } catch (AimuxException | IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long stream(String op, String params) {
        Lib.check();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            MemorySegment err = (MemorySegment) Lib.STREAM.invokeExact(cstr(arena, op), cstr(arena, params), out);
            if (!isNull(err)) {
                throw takeError(err);
            }
            return out.get(JAVA_LONG, 0);
        } catch (AimuxException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The next event's JSON, or null when the stream ended. */
    static String streamNext(long handle) {
        Lib.check();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment err = (MemorySegment) Lib.STREAM_NEXT.invokeExact(handle, out);
            if (!isNull(err)) {
                throw takeError(err);
            }
            return takeString(out.get(ADDRESS, 0));
        } catch (AimuxException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether the loaded library has the batch reads ({@code aimux_stream_next_batch}, {@code aimux_stream_poll}). */
    static boolean batchesLoaded() {
        return Lib.FAILURE == null && Lib.STREAM_NEXT_BATCH != null;
    }

    /** A batch of events: the JSON array text ({@code [e1,e2,...]}) or null, and whether no event follows it. */
    record Batch(String json, boolean ended) {}

    /**
     * The next events of a stream, at most {@code max}: blocking, {@code aimux_stream_next_batch} (no batch only at
     * the end); else {@code aimux_stream_poll} (never blocks; no batch when nothing is ready).
     */
    static Batch streamBatch(long handle, long max, boolean blocking) {
        Lib.check();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment ended = arena.allocate(JAVA_INT);
            MemorySegment err = blocking
                    ? (MemorySegment) Lib.STREAM_NEXT_BATCH.invokeExact(handle, max, out, ended)
                    : (MemorySegment) Lib.STREAM_POLL.invokeExact(handle, max, out, ended);
            if (!isNull(err)) {
                takeString(out.get(ADDRESS, 0)); // NULL per the ABI; freed should a library ever set both
                throw takeError(err);
            }
            return new Batch(takeString(out.get(ADDRESS, 0)), ended.get(JAVA_INT, 0) != 0);
        } catch (AimuxException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Answers one host tool call ({@code aimux_stream_tool_result}); a refusal throws its AimuxException. */
    static void streamToolResult(long handle, String toolCallId, String answerJson) {
        Lib.check();
        if (Lib.STREAM_TOOL_RESULT == null) {
            throw Envelopes.local(dev.aimux.errors.AimuxErrorType.AIMUX_UNSUPPORTED_FUNCTIONALITY,
                    "the loaded libaimux has no aimux_stream_tool_result (host tools need a newer library)", null);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment err = (MemorySegment) Lib.STREAM_TOOL_RESULT.invokeExact(handle,
                    cstr(arena, toolCallId), cstr(arena, answerJson));
            if (!isNull(err)) {
                throw takeError(err);
            }
        } catch (AimuxException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void streamCancel(long handle) {
        Lib.check();
        try {
            Lib.STREAM_CANCEL.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void streamFree(long handle) {
        Lib.check();
        try {
            Lib.STREAM_FREE.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int abiVersion() {
        Lib.check();
        try {
            return (int) Lib.ABI_VERSION.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }

}
