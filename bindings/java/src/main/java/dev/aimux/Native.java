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

    /** Loaded on first use; the decoder alone never touches the library. */
    static final class Lib {
        static final Path PATH;
        static final MethodHandle ABI_VERSION, CALL, STREAM, STREAM_NEXT, STREAM_CANCEL, STREAM_FREE,
                ERROR_CODE, ERROR_MESSAGE, ERROR_JSON, ERROR_FREE, STRING_FREE;
        /** Why loading failed (reported on every use, not only the first), or null. */
        private static final Throwable FAILURE;

        static {
            Path path = null;
            MethodHandle[] hs = new MethodHandle[11];
            Throwable failure = null;
            try {
                path = locate();
                Linker linker = Linker.nativeLinker();
                SymbolLookup lib = SymbolLookup.libraryLookup(path, Arena.global());
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
                            .orElseThrow(() -> new UnsatisfiedLinkError(p + ": symbol " + name + " not found"));
                    hs[i] = linker.downcallHandle(sym, fds[i]);
                }
                int abi = (int) hs[0].invokeExact();
                if (abi != AimuxManifest.ABI_VERSION) {
                    throw new UnsatisfiedLinkError(path + " has ABI version " + abi
                            + "; this binding was generated for " + AimuxManifest.ABI_VERSION);
                }
            } catch (Throwable t) {
                failure = t;
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
        }

        /** Throws a fresh UnsatisfiedLinkError (with the original failure as cause) if loading failed. */
        static void check() {
            if (FAILURE != null) {
                UnsatisfiedLinkError e = new UnsatisfiedLinkError("libaimux could not be loaded: " + FAILURE.getMessage());
                e.initCause(FAILURE);
                throw e;
            }
        }
    }

    /**
     * {@code -Daimux.lib}, else {@code $AIMUX_LIB}, else {@code <repo>/native/build/libaimux.so} found by
     * walking up from where this class was loaded, then from the working directory.
     */
    static Path locate() {
        String p = System.getProperty("aimux.lib");
        if (p == null || p.isEmpty()) {
            p = System.getenv("AIMUX_LIB");
        }
        if (p != null && !p.isEmpty()) {
            Path path = Path.of(p).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError("libaimux not found at " + path + " (from AIMUX_LIB / -Daimux.lib)");
            }
            return path;
        }
        List<Path> starts = new ArrayList<>();
        try {
            var src = Native.class.getProtectionDomain().getCodeSource();
            if (src != null) {
                starts.add(Path.of(src.getLocation().toURI()).toAbsolutePath());
            }
        } catch (URISyntaxException | SecurityException | IllegalArgumentException ignored) {
            // fall back to the working directory
        }
        starts.add(Path.of("").toAbsolutePath());
        List<Path> tried = new ArrayList<>();
        for (Path start : starts) {
            for (Path d = start; d != null; d = d.getParent()) {
                Path cand = d.resolve("native/build/libaimux.so");
                tried.add(cand);
                if (Files.isRegularFile(cand)) {
                    return cand;
                }
            }
        }
        throw new UnsatisfiedLinkError("libaimux.so not found; set AIMUX_LIB. Tried: " + tried);
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
