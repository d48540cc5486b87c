package dev.aimux;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The FFM backend ({@link NativeBackend}, JDK 22+): downcall handles on the library's symbols. This file
 * alone is compiled with {@code --release 22} (bindings/java/pom.xml); {@link Native} loads it by name, only
 * on a JDK that has the API, so the jar's other classes run on JDK 17.
 */
final class FfmNative implements NativeBackend.Loader {
    @Override
    public String name() {
        return "ffm";
    }

    @Override
    public NativeBackend open(Path file) throws Native.LoadFailure {
        return new Bound(file.toString(), SymbolLookup.libraryLookup(file, Arena.global()));
    }

    @Override
    public NativeBackend openSystem(String soname) throws Native.LoadFailure {
        return new Bound(soname, SymbolLookup.libraryLookup(soname, Arena.global()));
    }

    private static final class Bound implements NativeBackend {
        private final MethodHandle abiVersion, call, stream, streamNext, streamCancel, streamFree, errorCode,
                errorMessage, errorJson, errorFree, stringFree;
        /** Null when the library lacks them (extensions below the contract). */
        private final MethodHandle nextBatch, poll, toolResult;

        Bound(String where, SymbolLookup lib) throws Native.LoadFailure {
            Linker linker = Linker.nativeLinker();
            abiVersion = required(linker, lib, where, "aimux_abi_version", FunctionDescriptor.of(JAVA_INT));
            call = required(linker, lib, where, "aimux_call", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            stream = required(linker, lib, where, "aimux_stream", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            streamNext = required(linker, lib, where, "aimux_stream_next", FunctionDescriptor.of(ADDRESS, JAVA_LONG, ADDRESS));
            streamCancel = required(linker, lib, where, "aimux_stream_cancel", FunctionDescriptor.ofVoid(JAVA_LONG));
            streamFree = required(linker, lib, where, "aimux_stream_free", FunctionDescriptor.ofVoid(JAVA_LONG));
            errorCode = required(linker, lib, where, "aimux_error_code", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            errorMessage = required(linker, lib, where, "aimux_error_message", FunctionDescriptor.of(ADDRESS, ADDRESS));
            errorJson = required(linker, lib, where, "aimux_error_json", FunctionDescriptor.of(ADDRESS, ADDRESS));
            errorFree = required(linker, lib, where, "aimux_error_free", FunctionDescriptor.ofVoid(ADDRESS));
            stringFree = required(linker, lib, where, "aimux_string_free", FunctionDescriptor.ofVoid(ADDRESS));
            FunctionDescriptor batchFd = FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS);
            Optional<MemorySegment> nb = lib.find("aimux_stream_next_batch");
            Optional<MemorySegment> pl = lib.find("aimux_stream_poll");
            boolean batches = nb.isPresent() && pl.isPresent();
            nextBatch = batches ? linker.downcallHandle(nb.get(), batchFd) : null;
            poll = batches ? linker.downcallHandle(pl.get(), batchFd) : null;
            toolResult = lib.find("aimux_stream_tool_result")
                    .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS)))
                    .orElse(null);
        }

        private static MethodHandle required(Linker linker, SymbolLookup lib, String where, String name,
                FunctionDescriptor fd) throws Native.LoadFailure {
            MemorySegment sym = lib.find(name).orElseThrow(() -> Native.missingSymbol(where, name));
            return linker.downcallHandle(sym, fd);
        }

        private static MemorySegment cstr(Arena arena, String s) {
            return s == null ? MemorySegment.NULL : arena.allocateFrom(s, StandardCharsets.UTF_8);
        }

        @Override
        public int abiVersion() {
            try {
                return (int) abiVersion.invokeExact();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public long call(String op, String params, long[] out) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment res = arena.allocate(ADDRESS);
                MemorySegment err = (MemorySegment) call.invokeExact(cstr(arena, op), cstr(arena, params), res);
                out[0] = res.get(ADDRESS, 0).address();
                return err.address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public long stream(String op, String params, long[] out) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment handle = arena.allocate(JAVA_LONG);
                MemorySegment err = (MemorySegment) stream.invokeExact(cstr(arena, op), cstr(arena, params), handle);
                out[0] = handle.get(JAVA_LONG, 0);
                return err.address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public long streamNext(long handle, long[] out) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment res = arena.allocate(ADDRESS);
                MemorySegment err = (MemorySegment) streamNext.invokeExact(handle, res);
                out[0] = res.get(ADDRESS, 0).address();
                return err.address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public boolean hasBatches() {
            return nextBatch != null;
        }

        @Override
        public long streamBatch(long handle, long max, boolean blocking, long[] out, int[] ended) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment res = arena.allocate(ADDRESS);
                MemorySegment end = arena.allocate(JAVA_INT);
                MemorySegment err = blocking
                        ? (MemorySegment) nextBatch.invokeExact(handle, max, res, end)
                        : (MemorySegment) poll.invokeExact(handle, max, res, end);
                out[0] = res.get(ADDRESS, 0).address();
                ended[0] = end.get(JAVA_INT, 0);
                return err.address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public boolean hasToolResult() {
            return toolResult != null;
        }

        @Override
        public long streamToolResult(long handle, String toolCallId, String answerJson) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment err = (MemorySegment) toolResult.invokeExact(handle, cstr(arena, toolCallId),
                        cstr(arena, answerJson));
                return err.address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public void streamCancel(long handle) {
            try {
                streamCancel.invokeExact(handle);
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public void streamFree(long handle) {
            try {
                streamFree.invokeExact(handle);
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public int errorCode(long err) {
            try {
                return (int) errorCode.invokeExact(MemorySegment.ofAddress(err));
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public long errorMessage(long err) {
            try {
                return ((MemorySegment) errorMessage.invokeExact(MemorySegment.ofAddress(err))).address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public long errorJson(long err) {
            try {
                return ((MemorySegment) errorJson.invokeExact(MemorySegment.ofAddress(err))).address();
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public void errorFree(long err) {
            try {
                errorFree.invokeExact(MemorySegment.ofAddress(err));
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }

        @Override
        public String read(long s) {
            return MemorySegment.ofAddress(s).reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
        }

        @Override
        public void stringFree(long s) {
            try {
                stringFree.invokeExact(MemorySegment.ofAddress(s));
            } catch (Throwable t) {
                throw Native.rethrow(t);
            }
        }
    }
}
