/*
 * aimux.h — the C ABI of aimux-ops (libaimux.so).
 *
 * This header is the whole public C surface (CONTRACT §3). Everything below
 * the "Extensions" marker is an addition beyond the contract; the contract
 * functions above it never change meaning within one AIMUX_ABI_VERSION.
 *
 * Conventions (they apply to every function unless its comment says otherwise)
 * ---------------------------------------------------------------------------
 * Errors     A function returning `aimux_error_t *` returns NULL on success and
 *            a newly allocated error on failure. The caller owns that error and
 *            must release it with aimux_error_free(). An error is never
 *            reported as NULL: if the embedded runtime cannot start, every call
 *            returns a 207 (RUNTIME_INIT) error whose message says why.
 *
 * Out-params Every out-parameter is set to NULL / 0 on entry, before anything
 *            else happens, and written with a value only on success. A NULL
 *            out-pointer is itself an error (204 NULL_ARGUMENT), never a crash.
 *
 * Strings    Every `const char *` argument is a NUL-terminated byte string,
 *            borrowed for the duration of the call only. Bytes that are not
 *            valid UTF-8 are reported as a 201 (INVALID_UTF8) error, text that
 *            is not JSON or too large as a binding/protocol error, NULL as a
 *            204 (NULL_ARGUMENT) error.
 *            Every `char *` returned is a NUL-terminated UTF-8 string owned by
 *            the caller, released with aimux_string_free() (not free(): the
 *            library may use a different allocator).
 *
 * Threads    Every function may be called from any thread, concurrently. The
 *            core releases the interpreter lock while it waits on the network,
 *            so concurrent calls overlap. The aimux_error_* accessors are plain
 *            C: they never take the interpreter lock. An aimux_error_t itself is
 *            not synchronised: do not free it while another thread reads it.
 *            A stream from aimux_stream() is read on the thread that waits
 *            for its events. The library's own threads: a reader thread for
 *            each event-driven stream while it runs (at most
 *            AIMUX_STREAM_READER_THREADS, default 4096; see "Event-driven
 *            streams"), the idle reaper (from the first
 *            stream), one watchdog for every deadline (from the first
 *            `timeoutMs`), and a reader for a stream from aimux_stream() that
 *            only polls read (see aimux_stream_poll()). It
 *            never calls into the host from any thread.
 *
 * Loading    The library may be loaded with RTLD_LOCAL (the dlopen default,
 *            ctypes, koffi, Go and Java loaders). It needs the shared CPython
 *            runtime of the minor version it was built with (libpythonX.Y.so.1.0)
 *            and finds its own Python packages: an installed libaimux.so.1 in
 *            the payload relative to its own file (<libdir>/aimux/pythonX.Y/,
 *            or the site-packages of the wheel it came in), a development build
 *            from paths recorded when it was built. The environment variable
 *            AIMUX_PYTHONPATH (entries separated by ':') replaces either; it is
 *            read once, on the first call. A process that runs another Python
 *            version gets a 207 naming both.
 *
 * Guest      The library never changes a signal disposition or the signal mask
 *            of the host. After fork(), each process that calls gets its own
 *            connections and answers; a stream opened before the fork is a 203
 *            in the child. Pools are bounded waits: a full per-host pool is a
 *            retryable 11 (API_CALL) naming the limit, after
 *            AIMUX_POOL_TIMEOUT_MS; a stream nobody reads for
 *            AIMUX_STREAM_IDLE_TIMEOUT_MS is closed by the core (its next read
 *            is a terminal error event). docs/DESIGN.md, "The library as a
 *            guest", lists every limit and its variable.
 *
 * Errors are JSON envelopes (CONTRACT §1): {kind, code, message, error,
 * cause?, retryable, retryAfterMs?}. The codes are stable and append-only:
 * 1-99 aimux, 100-199 recording, 200-299 binding, 300-399 protocol.
 */
#ifndef AIMUX_H
#define AIMUX_H

