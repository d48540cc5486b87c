// Host tools (CONTRACT §2.2, seed 001's three layers): `execute` functions run on this event
// loop and are answered through aimux_stream_tool_result. The core asks (a `tool-call` event),
// the host answers; no callback crosses the C ABI.
//
// What an `execute` does decides the layer:
// - resolves with a value → {"output": value}: a `tool-result`, the model reads it;
// - resolves with ToolResult.error(message) / ToolResult.errorWithData(message, data) → a
//   `tool-error` the model reads and may recover from;
// - throws / rejects → {"failure": <cause node of the error and its .cause chain>}: the model
//   never sees it; the caller's error is the decoded AI_ToolExecutionError whose `cause` is the
//   very error thrown (`toolFailures: "to-model"` sends its message to the model instead).
import { nativeStreamToolResult } from './native.js';

/** At most this many nodes of a thrown error's `.cause` chain go into the failure node. */
const MAX_DEPTH = 16;

/** A tool-level error an `execute` returns: the model sees it (a thrown error is a framework error). */
export class ToolResult {
  #message;
  #data;
  #hasData;

  constructor(message, data, hasData) {
    this.#message = String(message);
    this.#data = data;
    this.#hasData = hasData === true;
  }

  static error(message) {
    return new ToolResult(message, undefined, false);
  }

  static errorWithData(message, data) {
    return new ToolResult(message, data, true);
  }

  get message() {
    return this.#message;
  }

  get data() {
    return this.#data;
  }

  /** The answer's JSON object. */
  toAnswer() {
    const error = { message: this.#message };
    if (this.#hasData) error.data = this.#data === undefined ? null : this.#data;
    return { error };
  }
}

/** `{message, type?, cause?}` of a thrown value and its `.cause` chain (cycles and depth cut). */
export function failureNode(thrown) {
  const root = {};
  let node = root;
  let value = thrown;
  const seen = new Set();
  for (let depth = 1; ; depth++) {
    if (value instanceof Error) {
      seen.add(value);
      node.message = String(value.message);
      node.type = value.constructor?.name || value.name || 'Error';
    } else {
      node.message = String(value);
      node.type = value === null ? 'null' : typeof value;
      return root;
    }
    const next = value.cause;
    if (next === undefined || next === null || seen.has(next) || depth >= MAX_DEPTH) return root;
    node.cause = {};
    node = node.cause;
    value = next;
  }
}

/** The answer JSON text of what an `execute` resolved with. */
function answerText(value) {
  if (value instanceof ToolResult) return JSON.stringify(value.toAnswer());
  const text = JSON.stringify({ output: value === undefined ? null : value });
  if (text === undefined) throw new TypeError('the tool returned a value JSON cannot carry');
  return text;
}

/** The names of `tools` that have an `execute` function (tool name → {execute}). */
export function checkTools(tools) {
  if (tools === undefined || tools === null) return {};
  if (typeof tools !== 'object') throw new TypeError('aimux: tools must be an object of {execute} entries');
  for (const [name, spec] of Object.entries(tools)) {
    if (typeof spec?.execute !== 'function') {
      throw new TypeError(`aimux: tools.${name}.execute must be a function`);
    }
  }
  return tools;
}

/** `params` with every tool `tools` names marked as the host's (`execute: true`). */
export function withTools(params, tools) {
  const names = Object.keys(tools);
  if (names.length === 0) return params;
  const out = { ...(params ?? {}) };
  const specs = { ...(out.tools ?? {}) };
  for (const name of names) specs[name] = { ...(specs[name] ?? {}), execute: true };
  out.tools = specs;
  return out;
}

/**
 * One stream's running tools: starts each host call as its `tool-call` event arrives, answers
 * it, keeps what each threw; `abort()` (the stream cancelled or left) aborts every `abortSignal`.
 */
export class ToolHost {
  #tools;
  #controller = new AbortController();
  #handle = 0;
  /** toolCallId → the value its execute threw */
  raised = new Map();

  constructor(tools) {
    this.#tools = tools;
  }

  get active() {
    return Object.keys(this.#tools).length > 0;
  }

  attach(handle) {
    this.#handle = handle;
  }

  /** Starts the call of a `tool-call` event when it is one of this host's tools. */
  start(event) {
    const spec = Object.hasOwn(this.#tools, event.toolName) ? this.#tools[event.toolName] : undefined;
    if (spec === undefined || event.invalid) return;
    const signal = this.#controller.signal;
    const id = event.toolCallId;
    const options = { abortSignal: signal, toolCallId: id };
    let running;
    try {
      running = Promise.resolve(spec.execute(event.input, options));
    } catch (err) {
      running = Promise.reject(err);
    }
    running.then(answerText).then(
      (text) => this.#answer(id, text),
      (err) => {
        this.raised.set(id, err);
        this.#answer(id, JSON.stringify({ failure: failureNode(err) }));
      },
    );
  }

  #answer(id, text) {
    if (this.#controller.signal.aborted) return; // the stream takes no more answers
    // an answer the stream no longer takes (cancelled, freed) is nobody's: dropped
    nativeStreamToolResult(this.#handle, id, text);
  }

  /** The stream's error, a tool's failure holding the very error its execute threw. */
  native(error) {
    const id = error?.toolCallId;
    if (error?.code === 22 && this.raised.has(id)) {
      Object.defineProperty(error, 'cause', {
        value: this.raised.get(id), writable: true, configurable: true, enumerable: false,
      });
    }
    return error;
  }

  abort(reason) {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }
}

const newStep = () => ({ text: '', toolCalls: [], toolResults: [], toolErrors: [] });
const callOf = (e) => ({ toolCallId: e.toolCallId, toolName: e.toolName, input: e.input });

/**
 * A generate op's result from its loop's events (stream_text with host tools), as the AI SDK's
 * generateText gives it: text, toolCalls and toolResults of the last step, every step, usage
 * summed. An `error` event throws its (decoded) error.
 */
export async function resultOf(events) {
  const steps = [];
  let step = newStep();
  for await (const event of events) {
    switch (event.type) {
      case 'text-delta': step.text += event.text ?? ''; break;
      case 'tool-call': step.toolCalls.push(callOf(event)); break;
      case 'tool-result': step.toolResults.push({ ...callOf(event), output: event.output }); break;
      case 'tool-error': step.toolErrors.push({ ...callOf(event), error: event.error }); break;
      case 'finish-step':
        step.finishReason = event.finishReason;
        step.usage = event.usage;
        step.response = event.response;
        steps.push(step);
        step = newStep();
        break;
      case 'error': throw event.error;
      case 'finish': {
        const last = steps.at(-1) ?? newStep();
        return {
          text: last.text,
          finishReason: event.finishReason,
          usage: event.usage,
          toolCalls: last.toolCalls,
          toolResults: last.toolResults,
          response: event.response,
          steps,
        };
      }
      default: break;
    }
  }
  throw new Error('aimux: the call ended before its finish event');
}
