// The error classes themselves: fields, the Retry rule, markers, generic fallback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import {
  decodeEnvelope, nativeChain, isAimuxNode,
  AimuxError, AimuxCauseError, AimuxSourceError,
  APICallError, APICallErrorCause, RetryError, RetryErrorCause, TypeValidationError,
  InvalidResponseDataError, UnknownOpError, ErrorCode, VARIANTS,
} from '../src/index.js';

const refused = {
  kind: 'aimux', code: 11, message: 'Cannot connect to API: Connect call failed',
  error: { name: 'AI_APICallError', isRetryable: true },
  cause: {
    message: 'Cannot connect to host', type: 'ClientConnectorError',
    cause: { message: '[Errno 111] Connection refused', type: 'ConnectionRefusedError' },
  },
};
const retryEnvelope = {
  kind: 'aimux', code: 14, message: 'Failed after 2 attempts. Last error: Cannot connect to API',
  error: {
    name: 'AI_RetryError', reason: 'maxRetriesExceeded',
    errors: [
      { kind: 'aimux', code: 11, message: 'first', error: { name: 'AI_APICallError', statusCode: 429, isRetryable: true } },
      refused,
    ],
  },
  retryable: false,
  retryAfterMs: 1500,
};

test('RetryError: the last attempt is the cause, every attempt is on errors', () => {
  const e = decodeEnvelope(JSON.stringify(retryEnvelope));
  assert.ok(e instanceof RetryError);
  assert.ok(e instanceof AimuxError);
  assert.ok(e instanceof Error);
  assert.equal(e.name, 'AI_RetryError');
  assert.equal(e.kind, 'aimux');
  assert.equal(e.code, 14);
  assert.equal(e.reason, 'maxRetriesExceeded');
  assert.equal(e.retryable, false);
  assert.equal(e.retryAfterMs, 1500);
  assert.equal(e.errors.length, 2);
  assert.ok(e.errors.every((a) => a instanceof APICallErrorCause));
  assert.equal(e.cause, e.errors[1], 'cause is the same object as the last attempt');
  assert.equal(e.errors[0].statusCode, 429);
  assert.equal(e.errors[0].cause, undefined);
  assert.ok(APICallError.isInstance(e.cause));
  assert.ok(!APICallErrorCause.isInstance(e), 'a root is not a cause node');
  assert.ok(APICallErrorCause.isInstance(e.cause));
  assert.equal(e.cause.isRetryable, true);
  assert.ok(!('retryable' in e.cause), 'retryable is root-only');
  const source = e.cause.cause;
  assert.ok(source instanceof AimuxSourceError);
  assert.equal(source.type, 'ClientConnectorError');
  assert.equal(source.name, 'ClientConnectorError');
  assert.equal(source.cause.message, '[Errno 111] Connection refused');
  assert.equal(source.cause.cause, undefined);
  assert.deepEqual(nativeChain(e).map((l) => l.message), [
    retryEnvelope.message, refused.message, 'Cannot connect to host', '[Errno 111] Connection refused',
  ]);
});

test('toJSON returns the envelope and JSON.stringify round-trips it', () => {
  const text = JSON.stringify(retryEnvelope);
  const e = decodeEnvelope(text);
  assert.deepEqual(e.toJSON(), retryEnvelope);
  assert.equal(JSON.stringify(e), text);
  assert.equal(e.json, text, 'the raw text is kept');
  assert.deepEqual(e.cause.toJSON(), refused);
  const copy = e.toJSON();
  copy.message = 'changed';
  assert.equal(e.toJSON().message, retryEnvelope.message, 'toJSON hands out a copy');
});

test('retryAfterMs is absent when not observed; root-only fields', () => {
  const e = decodeEnvelope({ ...refused, retryable: true });
  assert.ok(e instanceof APICallError);
  assert.equal(e.retryable, true);
  assert.ok(!('retryAfterMs' in e));
  assert.ok(!('statusCode' in e), 'statusCode never fabricated');
});

test('standard cause: util.inspect and Error.prototype show the chain', () => {
  const e = decodeEnvelope(retryEnvelope);
  const shown = inspect(e, { depth: 10 });
  assert.match(shown, /AI_RetryError/);
  assert.match(shown, /\[cause\]/);
  assert.match(shown, /Connection refused/);
  assert.ok(Object.hasOwn(e, 'cause'));
  assert.ok(!Object.hasOwn(e.cause.cause.cause, 'cause'), 'the end of the chain has no cause property');
});

