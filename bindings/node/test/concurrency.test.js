// 1,000 concurrent slow streams in one Node process with the default
// UV_THREADPOOL_SIZE (issue 12, item 4): while they are all open, fs.readFile
// (the libuv pool) and call('aimux.version') both answer, the streams are
// still running when they do, and the process's thread count stays bounded
// (no thread per stream, in libuv or in the library). Liveness and ordering are
// asserted, not latencies (timing belongs in bench/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { stream, call } from '../src/index.js';
import { REPO, python } from './helpers.js';

const STREAMS = 1000;
const EVENTS = 20;

function threads() {
  return readdirSync('/proc/self/task').length;
}

/**
 * tests/trickle_server.py on 127.0.0.1 (ephemeral port), --hold: every stream waits after its
 * first delta until release(); stops when its stdin closes.
 */
async function trickleServer(events, intervalMs) {
  const child = spawn(python(), [join(REPO, 'tests', 'trickle_server.py'), '--events', String(events),
    '--interval-ms', String(intervalMs), '--hold'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise((resolvePort, reject) => {
    child.once('exit', (code) => reject(new Error(`trickle server exited (${code})`)));
    lines.once('line', (line) => resolvePort(Number(line.split(' ')[1])));
  });
  return { port, release: () => child.stdin.write('release\n'), stop: () => { child.stdin.end(); child.kill(); } };
}

test('1,000 concurrent slow streams: the event loop and the libuv pool stay live, threads bounded', { timeout: 180_000 }, async () => {
  assert.equal(process.env.UV_THREADPOOL_SIZE, undefined, 'runs with the default libuv pool (4 threads)');
  const server = await trickleServer(EVENTS, 20);
  try {
    const params = {
      model: { provider: 'openai', modelId: 'm', baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'sk-node' },
      prompt: 'hi',
      maxRetries: 0,
      timeoutMs: 150_000,
    };
    const t0 = Date.now();
    const baseline = threads();
    let maxThreads = baseline;
    const sampler = setInterval(() => { maxThreads = Math.max(maxThreads, threads()); }, 20);
    let finished = 0;
    let firstEvents = 0;
    const results = Array.from({ length: STREAMS }, async () => {
      let deltas = 0;
      let text = '';
      let finish = null;
      let first = true;
      for await (const ev of stream('stream_text', params)) {
        if (first) { first = false; firstEvents += 1; }
        if (ev.type === 'text-delta') { deltas += 1; text += ev.text; } else if (ev.type === 'finish') finish = ev;
        else assert.fail(`unexpected event ${JSON.stringify(ev)}`);
      }
      finished += 1;
      return { deltas, text, finish };
    });

    // Wait until every stream is open and delivering (each holds a connection now). The server
    // holds each one after its first delta until release(): none can finish first, however slow
    // the machine is.
    while (firstEvents < STREAMS && finished === 0) await new Promise((r) => setTimeout(r, 10));
    const openAtProbe = firstEvents - finished;
    const tOpen = Date.now() - t0;

    // The libuv pool and the library both answer while the streams run.
    const [file, version] = await Promise.all([
      readFile(join(REPO, 'README.md'), 'utf8'),
      call('aimux.version', {}),
    ]);
    const stillRunning = STREAMS - finished;
    const threadsWhileOpen = threads();
    server.release();

    const all = await Promise.all(results);
    clearInterval(sampler);
    console.log(`# ${STREAMS} streams: all delivering after ${tOpen} ms, all done after ${Date.now() - t0} ms; `
      + `threads: baseline ${baseline}, ${threadsWhileOpen} while open, max ${maxThreads}; ${stillRunning} running at the probes`);

    assert.ok(file.length > 0);
    assert.equal(version.name, 'aimux-ops');
    assert.equal(openAtProbe, STREAMS, 'every stream was open and delivering before the probes');
    assert.ok(stillRunning > 0, `readFile and call answered while streams were still running (${stillRunning} of ${STREAMS} open)`);
    const expected = Array.from({ length: EVENTS }, (_, i) => `e${i} `).join('');
    for (const r of all) {
      assert.equal(r.deltas, EVENTS);
      assert.equal(r.text, expected);
      assert.equal(r.finish?.finishReason, 'stop');
    }
    // one reader thread of the core per open event-driven stream (docs/DESIGN.md "Event-driven
    // streams on reader threads"), none beyond them: no libuv worker is held by a stream
    assert.ok(maxThreads <= baseline + STREAMS + 16, `threads stayed bounded: baseline ${baseline}, max ${maxThreads}, with ${STREAMS} streams open: ${threadsWhileOpen}`);
  } finally {
    server.stop();
  }
});