#include <stddef.h>
#include <stdint.h>

#include "aimux_codes.h" /* AIMUX_CODE_<CONSTANT>, aimux_code_kind(): generated */

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version of this header; equal to aimux_abi_version() of a
 *  library it is compatible with. */
#define AIMUX_ABI_VERSION 1

/**
 * An error: one node of an error chain.
 *
 * Opaque. An error returned by a function is owned by the caller and released
 * with aimux_error_free(), which releases its whole chain. The nodes reached
 * through aimux_error_cause() are borrowed from the root: they stay valid
 * until the root is freed and must never be freed on their own.
 */
typedef struct aimux_error aimux_error_t;

/**
 * Returns the ABI version of the loaded library (AIMUX_ABI_VERSION of the
 * header it was built with). Never fails, never starts the runtime.
 * Thread-safe.
 */
uint32_t aimux_abi_version(void);

/**
 * Calls a request/response op (e.g. "aimux.version", "aimux.manifest",
 * "generate_text").
 *
 * `op`              the op name; borrowed. NULL → 204 error.
 * `params_json`     the params as one JSON object; borrowed. NULL → 204.
 * `out_result_json` receives the result JSON on success; set to NULL on
 *                   entry. The string is owned by the caller: release it with
 *                   aimux_string_free(). NULL → 204 error.
 *
 * Returns NULL on success, or an error owned by the caller. A stream op called
 * here is a 302 (WRONG_MODE) error; an unknown op is 300; invalid params 301.
 * Blocks until the op completes. Thread-safe; concurrent calls overlap.
 */
aimux_error_t *aimux_call(const char *op, const char *params_json, char **out_result_json);

/**
 * Starts a streaming op (e.g. "stream_text").
 *
 * `op`, `params_json` as for aimux_call(). A call op here is a 302 error.
 * `out_stream`        receives the stream handle on success; set to 0 on
 *                     entry. NULL → 204 error. Handles are never 0 and never
 *                     reused within a process. The handle must be released
 *                     with aimux_stream_free().
 *
 * Returns NULL on success, or an error owned by the caller. Failures before
 * the first event (after the retries) are returned here. Thread-safe.
 *
 * The stream is read on its reader's thread: the open reads until the first
 * event on the calling thread, and each aimux_stream_next() or
 * aimux_stream_next_batch() that finds no event waiting reads the next network
 * read on its own thread (all the events that read brought). Nothing is read
 * ahead while nobody reads: the server's bytes wait in the socket. For many
 * streams on one thread, use aimux_stream_start().
 */
aimux_error_t *aimux_stream(const char *op, const char *params_json, uint64_t *out_stream);

/**
 * Waits for the next event of a stream.
 *
 * `stream`         a handle from aimux_stream().
 * `out_event_json` receives the next event JSON ({"type": "text-delta", ...},
 *                  {"type": "finish", ...}, {"type": "error", "error":
 *                  <envelope>}); set to NULL on entry. On success it is either
 *                  an event owned by the caller (release with
 *                  aimux_string_free()), or stays NULL: the stream has ended
 *                  (after its last event, or after aimux_stream_cancel()).
 *                  NULL pointer → 204 error.
 *
 * Returns NULL on success, or an error owned by the caller: a stale, freed or
 * unknown handle is a 203 (INVALID_HANDLE) error. Failures inside the stream
 * arrive as `error` events, not as a returned error.
 * Blocks until an event arrives; a concurrent aimux_stream_cancel() from
 * another thread wakes it (it then reports the end). Thread-safe.
 */
aimux_error_t *aimux_stream_next(uint64_t stream, char **out_event_json);

/**
 * Cancels a stream: a blocked aimux_stream_next() wakes and reports the end,
 * later ones report the end too. The handle stays allocated until
 * aimux_stream_free(). An unknown or freed handle is ignored.
 * May be called from any thread, including while another thread is blocked
 * in aimux_stream_next() on the same handle.
 */
void aimux_stream_cancel(uint64_t stream);

