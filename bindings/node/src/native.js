// libaimux through koffi (default load: RTLD_LOCAL | RTLD_NOW).
//
// Ownership: every pointer the library hands over (a `char *` or an
// aimux_error_t *) is entered in `owned` the moment it crosses the FFI boundary,
// and leaves it when it is released: strings with aimux_string_free, errors with
// aimux_error_free, each exactly once (a second release throws instead of
// freeing twice). Pointers are declared `void *` so koffi never converts (and so
// never leaks) a returned string on its own. Everything above this module gets
// plain JS strings.
import koffi from 'koffi';
import { existsSync, readFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeEnvelope } from './decode.js';
import { parseReady } from './ready.js';
import { ErrorCode, kindOfCode, InternalError, RuntimeInitError } from './generated/variants.js';

export const EXPECTED_ABI_VERSION = 1;

/** The name the system loader knows the library by (its SONAME). */
export const SONAME = 'libaimux.so.1';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The in-repo build, for development: `<repo>/native/build/libaimux.so` when this package is
 * `<repo>/bindings/node` of a checkout; null for an installed copy.
 */
function inRepoBuild() {
  const repo = resolve(pkgDir, '..', '..');
  return existsSync(join(repo, 'native', 'aimux.h')) ? join(repo, 'native', 'build', 'libaimux.so') : null;
}

/** The platform this package may carry a build of the library for (`prebuilds/<platform>-<arch>/`). */
const PLATFORM = `${process.platform}-${process.arch}`;

/**
 * The library this package carries (`make -C bindings/node pack` puts `libaimux.so.1` and its
 * payload, `aimux/pythonX.Y/`, in `prebuilds/linux-x64/`): its path, or null when there is none.
 */
function packagedBuild() {
  const path = join(pkgDir, 'prebuilds', PLATFORM, SONAME);
  return existsSync(path) ? path : null;
}

const FIX = 'Fix: install the library (`make install PREFIX=<dir>` in an aimux-ops checkout) and put <dir>/lib on '
  + 'LD_LIBRARY_PATH (or register it with ldconfig), or set AIMUX_LIB to the path of libaimux.so.1.';

/** A 207 RuntimeInitError (CONTRACT §3): the library cannot be found or loaded. */
function runtimeInitError(message) {
  const code = ErrorCode.RUNTIME_INIT;
  return decodeEnvelope({ kind: kindOfCode(code), code, message, error: { name: RuntimeInitError.errorName }, retryable: false });
}

/** The file the system loader mapped for `libaimux.so.1` (from /proc/self/maps), else the SONAME. */
function mappedPath() {
  try {
    for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const i = line.indexOf('/');
      if (i > 0 && basename(line.slice(i)).startsWith('libaimux.so')) return line.slice(i).trim();
    }
  } catch {
    // not Linux, or /proc not mounted: the SONAME is all we know
  }
  return SONAME;
}

/**
 * Loads the library the one way every binding does (CONTRACT §3): `$AIMUX_LIB`; else `libaimux.so.1`
 * through the system loader (LD_LIBRARY_PATH, the loader cache, the default directories); else the
 * build this package carries (`prebuilds/<platform>-<arch>/`); else the in-repo build (development
 * only). Throws a 207 RuntimeInitError naming what was tried.
 */
function loadLibrary() {
  const fromEnv = process.env.AIMUX_LIB;
  if (fromEnv) {
    const path = resolve(fromEnv);
    try {
      return { handle: koffi.load(path), path };
    } catch (err) {
      const why = existsSync(path) ? err.message : 'no such file';
      throw runtimeInitError(`aimux: cannot load libaimux from AIMUX_LIB=${path}: ${why}. `
        + 'Fix: point AIMUX_LIB at an installed libaimux.so.1 (<prefix>/lib after `make install PREFIX=<prefix>`), '
        + 'or unset it to use the system loader.');
    }
  }
  const tried = ['AIMUX_LIB (not set)'];
  try {
    const handle = koffi.load(SONAME);
    return { handle, path: mappedPath() };
  } catch (err) {
    tried.push(`${SONAME} through the system loader (LD_LIBRARY_PATH=${process.env.LD_LIBRARY_PATH ?? ''}, `
      + `the loader cache, the default directories): ${err.message}`);
  }
  const packaged = packagedBuild();
  if (packaged !== null) {
    try {
      return { handle: koffi.load(packaged), path: packaged };
    } catch (err) {
      tried.push(`the package's own ${packaged}: ${err.message}`);
    }
  } else {
    tried.push(`the package's own prebuilds/${PLATFORM}/${SONAME} (this package carries none)`);
  }
  const dev = inRepoBuild();
  if (dev !== null && existsSync(dev)) {
    try {
      return { handle: koffi.load(dev), path: dev };
    } catch (err) {
      throw runtimeInitError(`aimux: cannot load libaimux. Tried: ${tried.join('; ')}; the in-repo build ${dev}: `
        + `${err.message}. ${FIX}`);
    }
  }
  if (dev !== null) tried.push(`the in-repo build ${dev} (not built: \`make native\` at the repo root)`);
  throw runtimeInitError(`aimux: cannot load libaimux. Tried: ${tried.join('; ')}. ${FIX}`);
}

