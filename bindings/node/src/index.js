// aimux-ops for Node: `call` / `stream` over libaimux, errors as native Error
// chains (see README.md).
import {
  nativeCall, nativeStreamStart, nativeStreamTake, nativeStreamCancel, nativeStreamFree, nativeAbiVersion,
  libraryPath, ownedPointers,
} from './native.js';
import { decodeEnvelope } from './decode.js';
import { ToolHost, ToolResult, checkTools, resultOf, withTools } from './tools.js';
import { ErrorCode, kindOfCode, UnknownOpError, UnsupportedFunctionalityError } from './generated/variants.js';

export { AimuxError, AimuxCauseError, AimuxSourceError, isAimuxNode, markerFor, hasMarker, AIMUX_NODE_MARKER } from './base.js';
export * from './generated/variants.js';
export { decodeEnvelope, nativeChain, chainEntry, decodeChain, decodeAnswer, lookupVariant } from './decode.js';
export { libraryPath, ownedPointers };
export { ToolResult };

function checkOp(op) {
  if (typeof op !== 'string') throw new TypeError('aimux: op must be a string');
  // A C string ends at the first NUL: the library would run the truncated op (CONTRACT §4:
  // 300, never a silently truncated call). The same envelope as the Java and Go bindings.
  if (op.includes('\u0000')) {
    throw decodeEnvelope({
      kind: kindOfCode(ErrorCode.UNKNOWN_OP),
      code: ErrorCode.UNKNOWN_OP,
      message: 'unknown op (the name contains a NUL character)',
      error: { name: UnknownOpError.errorName, op },
      retryable: false,
    });
  }
}

/**
 * How this binding runs an op of each mode: [the C ABI's name the core's wrong-mode message ends
 * with, the name it shows instead] (the core cannot know its caller across the C ABI).
 */
const OWN_API = Object.freeze({
  call: ['aimux_call', 'call (typed: generateText, generateObject)'],
  stream: ['aimux_stream', 'stream (typed: streamText)'],
});

/** The decoded error of `envelope`; a wrong mode's message names this binding's functions. */
function decodeOwnError(envelope) {
  const error = decodeEnvelope(envelope);
  if (error.code !== ErrorCode.WRONG_MODE || !Object.hasOwn(OWN_API, error.expected)) return error;
  const [cName, ownName] = OWN_API[error.expected];
  const tail = `; use ${cName}`;
  if (!error.message.endsWith(tail)) return error;
  const message = `${error.message.slice(0, -tail.length)}; use ${ownName}`;
  if (typeof error.stack === 'string') error.stack = error.stack.replace(error.message, message);
  error.message = message;
  return error;
}

function encodeParams(params) {
  const json = JSON.stringify(params === undefined ? {} : params);
  if (json === undefined) throw new TypeError('aimux: params must be JSON-serialisable');
  return json;
}

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`aimux: the library returned ${what} that is not JSON: ${err.message}`, { cause: err });
  }
}

/**
 * Calls a request/response op on libaimux's worker pool (never blocks the event
 * loop). Resolves with the parsed result (an invalid tool call's `error` decoded
 * into an AimuxError); rejects with the decoded AimuxError.
 *
 * `options.tools` (name → {execute: async (input, {abortSignal, toolCallId}) => value}) makes
 * those tools the host's: generate_text then runs the loop (stream_text) on this event loop and
 * resolves with the final result (`steps`, `toolResults`, `usage` summed); a thrown error
 * rejects with AI_ToolExecutionError whose `cause` is that very error. `options.signal` aborts it.
 */
export async function call(op, params = {}, options = {}) {
  checkOp(op);
  const tools = checkTools(options?.tools);
  if (Object.keys(tools).length > 0) {
    if (op !== 'generate_text') {
      // as the core answers a call op with host tools: 8, unsupported
      throw decodeEnvelope({
        kind: kindOfCode(ErrorCode.UNSUPPORTED_FUNCTIONALITY),
        code: ErrorCode.UNSUPPORTED_FUNCTIONALITY,
        message: `host tools (options.tools) run with generate_text or stream_text, not ${op}`,
        error: { name: UnsupportedFunctionalityError.errorName, functionality: `tools with ${op}` },
        retryable: false,
      });
    }
    return resultOf(stream('stream_text', params, { tools, signal: options?.signal }));
  }
  const json = encodeParams(params);
  const { error, text } = await nativeCall(op, json);
  if (error !== null) throw decodeOwnError(error);
  if (text === null) throw new Error(`aimux: ${op} succeeded without a result`);
  return decodeEmbeddedErrors(parseJson(text, 'a result'));
}

function isEnvelope(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && typeof value.kind === 'string';
}