/**
 * Releases a stream (cancelling it first if it is still running). Afterwards
 * the handle is stale: aimux_stream_next() on it returns a 203 error. An
 * unknown or already freed handle is ignored. Thread-safe.
 */
void aimux_stream_free(uint64_t stream);

/**
 * Returns the error's code (CONTRACT §1): never 0 on a root; 0 on a source
 * node (a snapshot of an external exception, reached through
 * aimux_error_cause()). Returns 0 for NULL. Plain C, thread-safe.
 */
int32_t aimux_error_code(const aimux_error_t *err);

/**
 * Returns a copy of the error's display message (UTF-8), owned by the caller:
 * release it with aimux_string_free(). Returns NULL for NULL or when out of
 * memory. Plain C, thread-safe.
 */
char *aimux_error_message(const aimux_error_t *err);

/**
 * Returns a copy of the error's JSON, owned by the caller: release it with
 * aimux_string_free(). For a root this is the whole envelope (the same bytes
 * every binding and recording sees); for a node reached through
 * aimux_error_cause() it is that node's JSON (an aimux node or a source node).
 * Returns NULL for NULL or when out of memory. Plain C, thread-safe.
 */
char *aimux_error_json(const aimux_error_t *err);

/**
 * Returns the next link of the native cause chain, or NULL at its end (or for
 * NULL): a node's `cause`, or for an AI_RetryError the last of its
 * `error.errors`. The result is borrowed from the root error: it is valid
 * until the root is freed and must not be freed itself. Plain C (no JSON
 * parsing), thread-safe.
 */
const aimux_error_t *aimux_error_cause(const aimux_error_t *err);

/**
 * Releases an error returned by any function, with its whole chain. Accepts
 * NULL. Must only be called on a root (never on a node from
 * aimux_error_cause()), and only once.
 */
void aimux_error_free(aimux_error_t *err);

/**
 * Releases a string returned by any function. Accepts NULL.
 */
void aimux_string_free(char *s);

/* ---------------------------------------------------------------------------
 * Extensions beyond CONTRACT §3 (same conventions).
 * ------------------------------------------------------------------------- */

/**
 * Decodes an envelope given as JSON text (e.g. read from a recording or a log)
 * into an error chain, exactly as if a call had returned it.
 *
 * `envelope_json` a JSON object; borrowed. NULL → 204 error.
 * `out_error`     receives the decoded error (owned by the caller, release
 *                 with aimux_error_free()); set to NULL on entry. NULL → 204.
 *
 * Returns NULL on success, or an error owned by the caller (202
 * INVALID_WIRE_JSON when the text is not an envelope, or its root `code` is
 * not an integer from 1 to 2147483647; 201 for invalid UTF-8). A decoded root
 * never has code 0.
 * Thread-safe.
 */
aimux_error_t *aimux_error_from_json(const char *envelope_json, aimux_error_t **out_error);

/**
 * Returns a copy of the node's `kind` ("aimux", "recording", "binding",
 * "protocol", or any kind a newer core sends), or "source" for a source node.
 * Decided when the error was built (by the same JSON parser every other
 * decoder agrees with), never re-read from the JSON text.
 * Owned by the caller (aimux_string_free()). NULL for NULL. Plain C.
 */
char *aimux_error_kind(const aimux_error_t *err);

/**
 * Returns a copy of the node's error name: `error.name` of an aimux node
 * (e.g. "AI_APICallError"), the `type` of a source node (e.g.
 * "ConnectionRefusedError"). NULL when the node has none, or for NULL.
 * Owned by the caller (aimux_string_free()). Plain C.
 */
char *aimux_error_name(const aimux_error_t *err);

/**
 * Returns the decoded root's own `retryable` (1 when the envelope says true,
 * else 0), as the envelope gives it, never recomputed (CONTRACT §4). 0 for a
 * cause node (the member is root-only) and for NULL. Plain C.
 */
int aimux_error_retryable(const aimux_error_t *err);

