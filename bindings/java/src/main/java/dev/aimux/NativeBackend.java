package dev.aimux;

import java.nio.file.Path;

/**
 * The C ABI of libaimux (native/aimux.h) as one way of calling C sees it: {@link FfmNative} (the Foreign
 * Function &amp; Memory API, JDK 22+; compiled apart, with {@code --release 22}) or {@link JnaNative} (JNA, JDK
 * 17-21). Pointers the library hands over are raw addresses (0 is NULL) and are owned by the caller,
 * {@link Native}, which frees each {@code char *} and {@code aimux_error_t *} exactly once; a backend only
 * crosses into C and back. Strings go in as NUL-terminated UTF-8 (Java null is NULL); out-parameters come back
 * in the arrays given ({@code out[0]}, {@code ended[0]}).
 */
interface NativeBackend {
    /** Opens libaimux for one backend; every method returns the backend bound to all the contract's symbols. */
    interface Loader {
        /** {@code ffm} or {@code jna}. */
        String name();

        /**
         * The library at {@code file}. IllegalArgumentException (its message the loader's reason) when it cannot
         * be loaded; {@link Native.LoadFailure} when it loads but lacks a symbol of the contract.
         */
        NativeBackend open(Path file) throws Native.LoadFailure;

        /** The library the system loader finds by {@code soname} ({@code LD_LIBRARY_PATH}, its cache, ...); as {@link #open}. */
        NativeBackend openSystem(String soname) throws Native.LoadFailure;
    }

    int abiVersion();

    /** {@code aimux_call}: the error (0 if none); the result string in {@code out[0]}. */
    long call(String op, String params, long[] out);

    /** {@code aimux_stream}: the error (0 if none); the handle in {@code out[0]}. */
    long stream(String op, String params, long[] out);

    /** {@code aimux_stream_next}: the error (0 if none); the event string (0 at the end) in {@code out[0]}. */
    long streamNext(long handle, long[] out);

    /** Whether the library has {@code aimux_stream_next_batch} and {@code aimux_stream_poll}. */
    boolean hasBatches();

    /** {@code aimux_stream_next_batch} (blocking) or {@code aimux_stream_poll}: the error; the array text and ended flag. */
    long streamBatch(long handle, long max, boolean blocking, long[] out, int[] ended);

    /** Whether the library has {@code aimux_stream_tool_result}. */
    boolean hasToolResult();

    /** {@code aimux_stream_tool_result}: the error (0 if none). */
    long streamToolResult(long handle, String toolCallId, String answerJson);

    void streamCancel(long handle);

    void streamFree(long handle);

    int errorCode(long err);

    /** {@code aimux_error_message}: a string the caller frees. */
    long errorMessage(long err);

    /** {@code aimux_error_json}: a string the caller frees. */
    long errorJson(long err);

    void errorFree(long err);

    /** The NUL-terminated UTF-8 string at {@code s} (not 0), read; not freed. */
    String read(long s);

    void stringFree(long s);
}