/** A tool call's `error` (an envelope: unknown tool, invalid input) decoded in place. */
function decodeToolCall(toolCall) {
  if (toolCall !== null && typeof toolCall === 'object' && isEnvelope(toolCall.error)) {
    toolCall.error = decodeEnvelope(toolCall.error);
  }
  return toolCall;
}

/** Errors carried inside a result or an event, decoded into AimuxError. */
function decodeEmbeddedErrors(value) {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value.toolCalls)) value.toolCalls.forEach(decodeToolCall);
  if (value.type === 'error' && isEnvelope(value.error)) value.error = decodeEnvelope(value.error);
  else if (value.type === 'tool-call') decodeToolCall(value);
  return value;
}

function abortReason(signal) {
  if (signal.reason !== undefined) return signal.reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

// A stream whose iterator is dropped without being finished or returned is freed
// when the iterator is garbage collected.
const abandoned = new FinalizationRegistry((state) => {
  if (state.handle !== 0 && !state.freed) {
    state.freed = true;
    try {
      nativeStreamFree(state.handle);
    } catch {
      // nothing more can be done at collection time
    }
  }
});

/**
 * Streams the events of a stream op. No thread of this process waits for it:
 * libaimux reads it on a thread of its own and signals this event loop
 * (aimux_events_fd); events arrive in batches, and the iterator hands out the
 * events of the batch in hand without a generator step per event.
 * An `error` event arrives as `{type: "error", error: AimuxError}` (decoded), as
 * does the `error` of an invalid `tool-call`.
 * Aborting `signal` cancels the stream (aimux_stream_cancel) and the iteration
 * throws the signal's reason.
 * Leaving the loop early (break / return / throw) cancels and frees the stream.
 *
 * `options.tools` (name → {execute}) makes those tools the host's: each of their `tool-call`
 * events starts its execute at once (a step's calls run concurrently) and its outcome is
 * answered to the stream; their `abortSignal` aborts when the stream is cancelled or left.
 */
export function stream(op, params = {}, options = {}) {
  checkOp(op);
  const host = new ToolHost(checkTools(options?.tools));
  const json = encodeParams(host.active ? withTools(params, options.tools) : params);
  const signal = options?.signal;
  const state = { handle: 0, freed: false };
  const iterator = new EventIterator(streamBatches(op, json, signal, state, host), signal);
  abandoned.register(iterator, state, state);
  return iterator;
}

function freeStream(state) {
  abandoned.unregister(state);
  if (state.handle !== 0 && !state.freed) {
    state.freed = true;
    nativeStreamFree(state.handle);
  }
}

/**
 * The stream's events one by one, from the batches `streamBatches` yields: an
 * event of the batch in hand is answered at once (no generator step per
 * event); the generator runs for the next batch, the end, an abort and every
 * error, and return()/throw() go to it (its cleanup frees the stream). Calls
 * are answered in the order they were made, as an async generator answers
 * them: one made while an earlier one is unanswered runs after it.
 */
class EventIterator {
  #batches;
  #signal;
  #batch = null;
  #at = 0;
  #tail = null; // the last call not answered yet: later calls run after it

  constructor(batches, signal) {
    this.#batches = batches;
    this.#signal = signal;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    if (this.#tail === null) {
      const event = this.#take();
      if (event !== undefined) return Promise.resolve(event);
    }
    return this.#after(() => {
      const event = this.#take();
      if (event !== undefined) return event;
      this.#batch = null;
      return this.#batches.next().then((r) => {
        if (r.done) return r;
        this.#batch = r.value;
        this.#at = 1;
        return { value: r.value[0], done: false };
      });
    });
  }

  return(value) {
    return this.#after(() => {
      this.#batch = null;
      return this.#batches.return(value);
    });
  }

  throw(error) {
    return this.#after(() => {
      this.#batch = null;
      return this.#batches.throw(error);
    });
  }

  /** The next event of the batch in hand as a result, or undefined (none, or aborted). */
  #take() {
    const batch = this.#batch;
    if (batch === null || this.#at >= batch.length || this.#signal?.aborted) return undefined;
    return { value: batch[this.#at++], done: false };
  }

  /** Runs `call` once every earlier call is answered (now, when none is waiting). */
  #after(call) {
    const before = this.#tail;
    const p = before === null ? invoke(call) : before.then(call, call);
    this.#tail = p;
    const settle = () => {
      if (this.#tail === p) this.#tail = null;
    };
    p.then(settle, settle);
    return p;
  }
}

// An AsyncGenerator to everything that looks at its prototype (its tag, and what newer Node
// versions add there, such as Symbol.asyncDispose, which calls return()); next, return and throw
// are its own.
Object.setPrototypeOf(EventIterator.prototype, Object.getPrototypeOf(async function* () {}).prototype);

function invoke(call) {
  try {
    return Promise.resolve(call());
  } catch (e) {
    return Promise.reject(e);
  }
}

async function* streamBatches(op, json, signal, state, host) {
  if (signal?.aborted) throw abortReason(signal);
  // aimux_stream_start returns at once; the open's outcome (first events, or its
  // failure) arrives with the first batch. No thread waits for this stream.
  const { error: startError, handle } = nativeStreamStart(op, json);
  if (startError !== null) throw decodeOwnError(startError);
  state.handle = handle;
  host.attach(handle);
  const onAbort = () => {
    host.abort(abortReason(signal));
    if (!state.freed) nativeStreamCancel(handle);
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  const hosting = host.active; // (the tools are fixed for the stream's life)
  try {
    for (;;) {
      if (signal?.aborted) throw abortReason(signal);
      const { error, events, ended } = await nativeStreamTake(handle);
      if (signal?.aborted) throw abortReason(signal);
      if (error !== null) throw decodeOwnError(error);
      if (events.length > 0) {
        for (let i = 0; i < events.length; i++) {
          const event = decodeEmbeddedErrors(events[i]);
          events[i] = event;
          if (hosting) {
            if (event.type === 'tool-call') host.start(event);
            else if (event.type === 'error') host.native(event.error);
          }
        }
        yield events;
        if (signal?.aborted) throw abortReason(signal);
      }
      if (ended) return;
    }
  } finally {
    if (hosting) host.abort(new DOMException('The stream ended', 'AbortError'));
    signal?.removeEventListener('abort', onAbort);
    // Free cancels a stream that is still running.
    freeStream(state);
  }
}

/** The ABI version of the loaded libaimux. */
export function abiVersion() {
  return nativeAbiVersion();
}

// -- the typed API (CONTRACT §4.1): the AI SDK's names, one options object ----------------------

/**
 * AI SDK-style options → [the op's params, call options]. A tool with an `execute` function is
 * the host's (its spec goes to the core, its execute to the loop); `abortSignal` is the call's
 * signal. Every other member goes to the core as given, one it does not know included (the core
 * refuses it by name, 301), so a field a newer core takes needs no new binding.
 */
function typedOptions(fn, options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`aimux: ${fn}(options) takes an object ({model, prompt, ...})`);
  }
  const { abortSignal, tools, ...params } = options;
  const callOptions = {};
  if (abortSignal !== undefined) {
    if (!(abortSignal instanceof AbortSignal)) throw new TypeError(`aimux: ${fn}: abortSignal must be an AbortSignal`);
    callOptions.signal = abortSignal;
  }
  if (tools !== undefined && tools !== null) {
    if (typeof tools !== 'object' || Array.isArray(tools)) {
      throw new TypeError(`aimux: ${fn}: tools must be an object of tool name -> {description, inputSchema, execute?}`);
    }
    const specs = {};
    const host = {};
    for (const [name, tool] of Object.entries(tools)) {
      if (tool === null || typeof tool !== 'object') throw new TypeError(`aimux: ${fn}: tools.${name} must be an object`);
      const { execute, ...spec } = tool;
      if (execute !== undefined) {
        if (typeof execute !== 'function') throw new TypeError(`aimux: ${fn}: tools.${name}.execute must be a function`);
        host[name] = { execute };
      }
      specs[name] = spec;
    }
    params.tools = specs;
    if (Object.keys(host).length > 0) callOptions.tools = host;
  }
  return [params, callOptions];
}

/**
 * generate_text with the AI SDK's shape: `generateText({model, prompt, tools, stopWhen,
 * abortSignal, ...})`. Tools with `execute` run the loop (the result has `steps`).
 */
export async function generateText(options) {
  const [params, callOptions] = typedOptions('generateText', options);
  return call('generate_text', params, callOptions);
}

/** stream_text with the AI SDK's shape; iterate it for the events (tools with `execute` run the loop). */
export function streamText(options) {
  const [params, callOptions] = typedOptions('streamText', options);
  return stream('stream_text', params, callOptions);
}

/** generate_object with the AI SDK's shape: `generateObject({model, prompt, schema, ...})`. */
export async function generateObject(options) {
  const [params, callOptions] = typedOptions('generateObject', options);
  if (callOptions.tools) {
    throw decodeEnvelope({
      kind: kindOfCode(ErrorCode.UNSUPPORTED_FUNCTIONALITY),
      code: ErrorCode.UNSUPPORTED_FUNCTIONALITY,
      message: 'generateObject runs no host tools (a tool with execute): use generateText or streamText',
      error: { name: UnsupportedFunctionalityError.errorName, functionality: 'tools with execute in generateObject' },
      retryable: false,
    });
  }
  return call('generate_object', params, callOptions);
}