/**
 * Returns the decoded root's own `retryAfterMs` (an integer >= 0) as the
 * envelope gives it, or -1 when it has none, for a cause node and for NULL.
 * Plain C.
 */
int64_t aimux_error_retry_after_ms(const aimux_error_t *err);

/**
 * Returns the node's HTTP status (`error.statusCode`, e.g. 429) as the
 * envelope gives it, or 0 when it has none (a refused connection, a source
 * node) and for NULL. An AI_RetryError's is its last attempt's, so the root a
 * caller holds answers without walking the chain. Plain C, thread-safe; works
 * on a root and on a node from aimux_error_cause() alike.
 */
int32_t aimux_error_status_code(const aimux_error_t *err);

/* ---------------------------------------------------------------------------
 * Event-driven streams (extension; same conventions). Wait for many streams
 * from one thread, with the host's own event loop, instead of one thread
 * blocked in aimux_stream_next() per stream.
 *
 * Model. A stream opened with aimux_stream_start() is read by a reader thread
 * of its own inside the library (a small stack), which ends with the stream's
 * op. At most AIMUX_STREAM_READER_THREADS (an environment variable, read once
 * per process; default 4096, 0: none) run at once: aimux_stream_start() beyond
 * that is an error (11, retryable, naming the setting; nothing was sent),
 * never a wait. Such a stream is "event-driven": whenever it has
 * something new for its consumer (events, its end, or the failure of its
 * open) its handle is put on the process's ready list, and when that list goes
 * from empty to non-empty one byte is written to the pipe whose read end is
 * aimux_events_fd(). A host:
 *
 *   1. watches aimux_events_fd() for readability (poll/epoll/kqueue, libuv,
 *      a Node net.Socket), and on wake-up reads and discards the bytes there
 *      (the fd is non-blocking: read until EAGAIN);
 *   2. calls aimux_ready() until it returns fewer handles than it has room
 *      for (each call removes the handles it returns from the list);
 *      aimux_poll_ready() does 2 and 3 in one call, as one JSON text;
 *   3. for each handle, calls aimux_stream_poll() until it returns no batch or
 *      `*out_ended` is 1. A handle is listed again only after something new
 *      arrives once it was returned by aimux_ready() (edge-triggered, like
 *      EPOLLET): a host that stops draining a stream early must poll it again
 *      itself.
 *
 * Nothing is lost if the host is slow: events wait in the stream's queue (a
 * producer with 1024 events not taken pauses until they drop to 256), and a
 * byte stays in the pipe until read. Spurious wake-ups and empty polls are
 * harmless. aimux_stream_next() also works on an event-driven stream (it
 * blocks), and aimux_stream_poll() on one from aimux_stream() (it never does,
 * and never reads: it takes what the stream's reads brought. Such a stream is
 * read by its blocking reads: once one came, polls get only what they brought
 * (and the end, once the stream's `finish` was read). One no blocking read has
 * read yet — a host that only polls it — gets a reader thread of its own at the
 * first poll that finds no event waiting, which reads ahead from then on. It is
 * never listed by aimux_ready(): poll streams from
 * aimux_stream_start().
 *
 * Threads. No callback is ever made into the host: the library only writes
 * to the pipe. Every function here may be called from any thread and never
 * waits on the network (aimux_stream_start() may briefly wait for the
 * interpreter lock, like every function). Poll one handle from one thread at
 * a time if the order of its batches matters to you.
 *
 * After fork(). The child gets a new pipe (a new fd number) on its first use;
 * streams of the parent are stale (203) in the child. A freed stream leaves
 * the ready list at once (a host that never calls aimux_ready() does not grow
 * it).
 * ------------------------------------------------------------------------- */

/** `*out_ended` of aimux_stream_poll(): more may come / the stream is over. */
#define AIMUX_STREAM_OPEN  0
#define AIMUX_STREAM_ENDED 1

