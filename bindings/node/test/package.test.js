// The package as a user gets it: packed, installed into a fresh project, then the
// README's example (examples/catch-cause.mjs) run against the installed copy.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, execFile } from 'node:child_process';
import { readFileSync, rmSync, mkdirSync, writeFileSync, copyFileSync, existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PKG_DIR } from './helpers.js';
import { libraryPath } from '../src/index.js';

const run = promisify(execFile);
const BUILD = join(PKG_DIR, 'build');
const CONSUMER = join(BUILD, 'consumer');
const EXAMPLE = join(PKG_DIR, 'examples', 'catch-cause.mjs');
const pkg = JSON.parse(readFileSync(join(PKG_DIR, 'package.json'), 'utf8'));
let tarball;

before(() => {
  mkdirSync(BUILD, { recursive: true });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', BUILD], { cwd: PKG_DIR, encoding: 'utf8' });
  const [info] = JSON.parse(out);
  tarball = join(BUILD, info.filename);
  const files = new Set(info.files.map((f) => f.path));
  for (const f of ['package.json', 'README.md', 'decode-chain', 'src/index.js', 'src/index.d.ts', 'src/native.js',
    'src/decode.js', 'src/decode.d.ts', 'src/base.js', 'src/base.d.ts', 'src/generated/variants.js', 'src/generated/variants.d.ts']) {
    assert.ok(files.has(f), `${f} is in the packed package`);
  }
  assert.ok(![...files].some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), 'no tests or deps packed');
});

test('the README shows the example verbatim', () => {
  const readme = readFileSync(join(PKG_DIR, 'README.md'), 'utf8');
  const example = readFileSync(EXAMPLE, 'utf8');
  assert.ok(readme.includes('```js\n' + example + '```'), 'README embeds examples/catch-cause.mjs');
  assert.match(example, /catch \(e\) \{\n\s+if \(APICallError\.isInstance\(e\.cause\)\)/);
});

// the bound covers its npm install's own (150 s) and the run's (60 s): a loaded machine is slow
test('installed from the packed tarball, a user catches APICallError.isInstance(e.cause)', { timeout: 300_000 }, async () => {
  rmSync(CONSUMER, { recursive: true, force: true });
  mkdirSync(CONSUMER, { recursive: true });
  writeFileSync(join(CONSUMER, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], { cwd: CONSUMER, timeout: 150000 });
  const installed = join(CONSUMER, 'node_modules', pkg.name);
  assert.ok(existsSync(join(installed, 'src', 'generated', 'variants.js')));
  copyFileSync(EXAMPLE, join(CONSUMER, 'catch-cause.mjs'));
  // An installed copy finds the library the way an installed libaimux is found: `libaimux.so.1`
  // through the system loader (here LD_LIBRARY_PATH), with no AIMUX_LIB.
  const libDir = join(BUILD, 'loader-lib');
  rmSync(libDir, { recursive: true, force: true });
  mkdirSync(libDir);
  symlinkSync(libraryPath(), join(libDir, 'libaimux.so.1'));
  const env = { ...process.env, LD_LIBRARY_PATH: libDir };
  delete env.AIMUX_LIB;
  const { stdout } = await run(process.execPath, ['catch-cause.mjs'], { cwd: CONSUMER, env, timeout: 60000 });
  const lines = stdout.trim().split('\n');
  assert.match(lines[0], /^AI_RetryError after 2 attempts; last: Cannot connect to API: .*Connection refused \(isRetryable=true\)$/);
  assert.match(lines[1], /^ {2}aimux 14 AI_RetryError: /);
  assert.match(lines[2], /^ {2}aimux 11 AI_APICallError: /);
  assert.match(lines.at(-1), /^ {2}source 0 ConnectionRefusedError: .*Connection refused$/);
});

test('the installed decode-chain runs as an executable', async () => {
  const decodeChain = join(CONSUMER, 'node_modules', pkg.name, 'decode-chain');
  const env = '{"kind":"aimux","code":11,"message":"m","error":{"name":"AI_APICallError"},"cause":{"message":"refused","type":"OSError"},"retryable":true}';
  const child = execFile(decodeChain);
  const out = new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d) => { text += d; });
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}`))));
  });
  child.stdin.end(env);
  assert.deepEqual(JSON.parse(await out), [
    { kind: 'aimux', code: 11, name: 'AI_APICallError', message: 'm' },
    { kind: 'source', code: 0, name: 'OSError', message: 'refused' },
  ]);
});

test('the installed copy with no library findable: a 207 RuntimeInitError naming what was tried and the fix', async () => {
  const probe = `import { call, RuntimeInitError } from 'aimux-ops';
try { await call('aimux.version', {}); console.log('{"ok":true}'); }
catch (e) { console.log(JSON.stringify({ runtimeInit: RuntimeInitError.isInstance(e), code: e.code, message: e.message })); }`;
  writeFileSync(join(CONSUMER, 'probe.mjs'), probe);
  const env = { ...process.env, LD_LIBRARY_PATH: '' };
  delete env.AIMUX_LIB;
  const { stdout } = await run(process.execPath, ['probe.mjs'], { cwd: CONSUMER, env, timeout: 60000 });
  const r = JSON.parse(stdout);
  assert.equal(r.runtimeInit, true, stdout);
  assert.equal(r.code, 207);
  assert.match(r.message, /Tried: AIMUX_LIB \(not set\); libaimux\.so\.1 through the system loader/);
  assert.doesNotMatch(r.message, /in-repo build/, 'an installed copy is not a checkout');
  assert.match(r.message, /Fix: .*LD_LIBRARY_PATH.*AIMUX_LIB/);
});
