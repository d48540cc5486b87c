package dev.aimux;

import com.sun.jna.Function;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

/**
 * The JNA backend ({@link NativeBackend}, JDK 17-21, where the FFM API is missing or a preview): each symbol a
 * {@link Function} of the library, opened as the FFM backend opens it ({@code RTLD_LAZY}, not global). Strings
 * cross as UTF-8 bytes this class writes and reads itself (JNA's own conversion follows {@code jna.encoding} or
 * the platform's, which under an empty environment on JDK 17 is ASCII).
 */
final class JnaNative implements NativeBackend.Loader {
    private static final int RTLD_LAZY = 1;
    private static final Map<String, Object> OPTIONS = Map.of(Library.OPTION_OPEN_FLAGS, RTLD_LAZY);

    @Override
    public String name() {
        return "jna";
    }

    @Override
    public NativeBackend open(Path file) throws Native.LoadFailure {
        NativeLibrary lib;
        try {
            lib = NativeLibrary.getInstance(file.toString(), OPTIONS);
        } catch (UnsatisfiedLinkError e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        return new Bound(file.toString(), lib);
    }

    /** {@code dlopen(soname)} itself (JNA's own search would look in more places than the system loader does). */
    @Override
    public NativeBackend openSystem(String soname) throws Native.LoadFailure {
        NativeLibrary process = NativeLibrary.getProcess();
        Function dlopen = process.getFunction("dlopen");
        // Between dlopen and reading dlerror's text nothing may link a native method (the JVM's dlsym would
        // clear or free it): dlerror is looked up first and called as dlopen is, and the read is used once before.
        Function dlerror = process.getFunction("dlerror");
        Memory name = utf8(soname);
        name.getString(0, "UTF-8");
        long handle = dlopen.invokeLong(new Object[] {name, RTLD_LAZY});
        if (handle == 0) {
            long why = dlerror.invokeLong(new Object[0]);
            throw new IllegalArgumentException(why == 0 ? "dlopen failed" : new Pointer(why).getString(0, "UTF-8"));
        }
        Path mapped = Native.mappedPath();
        return open(mapped.isAbsolute() ? mapped : Path.of(soname));
    }

    /** NUL-terminated UTF-8 (Java null: NULL). */
    private static Memory utf8(String s) {
        if (s == null) {
            return null;
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        Memory m = new Memory(b.length + 1L);
        m.write(0, b, 0, b.length);
        m.setByte(b.length, (byte) 0);
        return m;
    }

    private static Pointer ptr(long address) {
        return address == 0 ? null : new Pointer(address);
    }

    private static final class Bound implements NativeBackend {
        private final Function abiVersion, call, stream, streamNext, streamCancel, streamFree, errorCode,
                errorMessage, errorJson, errorFree, stringFree;
        /** Null when the library lacks them (extensions below the contract). */
        private final Function nextBatch, poll, toolResult;

        Bound(String where, NativeLibrary lib) throws Native.LoadFailure {
            abiVersion = required(lib, where, "aimux_abi_version");
            call = required(lib, where, "aimux_call");
            stream = required(lib, where, "aimux_stream");
            streamNext = required(lib, where, "aimux_stream_next");
            streamCancel = required(lib, where, "aimux_stream_cancel");
            streamFree = required(lib, where, "aimux_stream_free");
            errorCode = required(lib, where, "aimux_error_code");
            errorMessage = required(lib, where, "aimux_error_message");
            errorJson = required(lib, where, "aimux_error_json");
            errorFree = required(lib, where, "aimux_error_free");
            stringFree = required(lib, where, "aimux_string_free");
            Function nb = optional(lib, "aimux_stream_next_batch");
            Function pl = optional(lib, "aimux_stream_poll");
            nextBatch = nb != null && pl != null ? nb : null;
            poll = nextBatch != null ? pl : null;
            toolResult = optional(lib, "aimux_stream_tool_result");
        }

        private static Function required(NativeLibrary lib, String where, String name) throws Native.LoadFailure {
            Function f = optional(lib, name);
            if (f == null) {
                throw Native.missingSymbol(where, name);
            }
            return f;
        }

        private static Function optional(NativeLibrary lib, String name) {
            try {
                return lib.getFunction(name);
            } catch (UnsatisfiedLinkError e) {
                return null;
            }
        }

        @Override
        public int abiVersion() {
            return abiVersion.invokeInt(new Object[0]);
        }

        @Override
        public long call(String op, String params, long[] out) {
            Memory res = new Memory(8);
            res.setLong(0, 0);
            long err = call.invokeLong(new Object[] {utf8(op), utf8(params), res});
            out[0] = res.getLong(0);
            return err;
        }

        @Override
        public long stream(String op, String params, long[] out) {
            Memory handle = new Memory(8);
            handle.setLong(0, 0);
            long err = stream.invokeLong(new Object[] {utf8(op), utf8(params), handle});
            out[0] = handle.getLong(0);
            return err;
        }

        @Override
        public long streamNext(long handle, long[] out) {
            Memory res = new Memory(8);
            res.setLong(0, 0);
            long err = streamNext.invokeLong(new Object[] {handle, res});
            out[0] = res.getLong(0);
            return err;
        }

        @Override
        public boolean hasBatches() {
            return nextBatch != null;
        }

        @Override
        public long streamBatch(long handle, long max, boolean blocking, long[] out, int[] ended) {
            Memory res = new Memory(8);
            res.setLong(0, 0);
            Memory end = new Memory(4);
            end.setInt(0, 0);
            long err = (blocking ? nextBatch : poll).invokeLong(new Object[] {handle, max, res, end});
            out[0] = res.getLong(0);
            ended[0] = end.getInt(0);
            return err;
        }

        @Override
        public boolean hasToolResult() {
            return toolResult != null;
        }

        @Override
        public long streamToolResult(long handle, String toolCallId, String answerJson) {
            return toolResult.invokeLong(new Object[] {handle, utf8(toolCallId), utf8(answerJson)});
        }

        @Override
        public void streamCancel(long handle) {
            streamCancel.invokeVoid(new Object[] {handle});
        }

        @Override
        public void streamFree(long handle) {
            streamFree.invokeVoid(new Object[] {handle});
        }

        @Override
        public int errorCode(long err) {
            return errorCode.invokeInt(new Object[] {ptr(err)});
        }

        @Override
        public long errorMessage(long err) {
            return errorMessage.invokeLong(new Object[] {ptr(err)});
        }

        @Override
        public long errorJson(long err) {
            return errorJson.invokeLong(new Object[] {ptr(err)});
        }

        @Override
        public void errorFree(long err) {
            errorFree.invokeVoid(new Object[] {ptr(err)});
        }

        @Override
        public String read(long s) {
            return new Pointer(s).getString(0, "UTF-8");
        }

        @Override
        public void stringFree(long s) {
            stringFree.invokeVoid(new Object[] {ptr(s)});
        }
    }
}