test('unknown kind and unknown code decode into the generic classes, raw JSON kept', () => {
  const env = {
    kind: 'quantum', code: 9001, message: 'from the future',
    error: { name: 'QuantumError', qubits: 3 },
    cause: { kind: 'aimux', code: 99, message: 'inner', error: { name: 'AI_LaterError' } },
    retryable: true,
  };
  const e = decodeEnvelope(JSON.stringify(env));
  assert.equal(Object.getPrototypeOf(e), AimuxError.prototype);
  assert.equal(e.kind, 'quantum');
  assert.equal(e.code, 9001);
  assert.equal(e.name, 'QuantumError');
  assert.equal(e.qubits, 3);
  assert.deepEqual(e.toJSON(), env);
  assert.equal(Object.getPrototypeOf(e.cause), AimuxCauseError.prototype);
  assert.equal(e.cause.name, 'AI_LaterError');
  assert.ok(VARIANTS.every((v) => !v.Root.isInstance(e) && !v.Root.isInstance(e.cause)));
});

test('a known code with an unknown name stays generic; a nameless node is found by code', () => {
  const named = decodeEnvelope({ kind: 'aimux', code: 11, message: 'x', error: { name: 'AI_SomethingNew' }, retryable: false });
  assert.ok(!APICallError.isInstance(named));
  assert.equal(named.name, 'AI_SomethingNew');
  const nameless = decodeEnvelope({ kind: 'aimux', code: 11, message: 'x', error: {}, retryable: false });
  assert.ok(APICallError.isInstance(nameless));
  assert.equal(nameless.errorName, null);
  const otherKind = decodeEnvelope({ kind: 'protocol', code: 11, message: 'x', error: {}, retryable: false });
  assert.ok(!APICallError.isInstance(otherKind), 'lookup is per kind');
});

test('code 3 is shared: the name picks TypeValidation vs InvalidResponseData', () => {
  const tv = decodeEnvelope({ kind: 'aimux', code: 3, message: 'v', error: { name: 'AI_TypeValidationError', value: { a: 1 } }, retryable: false });
  const ird = decodeEnvelope({ kind: 'aimux', code: 3, message: 'd', error: { name: 'AI_InvalidResponseDataError', data: 'x' }, retryable: false });
  assert.ok(TypeValidationError.isInstance(tv) && !InvalidResponseDataError.isInstance(tv));
  assert.ok(InvalidResponseDataError.isInstance(ird) && !TypeValidationError.isInstance(ird));
  assert.deepEqual(tv.value, { a: 1 });
});

test('markers: isInstance is marker based, not prototype based', () => {
  const e = decodeEnvelope({ kind: 'protocol', code: 300, message: "unknown op 'x'", error: { name: 'UnknownOpError', op: 'x', availableOps: [] }, retryable: false });
  assert.ok(UnknownOpError.isInstance(e));
  assert.ok(AimuxError.isInstance(e));
  assert.ok(isAimuxNode(e));
  // A foreign object carrying the registered marker is recognised (cross-copy rule)…
  const foreign = { [Symbol.for('aimux.error.UnknownOpError')]: true };
  assert.ok(UnknownOpError.isInstance(foreign));
  // …and look-alikes without it are not.
  assert.ok(!UnknownOpError.isInstance(new Error('unknown op')));
  assert.ok(!UnknownOpError.isInstance({ name: 'UnknownOpError', code: 300 }));
  for (const v of [null, undefined, 0, 'x', Symbol.for('aimux.error.UnknownOpError')]) {
    assert.equal(UnknownOpError.isInstance(v), false);
    assert.equal(AimuxError.isInstance(v), false);
  }
  // isInstance works detached from its class.
  const { isInstance } = UnknownOpError;
  assert.ok(isInstance(e));
  assert.ok(!AimuxCauseError.isInstance(e));
  assert.ok(!AimuxSourceError.isInstance(e));
});

