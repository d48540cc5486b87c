// libaimux through koffi: loading, the meta ops, protocol errors, ownership.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call, stream, abiVersion, libraryPath,
  AimuxError, UnknownOpError, InvalidParamsError, WrongModeError, ErrorCode, VARIANTS,
  ownedPointers,
} from '../src/index.js';

test('loads libaimux (default koffi load, RTLD_LOCAL) with the expected ABI', () => {
  assert.match(libraryPath(), /libaimux\.so(\.1)?$/);
  assert.equal(abiVersion(), 1);
});

test('aimux.version', async () => {
  const v = await call('aimux.version', {});
  assert.equal(v.name, 'aimux-ops');
  assert.equal(v.abiVersion, 1);
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

test('aimux.manifest lists the ops and every error code with its name', async () => {
  const m = await call('aimux.manifest', {});
  assert.deepEqual(m.kinds, ['aimux', 'recording', 'binding', 'protocol']);
  const names = m.ops.map((o) => o.name);
  assert.ok(names.includes('aimux.version') && names.includes('aimux.manifest'));
  const api = m.errors.find((e) => e.code === 11);
  assert.equal(api.name, 'AI_APICallError');
  assert.equal(api.className, 'APICallError');
});

test('the generated classes cover exactly the live library\'s catalogue', async () => {
  const m = await call('aimux.manifest', {});
  const live = m.errors.map((e) => `${e.kind}/${e.code}/${e.name}/${e.className}/${e.constant}`);
  const generated = VARIANTS.map((v) => `${v.kind}/${v.code}/${v.name}/${v.className}/${v.constant}`);
  assert.deepEqual(generated, live);
});

test('unknown op → 300 UnknownOpError, with payload fields as properties', async () => {
  await assert.rejects(call('no.such.op', {}), (e) => {
    assert.ok(e instanceof UnknownOpError);
    assert.ok(e instanceof AimuxError);
    assert.equal(e.kind, 'protocol');
    assert.equal(e.code, ErrorCode.UNKNOWN_OP);
    assert.equal(e.code, 300);
    assert.equal(e.name, 'UnknownOpError');
    assert.equal(e.op, 'no.such.op');
    assert.ok(Array.isArray(e.availableOps) && e.availableOps.includes('aimux.version'));
    assert.equal(e.retryable, false);
    assert.equal(e.toJSON().code, 300);
    assert.equal(JSON.parse(e.json).kind, 'protocol');
    return true;
  });
});

test('invalid params → 301 InvalidParamsError', async () => {
  await assert.rejects(call('aimux.version', { unexpected: true }), (e) => {
    assert.ok(InvalidParamsError.isInstance(e), `got ${e.name} ${e.code}: ${e.message}`);
    assert.equal(e.code, 301);
    assert.equal(e.op, 'aimux.version');
    assert.ok(Array.isArray(e.violations) && e.violations.length > 0);
    return true;
  });
});

test('a call op through stream → 302 WrongModeError on the first iteration', async () => {
  const it = stream('aimux.version', {});
  await assert.rejects(it.next(), (e) => {
    assert.ok(WrongModeError.isInstance(e), `got ${e.name} ${e.code}: ${e.message}`);
    assert.equal(e.code, 302);
    assert.equal(e.expected, 'call');
    // the message names this binding's functions, not the C ABI's; the envelope is the core's
    assert.match(e.message, /^op 'aimux\.version' is a call op; use call \(typed: generateText, generateObject\)$/);
    assert.ok(e.stack.includes(e.message), e.stack);
    assert.match(JSON.parse(JSON.stringify(e)).message, /use aimux_call$/);
    return true;
  });
});

test('a stream op through call → 302 WrongModeError naming stream and streamText', async () => {
  await assert.rejects(call('stream_text', {}), (e) => {
    assert.ok(WrongModeError.isInstance(e), `got ${e.name} ${e.code}: ${e.message}`);
    assert.equal(e.code, 302);
    assert.equal(e.kind, 'protocol');
    assert.equal(e.name, 'WrongModeError');
    assert.equal(e.message, "op 'stream_text' is a stream op; use stream (typed: streamText)");
    return true;
  });
});

test('bad arguments are rejected before reaching the library', async () => {
  await assert.rejects(call(42, {}), TypeError);
  await assert.rejects(call('aimux.version', { big: 10n }), TypeError);
});

test('many concurrent calls all complete (worker pool, no lost or double-freed results)', async () => {
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2
    ? call('aimux.version', {})
    : call('no.such.op', {}).then(() => assert.fail('must reject'), (e) => e))));
  results.forEach((r, i) => {
    if (i % 2) assert.equal(r.name, 'aimux-ops');
    else assert.ok(UnknownOpError.isInstance(r));
  });
});

async function inChild(env, source) {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', source], {
    env: { ...process.env, ...env }, cwd: new URL('..', import.meta.url).pathname, timeout: 60000,
  });
  return JSON.parse(stdout);
}

const PROBE = `
import { call, RuntimeInitError } from './src/index.js';
try { await call('aimux.version', {}); console.log(JSON.stringify({ ok: true })); }
catch (e) { console.log(JSON.stringify({ ctor: e.constructor.name, code: e.code ?? null, isRuntimeInit: RuntimeInitError.isInstance(e), message: e.message })); }
`;

test('a runtime that cannot start: every call rejects with a 207 RuntimeInitError', async () => {
  const r = await inChild({ AIMUX_PYTHONPATH: '/nonexistent-aimux-path' }, PROBE);
  assert.equal(r.isRuntimeInit, true, JSON.stringify(r));
  assert.equal(r.code, 207);
  assert.ok(r.message.length > 0);
});

test('AIMUX_LIB naming a missing file: a 207 RuntimeInitError naming the path and the fix', async () => {
  const r = await inChild({ AIMUX_LIB: '/nonexistent-aimux/libaimux.so' }, PROBE);
  assert.equal(r.isRuntimeInit, true, JSON.stringify(r));
  assert.equal(r.code, 207);
  assert.match(r.message, /cannot load libaimux from AIMUX_LIB=\/nonexistent-aimux\/libaimux\.so: no such file/);
  assert.match(r.message, /Fix: /);
});

test('AIMUX_LIB naming a file that is not a library: a 207 RuntimeInitError', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const bad = `${mkdtempSync(`${tmpdir()}/aimux-node-`)}/libaimux.so.1`;
  writeFileSync(bad, 'not an ELF file');
  const r = await inChild({ AIMUX_LIB: bad }, PROBE);
  assert.equal(r.isRuntimeInit, true, JSON.stringify(r));
  assert.ok(r.message.includes(bad), r.message);
});

test('every string and error the library handed over was released exactly once', () => {
  assert.equal(ownedPointers(), 0);
});