/**
 * Returns the read end of the process's notification pipe (see above).
 *
 * `out_fd` receives the fd; set to -1 on entry. NULL → 204 error.
 * The fd is owned by the library and stays open for the life of the process
 * (of the child, after a fork: a new one): never close it, never write to it.
 * It is non-blocking and close-on-exec. Readable means "call aimux_ready()".
 */
aimux_error_t *aimux_events_fd(int *out_fd);

/**
 * Starts a streaming op without waiting for anything: returns as soon as the
 * params are validated and the op is handed to its reader thread (see "Model"
 * above).
 *
 * `op`, `params_json`, `out_stream` as for aimux_stream(): the handle is the
 * caller's, released with aimux_stream_free().
 *
 * Returns NULL on success, or an error owned by the caller for what can be
 * known before any I/O (300, 301, 302, 201, 202, 204, 207; 11 when every
 * reader thread AIMUX_STREAM_READER_THREADS allows is busy). A failure of the
 * open itself (connection, HTTP status, retries — what aimux_stream() would
 * have returned) is returned, once, by the stream's first aimux_stream_poll()
 * or aimux_stream_next(), which then report the end. Never blocks on the
 * network. Thread-safe.
 */
aimux_error_t *aimux_stream_start(const char *op, const char *params_json, uint64_t *out_stream);

/**
 * Takes up to `capacity` handles off the ready list (oldest first) into
 * `out_streams` (caller-owned, room for `capacity` handles) and writes their
 * number to `*out_count` (set to 0 on entry). NULL `out_streams` with a
 * non-zero capacity, or NULL `out_count` → 204 error. A freed stream is never
 * listed (one freed while this runs may still come back: its poll then
 * answers 203, ignore it). Never blocks.
 * Thread-safe.
 */
aimux_error_t *aimux_ready(uint64_t *out_streams, size_t capacity, size_t *out_count);

/**
 * Takes the events a stream has ready, without blocking.
 *
 * `stream`          a handle from aimux_stream_start() or aimux_stream().
 * `max_events`      at most this many events in the batch (0 counts as 1).
 * `out_events_json` receives a JSON array of 1..max_events events, in order
 *                   (each the same JSON aimux_stream_next() returns), owned by
 *                   the caller (aimux_string_free()); set to NULL on entry and
 *                   left NULL when nothing is ready. NULL pointer → 204.
 * `out_ended`       set to AIMUX_STREAM_OPEN on entry; AIMUX_STREAM_ENDED when
 *                   the stream is over: no event follows the batch returned
 *                   with it (or there is none). After a cancel the stream is
 *                   over at once. NULL → 204.
 *
 * Returns NULL on success, or an error owned by the caller: 203 for a stale,
 * freed or unknown handle, or the open failure of an event-driven stream
 * (reported once). Either way the stream is over (the out-params keep their
 * entry values, as on every error). Failures
 * after the first event arrive as `error` events, as with
 * aimux_stream_next(). Never blocks. Thread-safe. On a stream from
 * aimux_stream() it takes what the stream's blocking reads brought; on one no
 * blocking read has read yet, the first poll that finds no event waiting starts
 * the stream's reader thread (see "Model" above).
 */
aimux_error_t *aimux_stream_poll(uint64_t stream, size_t max_events, char **out_events_json,
                                 int32_t *out_ended);

/**
 * Waits for the next events of a stream and takes every one that is ready,
 * up to `max_events`, in one call: aimux_stream_next() for a thread that
 * reads one stream, one crossing per batch instead of one per event.
 *
 * `stream`, `max_events`, `out_events_json`, `out_ended` as for
 * aimux_stream_poll(): the batch is a JSON array of 1..max_events events (each
 * the same JSON aimux_stream_next() returns), owned by the caller
 * (aimux_string_free()); `*out_ended` is AIMUX_STREAM_ENDED when no event
 * follows it. At the end (after the last batch, or after
 * aimux_stream_cancel()) it returns no batch and AIMUX_STREAM_ENDED.
 *
 * Returns NULL on success, or an error owned by the caller, as
 * aimux_stream_poll() does (203 for a stale, freed or unknown handle; the
 * open failure of an event-driven stream, once). Blocks until at least one
 * event or the end; a concurrent aimux_stream_cancel() from another thread
 * wakes it (the end is then reported). Works on handles from aimux_stream()
 * and aimux_stream_start(). Thread-safe.
 */