test('generated classes carry their catalogue entry', () => {
  assert.equal(APICallError.kind, 'aimux');
  assert.equal(APICallError.code, 11);
  assert.equal(APICallError.errorName, 'AI_APICallError');
  assert.equal(APICallError.constant, 'API_CALL');
  assert.equal(ErrorCode.API_CALL, 11);
  assert.equal(ErrorCode.RETRY, 14);
  assert.equal(RetryErrorCause.code, 14);
  const names = new Set(VARIANTS.map((v) => v.className));
  assert.equal(names.size, VARIANTS.length, 'class names are unique');
  for (const v of VARIANTS) {
    assert.ok(v.Root.prototype instanceof AimuxError, `${v.className} extends AimuxError`);
    assert.ok(v.Cause.prototype instanceof AimuxCauseError, `${v.className}Cause extends AimuxCauseError`);
    assert.equal(v.Root.name, v.className);
    const root = new v.Root({ kind: v.kind, code: v.code, message: 'm', error: { name: v.name }, retryable: false });
    const cause = new v.Cause({ kind: v.kind, code: v.code, message: 'm', error: { name: v.name } });
    assert.ok(v.Root.isInstance(root) && v.Root.isInstance(cause));
    assert.ok(!v.Cause.isInstance(root) && v.Cause.isInstance(cause));
    for (const w of VARIANTS) {
      if (w !== v) assert.ok(!w.Root.isInstance(root) && !w.Root.isInstance(cause), `${w.className} ≠ ${v.className}`);
    }
  }
});

test('source node without type; a root without kind is not an envelope', () => {
  const e = decodeEnvelope({ kind: 'aimux', code: 1, message: 'm', error: { name: 'AI_OtherError' }, cause: { message: 'plain' }, retryable: false });
  assert.equal(e.cause.type, null);
  assert.equal(e.cause.name, 'AimuxSourceError');
  assert.throws(() => decodeEnvelope({ message: 'not an envelope', type: 'ValueError' }), TypeError);
});

test('bad input: not JSON, not an object', () => {
  assert.throws(() => decodeEnvelope('{oops'), SyntaxError);
  assert.throws(() => decodeEnvelope('[1,2]'), TypeError);
  assert.throws(() => decodeEnvelope('null'), TypeError);
});

test('a payload field never overwrites the error machinery', () => {
  const e = decodeEnvelope({
    kind: 'aimux', code: 1, message: 'real', retryable: false,
    error: { name: 'AI_OtherError', message: 'fake', cause: 'fake', stack: 'fake', toJSON: 'fake', retryable: true, kind: 'fake' },
  });
  assert.equal(e.message, 'real');
  assert.equal(e.kind, 'aimux');
  assert.equal(e.retryable, false);
  assert.equal(typeof e.toJSON, 'function');
  assert.ok(!('cause' in e));
  assert.equal(e.payload.message, 'fake', 'still reachable through payload');
});

test('deep chains decode without blowing the stack', () => {
  let node = { message: 'bottom', type: 'OSError' };
  for (let i = 0; i < 5000; i++) node = { message: `level ${i}`, cause: node };
  const e = decodeEnvelope({ kind: 'aimux', code: 1, message: 'top', error: { name: 'AI_OtherError' }, cause: node, retryable: false });
  const links = nativeChain(e);
  assert.ok(links.length > 16 && links.length <= 256, `bounded chain, got ${links.length}`);
});

test('a missing or non-string message decodes as ""', () => {
  const e = decodeEnvelope({ kind: 'aimux', code: 1, error: { name: 'AI_OtherError' }, cause: { message: 42, type: 'X', cause: { type: 'Y' } }, retryable: false });
  assert.equal(e.message, '');
  assert.equal(e.cause.message, '');
  assert.equal(e.cause.cause.message, '');
});

test('only a node named AI_RetryError is a Retry: a nameless code 14 keeps its raw errors', () => {
  const attempt = { kind: 'aimux', code: 11, message: 'a', error: { name: 'AI_APICallError' } };
  const e = decodeEnvelope({ kind: 'aimux', code: 14, message: 'r', error: { errors: [attempt] }, retryable: false });
  assert.ok(RetryError.isInstance(e), 'found by code');
  assert.equal(e.cause, undefined, 'no attempt becomes the cause');
  assert.deepEqual(e.errors, [attempt], 'attempts stay raw');
});
