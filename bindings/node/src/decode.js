// Envelope → native error chain (CONTRACT §1/§4, DESIGN.md "The native chain").
//
// Each aimux node is looked up by (kind, error.name), then by (kind, code); a node
// nothing matches (an unknown kind or code) still decodes, into the generic
// AimuxError / AimuxCauseError, with its raw JSON kept (toJSON()). A node without
// `kind` is a source node (AimuxSourceError). The native chain is root → cause →
// …; an AI_RetryError node's next link is the last of its `error.errors`.
import { AimuxError, AimuxCauseError, AimuxSourceError, hasMarker, AIMUX_NODE_MARKER, CODE_MAX, wireCode } from './base.js';
import { ErrorCode, RetryError, VARIANTS } from './generated/variants.js';

const byName = new Map();
const byCode = new Map();
for (const v of VARIANTS) {
  const nameKey = `${v.kind}\u0000${v.name}`;
  const codeKey = `${v.kind}\u0000${v.code}`;
  if (!byName.has(nameKey)) byName.set(nameKey, v);
  if (!byCode.has(codeKey)) byCode.set(codeKey, v); // code 3 is shared: the first listed wins
}

/** Deeper than this (the core cuts at 16) a node is decoded without its cause. */
const MAX_DEPTH = 256;

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The catalogue entry of an aimux node, or undefined (unknown kind / name / code).
 * A node that names itself is looked up by (kind, error.name) only: a name this
 * catalogue does not know stays generic rather than borrowing the class of its
 * code. A node without a name is looked up by (kind, code).
 */
export function lookupVariant(node) {
  const payload = isObject(node.error) ? node.error : {};
  if (typeof payload.name === 'string') return byName.get(`${node.kind}\u0000${payload.name}`);
  return byCode.get(`${node.kind}\u0000${wireCode(node.code)}`);
}

function isRetryNode(node) {
  return isObject(node.error) && node.error.name === RetryError.errorName;
}

function decodeNode(node, isRoot, depth, json) {
  const deeper = depth + 1 < MAX_DEPTH;
  if (typeof node.kind !== 'string') {
    const cause = deeper && isObject(node.cause) ? decodeNode(node.cause, false, depth + 1) : undefined;
    return new AimuxSourceError(node, { cause });
  }
  const options = isRoot && json !== undefined ? { json } : {};
  const retry = isRetryNode(node);
  if (retry && Array.isArray(node.error.errors)) {
    // Every attempt, decoded (an entry that is not a node is kept as it came).
    options.errors = node.error.errors.map((attempt) => (isObject(attempt) && deeper ? decodeNode(attempt, false, depth + 1) : attempt));
  }
  if (node.cause !== undefined && node.cause !== null) {
    if (isObject(node.cause) && deeper) options.cause = decodeNode(node.cause, false, depth + 1);
  } else if (retry && options.errors && options.errors.length > 0) {
    // AI_RetryError: the last attempt is the cause (the AI SDK's lastError).
    const last = options.errors[options.errors.length - 1];
    if (isAimuxChainError(last)) options.cause = last;
  }
  const variant = lookupVariant(node);
  if (isRoot) {
    const Root = variant ? variant.Root : AimuxError;
    const root = new Root(node, options);
    // A root without a valid code: its known name supplies it (checkRootCode refused the rest).
    if (wireCode(node.code) < 1 && variant) root.code = variant.code;
    return root;
  }
  const Cause = variant ? variant.Cause : AimuxCauseError;
  return new Cause(node, options);
}

function isAimuxChainError(value) {
  return hasMarker(value, AIMUX_NODE_MARKER);
}

/**
 * Decodes an envelope (JSON text, a Buffer of it, or the parsed object) into the
 * root error of its native chain. Throws a SyntaxError for text that is not JSON
 * and a TypeError for JSON that is not an envelope (not an object with a `kind`).
 */
export function decodeEnvelope(envelope) {
  let json;
  let value = envelope;
  if (typeof envelope === 'string' || envelope instanceof Uint8Array) {
    json = typeof envelope === 'string' ? envelope : Buffer.from(envelope).toString('utf8');
    value = JSON.parse(json);
  }
  if (!isObject(value)) throw new TypeError('aimux: an envelope must be a JSON object');
  if (typeof value.kind !== 'string') {
    throw new TypeError("aimux: not an envelope: it has no 'kind' (a source node is not an envelope)");
  }
  checkRootCode(value);
  return decodeNode(value, true, 0, json);
}

/**
 * A root's code must be an integer from 1 to 2^31-1, or absent / not a positive integer
 * with an `error.name` this catalogue knows (aimux_ops.wire.envelope.check_root): never a
 * root with code 0.
 */
function checkRootCode(root) {
  if (Number.isInteger(root.code) && root.code > CODE_MAX) throw new TypeError('aimux: not an envelope: its code is out of range (1..2147483647)');
  if (wireCode(root.code) < 1) {
    const name = isObject(root.error) ? root.error.name : undefined;
    if (typeof name !== 'string' || !byName.has(`${root.kind}\u0000${name}`)) {
      throw new TypeError("aimux: not an envelope: no valid 'code' (an integer >= 1) and no known error name");
    }
  }
}

/**
 * The long-lived decode-chain answer for one envelope (DESIGN.md "decode-chain"):
 * `{chain, root: {retryable, retryAfterMs}}`, or `{rejected: {code: 202, message}}`
 * when the decoder refuses it.
 */
export function decodeAnswer(envelope) {
  let root;
  try {
    root = decodeEnvelope(envelope);
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof TypeError) {
      return { rejected: { code: ErrorCode.INVALID_WIRE_JSON, message: err.message } };
    }
    throw err;
  }
  return {
    chain: nativeChain(root).map(chainEntry),
    root: { retryable: root.retryable, retryAfterMs: root.retryAfterMs ?? null },
  };
}

/** The native cause chain starting at `error` (inclusive), following `cause`. */
export function nativeChain(error) {
  const links = [];
  const seen = new Set();
  for (let e = error; e != null && !seen.has(e) && links.length < MAX_DEPTH; e = e.cause) {
    seen.add(e);
    links.push(e);
  }
  return links;
}

/** One decode-chain entry `{kind, code, name, message}` for a decoded node. */
export function chainEntry(error) {
  if (AimuxSourceError.isInstance(error)) {
    return { kind: 'source', code: 0, name: error.type ?? null, message: error.message };
  }
  if (hasMarker(error, AIMUX_NODE_MARKER)) {
    return { kind: error.kind, code: error.code, name: error.errorName ?? null, message: error.message };
  }
  // A foreign error somewhere in a chain (not produced by the decoder).
  return { kind: 'source', code: 0, name: error?.name ?? null, message: String(error?.message ?? error) };
}

/** The decode-chain array for an envelope: decode, walk the native chain. */
export function decodeChain(envelope) {
  return nativeChain(decodeEnvelope(envelope)).map(chainEntry);
}
