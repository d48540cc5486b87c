// The README's Node first program (examples/first-program.ts, embedded verbatim) as a new user
// runs it: the package packed and installed into a project outside the checkout, the program
// type-checked there with `tsc --strict`, compiled and run against the fault server
// (tests/fault_server.py): generate, stream, a 429 with retry-after, a refused connection.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PKG_DIR, REPO, python } from './helpers.js';

const run = promisify(execFile);
const EXAMPLE = join(PKG_DIR, 'examples', 'first-program.ts');
const TSC = join(PKG_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
let work;
let server;
let baseURL;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'aimux-node-first-'));
  assert.ok(!work.startsWith(REPO), 'outside the checkout');
  const [info] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: PKG_DIR, encoding: 'utf8' }));
  server = spawn(python(), [join(REPO, 'tests', 'fault_server.py'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  baseURL = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`fault server did not start: ${out}`)), 20000);
    server.once('exit', (code) => reject(new Error(`fault server exited (${code}): ${out}`)));
    server.stdout.on('data', (d) => {
      out += d;
      const m = /fault server on (http\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', join(work, info.filename)],
    { cwd: app, timeout: 150000 });
  // the compiler and Node's types, as a user's devDependencies would give them
  mkdirSync(join(app, 'node_modules', '@types'), { recursive: true });
  symlinkSync(join(PKG_DIR, 'node_modules', '@types', 'node'), join(app, 'node_modules', '@types', 'node'));
  copyFileSync(EXAMPLE, join(app, 'first-program.ts'));
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, types: ['node'], outDir: 'dist' },
    files: ['first-program.ts'],
  }));
});

after(() => {
  server?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the README shows the first program verbatim', () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  assert.ok(readme.includes('<!-- first-program:node -->\n```ts\n' + readFileSync(EXAMPLE, 'utf8') + '```'),
    'README embeds bindings/node/examples/first-program.ts');
});

// the bound covers tsc's own (120 s) and the run's (60 s): a loaded machine is slow
test('installed outside the checkout, it type-checks with tsc --strict and runs', { timeout: 300_000 }, async () => {
  const app = join(work, 'app');
  await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: app, timeout: 120000 }).catch((e) => {
    assert.fail(`tsc --strict refused the first program:\n${e.stdout}${e.stderr}`);
  });
  const env = { ...process.env, OPENAI_API_KEY: 'sk-first-program' };
  const { stdout } = await run(process.execPath, [join('dist', 'first-program.js'), baseURL], { cwd: app, env, timeout: 60000 });
  const lines = stdout.trim().split('\n');
  assert.equal(lines[0], 'text: Hello! (stop, 14 tokens)');
  assert.equal(lines[1], 'streamed: Hello!');
  assert.equal(lines[2], 'AI_RetryError: status 429, retryable true, retry after 1000 ms, 2 attempts');
  assert.match(lines[3], /^caused by AI_RetryError: Failed after 3 attempts/);
  assert.match(lines[4], /^caused by AI_APICallError: Cannot connect to API/);
  assert.match(lines.at(-1), /^caused by ConnectionRefusedError: .*Connection refused$/);
});
