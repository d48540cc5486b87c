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
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kindOfCode } from './generated/variants.js';

export const EXPECTED_ABI_VERSION = 1;

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** `$AIMUX_LIB`, else `<repo>/native/build/libaimux.so` relative to this package. */
export function libraryPath() {
  const fromEnv = process.env.AIMUX_LIB;
  if (fromEnv) return resolve(fromEnv);
  return resolve(pkgDir, '..', '..', 'native', 'build', 'libaimux.so');
}

let lib = null;

function bind(path) {
  let handle;
  try {
    handle = koffi.load(path);
  } catch (err) {
    const hint = existsSync(path) ? '' : ' (file not found: build it with `make native` at the repo root, or set AIMUX_LIB)';
    throw new Error(`aimux: cannot load libaimux from ${path}${hint}: ${err.message}`, { cause: err });
  }
  const fns = {
    path,
    abiVersion: handle.func('uint32_t aimux_abi_version(void)'),
    call: handle.func('void *aimux_call(const char *op, const char *params_json, _Out_ void **out_result_json)'),
    stream: handle.func('void *aimux_stream(const char *op, const char *params_json, _Out_ uint64_t *out_stream)'),
    streamNext: handle.func('void *aimux_stream_next(uint64_t stream, _Out_ void **out_event_json)'),
    streamCancel: handle.func('void aimux_stream_cancel(uint64_t stream)'),
    streamFree: handle.func('void aimux_stream_free(uint64_t stream)'),
    errorCode: handle.func('int32_t aimux_error_code(void *err)'),
    errorMessage: handle.func('void *aimux_error_message(void *err)'),
    errorJson: handle.func('void *aimux_error_json(void *err)'),
    errorFree: handle.func('void aimux_error_free(void *err)'),
    stringFree: handle.func('void aimux_string_free(void *s)'),
  };
  const abi = fns.abiVersion();
  if (abi !== EXPECTED_ABI_VERSION) {
    throw new Error(`aimux: ${path} has ABI version ${abi}, this binding needs ${EXPECTED_ABI_VERSION}`);
  }
  return fns;
}

/** The bound library, loaded on first use. */
function native() {
  if (lib === null) lib = bind(libraryPath());
  return lib;
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

/** aimux_stream on the worker pool → {error: envelope text | null, handle}. */
export async function nativeStream(op, paramsJson) {
  const n = native();
  const out = [0];
  const err = await runAsync(n.stream, op, paramsJson, out);
  own(err, ERROR);
  if (!isNull(err)) return { error: takeError(err), handle: 0 };
  return { error: null, handle: out[0] };
}

/** aimux_stream_next on the worker pool → {error, text: event JSON | null (ended)}. */
export async function nativeStreamNext(handle) {
  const n = native();
  const out = [null];
  const err = await runAsync(n.streamNext, handle, out);
  return settle(err, out[0]);
}

/** aimux_stream_cancel, on the calling (main) thread: wakes a blocked next. */
export function nativeStreamCancel(handle) {
  native().streamCancel(handle);
}

/** aimux_stream_free (cancels a running stream). */
export function nativeStreamFree(handle) {
  native().streamFree(handle);
}

/** aimux_abi_version of the loaded library. */
export function nativeAbiVersion() {
  return native().abiVersion();
}