let lib = null;

function bind() {
  const { handle, path } = loadLibrary();
  const fns = {
    path,
    abiVersion: handle.func('uint32_t aimux_abi_version(void)'),
    call: handle.func('void *aimux_call(const char *op, const char *params_json, _Out_ void **out_result_json)'),
    streamStart: handle.func('void *aimux_stream_start(const char *op, const char *params_json, _Out_ uint64_t *out_stream)'),
    eventsFd: handle.func('void *aimux_events_fd(_Out_ int *out_fd)'),
    pollReady: handle.func('void *aimux_poll_ready(size_t max_events, _Out_ void **out_json)'),
    streamCancel: handle.func('void aimux_stream_cancel(uint64_t stream)'),
    streamFree: handle.func('void aimux_stream_free(uint64_t stream)'),
    streamToolResult: handle.func('void *aimux_stream_tool_result(uint64_t stream, const char *tool_call_id, const char *answer_json)'),
    errorCode: handle.func('int32_t aimux_error_code(void *err)'),
    errorMessage: handle.func('void *aimux_error_message(void *err)'),
    errorJson: handle.func('void *aimux_error_json(void *err)'),
    errorFree: handle.func('void aimux_error_free(void *err)'),
    stringFree: handle.func('void aimux_string_free(void *s)'),
  };
  const abi = fns.abiVersion();
  if (abi !== EXPECTED_ABI_VERSION) {
    throw runtimeInitError(`aimux: ${path} has ABI version ${abi}, this binding needs ${EXPECTED_ABI_VERSION}. `
      + 'Fix: install the libaimux that matches this package version, or set AIMUX_LIB to it.');
  }
  return fns;
}

/** The bound library, loaded on first use. */
function native() {
  if (lib === null) lib = bind();
  return lib;
}

/** The path the library was loaded from (loading it on first use; a 207 RuntimeInitError when it cannot). */
export function libraryPath() {
  return native().path;
}

// --- ownership ------------------------------------------------------------------

const STRING = 'string';
const ERROR = 'error';
/** Library-owned pointers received and not yet released: address → kind. */
const owned = new Map();

function isNull(ptr) {
  return ptr === null || ptr === undefined || ptr === 0n || ptr === 0;
}

function own(ptr, kind) {
  if (!isNull(ptr)) {
    if (owned.has(ptr)) throw new Error(`aimux: internal: the library handed over ${ptr} twice`);
    owned.set(ptr, kind);
  }
  return ptr;
}

function release(ptr, kind) {
  if (isNull(ptr)) return;
  if (owned.get(ptr) !== kind) throw new Error(`aimux: internal: ${kind} ${ptr} released twice or never received`);
  owned.delete(ptr);
  if (kind === STRING) native().stringFree(ptr);
  else native().errorFree(ptr);
}

/** How many library-owned pointers are held right now (0 between operations). */
export function ownedPointers() {
  return owned.size;
}

/** Reads a received string and releases it. NULL → null. */
function takeString(ptr) {
  if (isNull(ptr)) return null;
  try {
    return koffi.decode.string(ptr);
  } finally {
    release(ptr, STRING);
  }
}

/**
 * Reads a received error as envelope JSON text and releases it. If the library
 * cannot render the JSON, falls back to what it can say (code and message).
 */
function takeError(errPtr) {
  const n = native();
  try {
    const json = takeString(own(n.errorJson(errPtr), STRING));
    if (json !== null) return json;
    const code = n.errorCode(errPtr);
    const message = takeString(own(n.errorMessage(errPtr), STRING)) ?? 'aimux: the library returned an error without JSON';
    return JSON.stringify({ kind: kindOfCode(code) ?? 'unknown', code, message, error: {}, retryable: false });
  } finally {
    release(errPtr, ERROR);
  }
}

/** Runs a koffi function on the worker pool; resolves with its return value. */
function runAsync(fn, ...args) {
  return new Promise((resolvePromise, reject) => {
    fn.async(...args, (err, res) => (err ? reject(err) : resolvePromise(res)));
  });
}

/** Takes ownership of an async call's outcome: the error and a pointer out-param. */
function settle(errPtr, outPtr) {
  own(errPtr, ERROR);
  own(outPtr, STRING);
  if (!isNull(errPtr)) {
    takeString(outPtr); // NULL per the ABI; released should a library ever set both
    return { error: takeError(errPtr), text: null };
  }
  return { error: null, text: takeString(outPtr) };
}

// --- the operations ---------------------------------------------------------------

/** aimux_call on the worker pool → {error: envelope text | null, text: result | null}. */
export async function nativeCall(op, paramsJson) {
  const n = native();
  const out = [null];
  const err = await runAsync(n.call, op, paramsJson, out);
  return settle(err, out[0]);
}

