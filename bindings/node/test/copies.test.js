// Two copies of the package in one process (as when two dependencies each bundle
// their own): classes differ, but the Symbol.for markers make isInstance agree.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PKG_DIR } from './helpers.js';
import * as A from '../src/index.js';

const COPY_DIR = join(PKG_DIR, 'build', 'copy-b');
let B;

before(async () => {
  // Copy B must find the same library: its default path is relative to its own dir.
  process.env.AIMUX_LIB ??= A.libraryPath();
  rmSync(COPY_DIR, { recursive: true, force: true });
  mkdirSync(COPY_DIR, { recursive: true });
  for (const entry of ['package.json', 'src', 'decode-chain']) {
    cpSync(join(PKG_DIR, entry), join(COPY_DIR, entry), { recursive: true });
  }
  B = await import(pathToFileURL(join(COPY_DIR, 'src', 'index.js')).href);
});

const retryEnvelope = {
  kind: 'aimux', code: 14, message: 'Failed after 2 attempts',
  error: {
    name: 'AI_RetryError', reason: 'maxRetriesExceeded',
    errors: [{
      kind: 'aimux', code: 11, message: 'Cannot connect to API', error: { name: 'AI_APICallError', isRetryable: true },
      cause: { message: '[Errno 111] Connection refused', type: 'ConnectionRefusedError' },
    }],
  },
  retryable: false,
};

test('the copies are really distinct modules', () => {
  assert.notEqual(A.APICallError, B.APICallError);
  assert.notEqual(A.AimuxError, B.AimuxError);
  const fromB = B.decodeEnvelope(retryEnvelope);
  assert.ok(!(fromB instanceof A.AimuxError), 'instanceof does not cross copies');
});

test('isInstance agrees across the copies, root and cause nodes, both directions', () => {
  for (const [X, Y] of [[A, B], [B, A]]) {
    const e = Y.decodeEnvelope(JSON.stringify(retryEnvelope));
    assert.ok(X.RetryError.isInstance(e));
    assert.ok(X.AimuxError.isInstance(e));
    assert.ok(!X.AimuxCauseError.isInstance(e));
    assert.ok(X.APICallError.isInstance(e.cause));
    assert.ok(X.APICallErrorCause.isInstance(e.cause));
    assert.ok(X.AimuxCauseError.isInstance(e.cause));
    assert.ok(!X.RetryError.isInstance(e.cause));
    assert.ok(X.AimuxSourceError.isInstance(e.cause.cause));
    assert.ok(X.isAimuxNode(e.cause.cause));
    assert.ok(!X.APICallError.isInstance(e));
    assert.deepEqual(X.nativeChain(e).map(X.chainEntry), Y.decodeChain(retryEnvelope));
  }
});

test('errors thrown by a real call through copy B are recognised by copy A', async () => {
  await assert.rejects(B.call('no.such.op', {}), (e) => {
    assert.ok(A.UnknownOpError.isInstance(e));
    assert.ok(A.AimuxError.isInstance(e));
    assert.ok(!(e instanceof A.AimuxError));
    assert.ok(e instanceof B.UnknownOpError);
    assert.equal(e.code, A.ErrorCode.UNKNOWN_OP);
    return true;
  });
  await assert.rejects(A.call('no.such.op', {}), (e) => B.UnknownOpError.isInstance(e) && !(e instanceof B.AimuxError));
});