aimux_error_t *aimux_stream_next_batch(uint64_t stream, size_t max_events, char **out_events_json,
                                       int32_t *out_ended);

/**
 * aimux_ready() and aimux_stream_poll() of every listed stream in one call:
 * the crossing a host's event loop makes per wake-up (CONTRACT-free
 * convenience for bindings that pay per call, such as Node).
 *
 * `max_events` at most this many events per stream (0 counts as 1).
 * `out_json`   receives, owned by the caller (aimux_string_free()), a JSON
 *              array with one entry per listed stream that still exists:
 *              [stream, ended, events, error] where `stream` is the handle (a
 *              JSON integer), `ended` 0 or 1 (as `*out_ended` of
 *              aimux_stream_poll()), `events` a JSON array of events or null,
 *              `error` null or the envelope of the stream's open failure (the
 *              stream is then over). Every listed handle leaves the list.
 *              Stays NULL when no stream is listed. Set to NULL on entry;
 *              NULL pointer → 204.
 *
 * Never blocks. Thread-safe.
 */
aimux_error_t *aimux_poll_ready(size_t max_events, char **out_json);

/* --- host tools (CONTRACT §2.2: the core asks, the host answers) ----------------------------
 *
 * A tool marked `"execute": true` in a stream op's params (`stream_text`) is the host's. Each
 * call the model makes to it arrives as a `tool-call` event ({"type": "tool-call",
 * "toolCallId", "toolName", "input"}); every call of one step is announced before the core
 * waits. The host runs the tool (on its own threads, concurrently if it likes) and answers each
 * call once, in any order, with aimux_stream_tool_result(); the stream then goes on with a
 * `tool-result` or `tool-error` event, a `finish-step`, and the next step's model call, until
 * `stopWhen` holds (default: one step). No callback crosses the ABI.
 *
 * `answer_json` is one of three layers (seed 001):
 *   {"output": <JSON>}                      the tool's value: the model reads it;
 *   {"error": {"message": "…", "data": …}}  a tool-level error ("data" optional): the model
 *                                           reads it and may recover;
 *   {"failure": <cause node>}               the tool failed (it raised / threw): the model never
 *                                           sees it; the stream ends with an `error` event
 *                                           holding AI_ToolExecutionError (code 22, fields
 *                                           toolName, toolCallId, input) whose cause is this
 *                                           node (`{message, type?, cause?}` or an aimux node).
 *                                           With `"toolFailures": "to-model"` in the params its
 *                                           message goes to the model as a tool error instead.
 * A call the model got wrong (unknown tool, input not JSON or not matching the schema) is
 * answered by the core itself, as a `tool-error` the model reads.
 */

/**
 * Answers one host tool call of `stream`. Any thread, any order.
 *
 * `tool_call_id`  the `toolCallId` of the `tool-call` event. NULL → 204.
 * `answer_json`   one of the three layers above. NULL → 204; not UTF-8 → 201; not JSON → 202;
 *                 not one of the layers → 301.
 *
 * Returns NULL when the answer was taken. A stream that is unknown, stale or freed is a 203;
 * a call the stream does not wait for (unknown id, answered already, the stream cancelled or
 * over) is a 301 naming it. A refused answer changes nothing: the call still waits for its
 * answer. A stream whose calls are never answered waits until `timeoutMs`, a cancel or a free.
 */
aimux_error_t *aimux_stream_tool_result(uint64_t stream, const char *tool_call_id,
                                        const char *answer_json);

#ifdef __cplusplus
}
#endif

#endif /* AIMUX_H */