// --- streams: event-driven, on the main thread ------------------------------------
//
// No thread of this process waits for a stream: libaimux reads each one on a
// thread of its own (a reader thread, or its one stream loop once 8 are busy:
// AIMUX_STREAM_READER_THREADS) and writes a byte to a pipe (aimux_events_fd)
// when streams have something new.
// The pipe is watched by this event loop as a net.Socket; on each wake-up one
// synchronous aimux_poll_ready call returns every ready stream's batch of events
// as one JSON text. The socket keeps the process alive only while some stream is
// being waited for.
//
// One crossing per wake-up: aimux_poll_ready empties the library's ready list, and
// every stream listed after that (new events, or events a batch left behind) writes
// a new byte, so a second crossing in the same wake-up would only find an empty list
// (a crossing that needs the interpreter waits while a stream thread holds its lock).

/** At most this many events per stream per crossing (the library's queue bound). */
const BATCH = 1024;

let hub = null;

function eventsHub() {
  if (hub !== null) return hub;
  const n = native();
  const out = [-1];
  const err = own(n.eventsFd(out), ERROR);
  if (!isNull(err)) throw new Error(`aimux: cannot watch the library's streams: ${JSON.parse(takeError(err)).message}`);
  const socket = new Socket({ fd: out[0], readable: true, writable: false });
  hub = { socket, streams: new Map(), waiting: 0 };
  socket.on('data', () => pump());
  socket.on('error', (e) => failAll(e));
  socket.unref();
  return hub;
}

/** Drains every ready stream (one crossing) into its JS queue. */
function pump() {
  const h = hub;
  const out = [null];
  const { error, text } = settle(native().pollReady(BATCH, out), out[0]);
  if (error !== null) {
    failAll(new Error(`aimux: aimux_poll_ready failed: ${JSON.parse(error).message}`));
    return;
  }
  if (text === null) return; // nothing listed (a byte from before the last crossing)
  for (const [handle, ended, events, envelope] of parseReady(text)) {
    const st = h.streams.get(handle);
    if (st === undefined) continue;
    if (events !== null) {
      if (st.queue.length === 0) st.queue = events;
      else for (const ev of events) st.queue.push(ev);
    }
    if (envelope !== null) st.error = JSON.stringify(envelope);
    if (ended) st.ended = true;
    wake(st);
  }
}

function wake(st) {
  const resolveTake = st.waiter;
  if (resolveTake === null) return;
  st.waiter = null;
  hub.waiting -= 1;
  if (hub.waiting === 0) hub.socket.unref();
  resolveTake(takeBatch(st));
}

function takeBatch(st) {
  const events = st.queue;
  st.queue = [];
  const error = st.error;
  st.error = null;
  return { error, events, ended: st.ended && st.queue.length === 0 };
}

function failAll(e) {
  for (const st of hub.streams.values()) {
    const code = ErrorCode.INTERNAL;
    st.error = JSON.stringify({
      kind: kindOfCode(code), code, message: String(e?.message ?? e), error: { name: InternalError.errorName }, retryable: false,
    });
    st.ended = true;
    wake(st);
  }
}

/**
 * aimux_stream_start (synchronous: validates and queues, no I/O wait) →
 * {error: envelope text | null, handle}.
 */
export function nativeStreamStart(op, paramsJson) {
  const h = eventsHub();
  const n = native();
  const out = [0];
  const err = own(n.streamStart(op, paramsJson, out), ERROR);
  if (!isNull(err)) return { error: takeError(err), handle: 0 };
  const handle = Number(out[0]);
  h.streams.set(handle, { queue: [], error: null, ended: false, waiter: null });
  return { error: null, handle };
}

/**
 * The stream's next batch, once there is one: {error: the open failure's
 * envelope text | null, events: [event objects], ended}. Never holds a thread.
 */
export function nativeStreamTake(handle) {
  const h = hub;
  const st = h?.streams.get(handle);
  if (st === undefined) return Promise.resolve({ error: null, events: [], ended: true });
  if (st.queue.length > 0 || st.error !== null || st.ended) return Promise.resolve(takeBatch(st));
  if (st.waiter !== null) throw new Error('aimux: internal: two concurrent takes on one stream');
  return new Promise((resolveTake) => {
    st.waiter = resolveTake;
    h.waiting += 1;
    if (h.waiting === 1) h.socket.ref();
  });
}

/** aimux_stream_cancel, on the calling (main) thread: wakes a blocked next. */
export function nativeStreamCancel(handle) {
  native().streamCancel(handle);
}

/** aimux_stream_free (cancels a running stream); a pending take resolves as ended. */
export function nativeStreamFree(handle) {
  native().streamFree(handle);
  const st = hub?.streams.get(handle);
  if (st !== undefined) {
    hub.streams.delete(handle);
    st.ended = true;
    wake(st);
  }
}

/**
 * aimux_stream_tool_result, on the calling (main) thread: answers one host tool call →
 * the refusal's envelope text, or null when the answer was taken.
 */
export function nativeStreamToolResult(handle, toolCallId, answerJson) {
  const err = own(native().streamToolResult(handle, toolCallId, answerJson), ERROR);
  return isNull(err) ? null : takeError(err);
}

/** aimux_abi_version of the loaded library. */
export function nativeAbiVersion() {
  return native().abiVersion();
}
