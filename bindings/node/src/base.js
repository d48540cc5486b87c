// Base error classes of the aimux-ops Node binding.
//
// An envelope decodes into a chain of native errors linked through the standard
// `Error.cause`: the root is an `AimuxError`, every aimux node below it an
// `AimuxCauseError`, every snapshot of an external exception an `AimuxSourceError`.
// Per-variant subclasses (generated from schema/manifest.json into
// ./generated/variants.js) refine the first two.
//
// Type checks are marker based (`Symbol.for('aimux.error.<ClassName>')`, a
// process-wide registered symbol) so that `isInstance` agrees across two copies
// of this package loaded in the same process, the way the AI SDK does it.

/** Marker carried by every node of a decoded chain (root, aimux cause, source). */
export const AIMUX_NODE_MARKER = Symbol.for('aimux.error');

export function markerFor(className) {
  return Symbol.for(`aimux.error.${className}`);
}

export function hasMarker(value, marker) {
  return value != null && (typeof value === 'object' || typeof value === 'function') && value[marker] === true;
}

/** The largest code a node may carry: aimux_error_code() returns an int32_t. */
export const CODE_MAX = 0x7fffffff;

/**
 * The largest `retryAfterMs` a root reports (aimux_ops.wire.envelope.RETRY_AFTER_MAX_MS):
 * the longest Go time.Duration in whole milliseconds, exact in a double.
 */
export const RETRY_AFTER_MAX_MS = 9223372036854;

/**
 * A node's code as every decoder reads it (DESIGN.md "Numbers on the wire"): a whole
 * number from 0 to 2^31-1 (3 and 3.0 alike), else 0.
 */
export function wireCode(code) {
  return Number.isInteger(code) && code >= 0 && code <= CODE_MAX ? code : 0;
}

/** Own properties that payload fields must never overwrite. */
const RESERVED = new Set([
  'name', 'message', 'cause', 'stack', 'kind', 'code', 'retryable', 'retryAfterMs',
  'payload', 'truncated', 'type', 'toJSON', 'constructor', 'json', 'errorName',
  'envelope', 'node', 'errors', '__proto__', 'prototype',
]);

const kJson = Symbol('aimux.json');

function defineHidden(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: false, writable: false, configurable: true });
}

function clone(value) {
  return value === undefined ? undefined : structuredClone(value);
}

/**
 * Shared construction of an aimux node (root or cause): kind, code, name,
 * payload and the payload fields as own properties.
 */
function initAimuxNode(self, node, options, defaultName) {
  const payload = node.error !== null && typeof node.error === 'object' && !Array.isArray(node.error) ? node.error : {};
  const errorName = typeof payload.name === 'string' ? payload.name : null;
  defineHidden(self, 'name', errorName ?? defaultName);
  /** `error.name` as sent, or null when the node carried none. */
  defineHidden(self, 'errorName', errorName);
  self.kind = typeof node.kind === 'string' ? node.kind : String(node.kind);
  self.code = wireCode(node.code);
  defineHidden(self, 'payload', payload);
  for (const [key, value] of Object.entries(payload)) {
    if (RESERVED.has(key)) continue;
    self[key] = value;
  }
  // `errors` (AI_RetryError's attempts) holds the decoded attempts when the
  // decoder supplies them, else the raw value.
  if (options && Array.isArray(options.errors)) self.errors = options.errors;
  else if ('errors' in payload) self.errors = payload.errors;
  if (Array.isArray(node.truncated)) self.truncated = node.truncated;
}

/** DESIGN.md: a missing or non-string `message` decodes as "". */
function messageOf(node) {
  return typeof node.message === 'string' ? node.message : '';
}

function causeOption(options) {
  return options && 'cause' in options && options.cause !== undefined ? { cause: options.cause } : undefined;
}

/**
 * The root of a decoded envelope: every failure that leaves the core.
 * `toJSON()` returns the envelope object.
 */
export class AimuxError extends Error {
  static marker = markerFor('AimuxError');

  static isInstance(error) {
    return hasMarker(error, AimuxError.marker);
  }

  constructor(envelope, options) {
    const env = envelope !== null && typeof envelope === 'object' ? envelope : {};
    super(messageOf(env), causeOption(options));
    initAimuxNode(this, env, options, new.target.prototype.name ?? 'AimuxError');
    this.retryable = env.retryable === true;
    // Root-only, as given (CONTRACT §4): a whole number from 0 to RETRY_AFTER_MAX_MS, else absent.
    const after = env.retryAfterMs;
    if (Number.isInteger(after) && after >= 0 && after <= RETRY_AFTER_MAX_MS) this.retryAfterMs = after;
    defineHidden(this, 'envelope', env);
    if (typeof options?.json === 'string') defineHidden(this, kJson, options.json);
  }

  /** The envelope JSON text (as received when decoded from text). */
  get json() {
    return this[kJson] ?? JSON.stringify(this.envelope);
  }

  /** The envelope object (a copy), as the core sent it. */
  toJSON() {
    return clone(this.envelope);
  }
}
AimuxError.prototype.name = 'AimuxError';
AimuxError.prototype[AimuxError.marker] = true;
AimuxError.prototype[AIMUX_NODE_MARKER] = true;

/** An aimux node inside the chain (below the root): `{kind, code, message, error, cause?}`. */
export class AimuxCauseError extends Error {
  static marker = markerFor('AimuxCauseError');

  static isInstance(error) {
    return hasMarker(error, AimuxCauseError.marker);
  }

  constructor(node, options) {
    const n = node !== null && typeof node === 'object' ? node : {};
    super(messageOf(n), causeOption(options));
    initAimuxNode(this, n, options, new.target.prototype.name ?? 'AimuxCauseError');
    defineHidden(this, 'node', n);
  }

  /** The node object (a copy). */
  toJSON() {
    return clone(this.node);
  }
}
AimuxCauseError.prototype.name = 'AimuxCauseError';
AimuxCauseError.prototype[AimuxCauseError.marker] = true;
AimuxCauseError.prototype[AIMUX_NODE_MARKER] = true;

/**
 * A snapshot of an external exception (socket, TLS, JSON decoder, file system, …):
 * `{message, type?, cause?}`; `type` is the exception's class name.
 */
export class AimuxSourceError extends Error {
  static marker = markerFor('AimuxSourceError');

  static isInstance(error) {
    return hasMarker(error, AimuxSourceError.marker);
  }

  constructor(node, options) {
    const n = node !== null && typeof node === 'object' ? node : {};
    super(messageOf(n), causeOption(options));
    const type = typeof n.type === 'string' ? n.type : null;
    defineHidden(this, 'name', type ?? 'AimuxSourceError');
    this.type = type;
    if (Array.isArray(n.truncated)) this.truncated = n.truncated;
    defineHidden(this, 'node', n);
  }

  toJSON() {
    return clone(this.node);
  }
}
AimuxSourceError.prototype.name = 'AimuxSourceError';
AimuxSourceError.prototype[AimuxSourceError.marker] = true;
AimuxSourceError.prototype[AIMUX_NODE_MARKER] = true;

/** True for any node of a decoded chain, from any copy of the package. */
export function isAimuxNode(error) {
  return hasMarker(error, AIMUX_NODE_MARKER);
}
