// Streams and the event loop against the project's fault-injecting
// OpenAI-compatible server (tests/fault_server.py, on 127.0.0.1). No latency is
// asserted (timing belongs in bench/): a test waits on what the server saw (a
// request held, a client that went away) and releases held requests itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  call, stream, nativeChain, APICallError, AimuxError, AimuxSourceError,
  NoSuchToolError, InvalidToolInputError, JSONParseError,
  ownedPointers,
} from '../src/index.js';
import { REPO, python } from './helpers.js';

let server;
let baseURL;

before(async () => {
  server = spawn(python(), [join(REPO, 'tests', 'fault_server.py'), '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
});

after(() => {
  server?.kill('SIGTERM');
});

function params(spec, extra = {}) {
  return {
    model: { provider: 'openai', modelId: `fault:${spec}`, baseURL, apiKey: 'sk-test' },
    prompt: 'hi',
    maxRetries: 0,
    ...extra,
  };
}

/** The fault server's control endpoints (tests/fault_server.py). */
async function control(path, method = 'GET') {
  const res = await fetch(new URL(baseURL).origin + path, { method });
  return { status: res.status, body: await res.json() };
}

/** Resolves once the server saw `n` `event` events of `scenario` (a request's spec); throws if
 *  it did not within 60 s (a safety bound, so that a broken test fails instead of hanging). */
async function serverSaw(event, scenario, n = 1) {
  const q = new URLSearchParams({ event, scenario, n: String(n), timeout_ms: '60000' });
  const { status, body } = await control(`/__wait?${q}`);
  assert.equal(status, 200, `the server saw ${body.count} of ${n} ${event} events of ${scenario}`);
}

/** The `event` events the server saw for `scenario` so far (no waiting). */
async function serverEvents(event, scenario) {
  const { body } = await control('/__events');
  return body.filter((e) => e.event === event && e.scenario === scenario).length;
}

const release = (hold) => control(`/__release?hold=${hold}`, 'POST');

test('a live stream: deltas then finish', async () => {
  const events = [];
  for await (const ev of stream('stream_text', params('mode=ok;text=Hello world;parts=3'))) events.push(ev);
  assert.equal(events.filter((e) => e.type === 'text-delta').map((e) => e.text).join(''), 'Hello world');
  assert.equal(events.at(-1).type, 'finish');
});

test('deltas with quotes, backslashes, brackets, control and non-ASCII characters arrive exactly', async () => {
  // src/ready.js reads plain deltas without JSON.parse: each of these takes one path or the other
  const text = 'say "hi"} \\ back\\slash ], {"type":"text-delta"} é 日本 🎉 \n\t\u0001 end';
  const events = [];
  for await (const ev of stream('stream_text', params(`mode=ok;text=${encodeURIComponent(text)};parts=9`))) events.push(ev);
  const deltas = events.filter((e) => e.type === 'text-delta');
  assert.ok(deltas.length >= 9, `${deltas.length} deltas`);
  assert.ok(deltas.every((e) => Object.keys(e).join() === 'type,text'));
  assert.equal(deltas.map((e) => e.text).join(''), text);
  assert.equal(events.at(-1).type, 'finish');
});

test('a burst larger than the core queue (5,000 deltas at once) arrives whole, in order', { timeout: 60_000 }, async () => {
  // the core pauses a producer at 1,024 queued events; the event-driven drain must keep
  // polling the stream while events remain (it stalled forever before)
  let n = 0;
  let last = null;
  for await (const ev of stream('stream_text', params('mode=chunks;n=5000'))) {
    if (ev.type === 'text-delta') {
      assert.equal(ev.text, `w${n} `);
      n += 1;
    }
    last = ev;
  }
  assert.equal(n, 5000);
  assert.equal(last.type, 'finish');
});

// The iterator answers the events of the batch in hand without a generator step per event
// (src/index.js EventIterator); these pin what a generator would do.
test('next() called 600 times at once answers every event once, in order, then done', { timeout: 60_000 }, async () => {
  const it = stream('stream_text', params('mode=chunks;n=500'));
  const results = await Promise.all(Array.from({ length: 600 }, () => it.next()));
  const texts = results.filter((r) => !r.done && r.value.type === 'text-delta').map((r) => r.value.text);
  assert.deepEqual(texts, Array.from({ length: 500 }, (_, i) => `w${i} `));
  assert.equal(results[500].value.type, 'finish');
  assert.ok(results.slice(501).every((r) => r.done && r.value === undefined));
});

test('a next() made when an earlier one settles comes after the calls already waiting', async () => {
  // as an async generator answers them: in the order the calls were made
  const it = stream('stream_text', params('mode=ok;text=abcdef;parts=6'));
  const a = it.next();
  const c = a.then(() => it.next()); // made when a settles: after b, which is waiting then
  const b = it.next();
  const order = [];
  await Promise.all([a, b, c].map((p, i) => p.then((r) => order.push([i, r.value.text]))));
  assert.deepEqual(order.sort(), [[0, 'a'], [1, 'b'], [2, 'c']]);
  assert.equal(Object.prototype.toString.call(it), '[object AsyncGenerator]');
  await it.return();
});

test('an abort between two events of one batch throws at the next event', async () => {
  // one write of 50 deltas: the first next() brings them in one batch
  const controller = new AbortController();
  const it = stream('stream_text', params('mode=ok;text=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX;parts=50'),
    { signal: controller.signal });
  const first = await it.next();
  assert.equal(first.value.type, 'text-delta');
  controller.abort();
  await assert.rejects(it.next(), { name: 'AbortError' });
  assert.deepEqual(await it.next(), { value: undefined, done: true });
});

test('return() in the middle of a batch frees the stream and ends the iteration', async () => {
  const spec = 'mode=stall;after=3;stall_ms=60000;text=node-return';
  const it = stream('stream_text', params(spec));
  assert.equal((await it.next()).value.type, 'text-delta');
  assert.deepEqual(await it.return('r'), { value: 'r', done: true });
  assert.deepEqual(await it.next(), { value: undefined, done: true });
  await serverSaw('gone', spec); // freed: its connection closed, not left to the stall
});

test('an error inside a stream arrives as an error event with a decoded AimuxError', async () => {
  const events = [];
  for await (const ev of stream('stream_text', params('mode=errframe;after=1'))) events.push(ev);
  assert.deepEqual(events[0], { type: 'text-delta', text: 'Hel' });
  const errorEvent = events.find((e) => e.type === 'error');
  assert.ok(errorEvent, `no error event in ${JSON.stringify(events)}`);
  assert.ok(errorEvent.error instanceof AimuxError);
  assert.ok(APICallError.isInstance(errorEvent.error));
  assert.notEqual(events.at(-1).type, 'finish', 'an error is not a finish');
});

test('a call does not block the event loop while the server holds it', async () => {
  // The server answers only once this event loop, while the call waits, has seen the request
  // held and released it (a blocked loop could do neither: the hold would run out after a
  // minute, and the call resolve before the release). `released` is set before the release is
  // sent: once the server lets the call go, its answer and the release's own reply race back.
  const spec = 'mode=ok;hold=node-loop';
  let released = false;
  const pending = call('generate_text', params(spec, { timeoutMs: 120_000 })).then((v) => ({ v, released }));
  await serverSaw('held', spec);
  released = true;
  await release('node-loop');
  const { v, released: releasedFirst } = await pending;
  assert.equal(v.text, 'Hello!');
  assert.ok(releasedFirst, 'the call was answered only after this loop released it');
});

test('aborting a stream wakes the worker blocked in aimux_stream_next', async () => {
  // The server stalls a minute after the first delta. The abort comes from a timer: it fires
  // only if the loop runs while the stream waits; the iteration must end with it, and the server
  // must see the client leave (not the stream end after the stall).
  const spec = 'mode=stall;after=1;stall_ms=60000;text=node-abort';
  const controller = new AbortController();
  const events = [];
  let error;
  try {
    for await (const ev of stream('stream_text', params(spec), { signal: controller.signal })) {
      events.push(ev);
      if (ev.type === 'text-delta') setTimeout(() => controller.abort(), 300);
    }
  } catch (e) {
    error = e;
  }
  assert.deepEqual(events, [{ type: 'text-delta', text: 'node-' }]);
  assert.ok(error, 'the aborted iteration throws');
  assert.equal(error.name, 'AbortError');
  assert.equal(error, controller.signal.reason);
  await serverSaw('gone', spec);
});

test('an abort reason of the caller’s own is what the iteration throws', async () => {
  const controller = new AbortController();
  const reason = new Error('user went away');
  await assert.rejects(async () => {
    for await (const ev of stream('stream_text', params('mode=stall;after=1;stall_ms=30000'), { signal: controller.signal })) {
      if (ev.type === 'text-delta') controller.abort(reason);
    }
  }, (e) => e === reason);
});

test('an already aborted signal throws before anything starts', async () => {
  const it = stream('stream_text', params('mode=ok'), { signal: AbortSignal.abort() });
  await assert.rejects(it.next(), { name: 'AbortError' });
});

test('breaking out of a stalled stream frees it at once', async () => {
  const spec = 'mode=stall;after=1;stall_ms=60000;text=node-break';
  for await (const ev of stream('stream_text', params(spec))) {
    assert.equal(ev.type, 'text-delta');
    break;
  }
  await serverSaw('gone', spec); // the stream's connection closed, not left to the stall
  // The library still serves calls afterwards.
  assert.equal((await call('aimux.version', {})).name, 'aimux-ops');
});

test('a failure before the first event rejects the first next()', async () => {
  const it = stream('stream_text', params('mode=status;status=400'));
  await assert.rejects(it.next(), (e) => {
    assert.ok(APICallError.isInstance(e), `got ${e.name}: ${e.message}`);
    assert.equal(e.statusCode, 400);
    assert.equal(e.retryable, false);
    return true;
  });
});

test('429 with retry-after-ms: retryAfterMs on the root, status on the attempts', async () => {
  const p = params('mode=status;status=429;retry_after_ms=20', { maxRetries: 1, retry: { initialDelayMs: 10 } });
  await assert.rejects(call('generate_text', p), (e) => {
    assert.equal(e.name, 'AI_RetryError');
    assert.ok(APICallError.isInstance(e.cause));
    assert.equal(e.cause.statusCode, 429);
    assert.equal(e.retryAfterMs, 20);
    assert.ok(nativeChain(e).length >= 2);
    return true;
  });
});

test('aborting while the stream waits for its first event rejects at once', async () => {
  // The server holds the request before any answer (aimux_stream blocks until it lets go); the
  // abort comes once the server holds it, and the iteration rejects while it still does.
  const spec = 'mode=ok;hold=node-first';
  const controller = new AbortController();
  serverSaw('held', spec).then(() => controller.abort());
  await assert.rejects(async () => {
    for await (const ev of stream('stream_text', params(spec), { signal: controller.signal })) {
      assert.fail(`no event expected, got ${JSON.stringify(ev)}`);
    }
  }, { name: 'AbortError' });
  assert.equal(await serverEvents('released', spec), 0, 'rejected while the server still held the request');
  // and the abort shut the request's connection down: the server sees the client go while it
  // still holds the request (it used to stay open until the server answered)
  await serverSaw('gone', spec);
  assert.equal(await serverEvents('released', spec), 0, 'the connection closed before the answer');
  await release('node-first');
});

const tools = {
  weather: { description: 'Weather of a city', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

test('tool calls: a valid call, and an unknown tool whose error is decoded', async () => {
  const ok = await call('generate_text', params('mode=tool', { tools }));
  assert.equal(ok.finishReason, 'tool-calls');
  assert.deepEqual(ok.toolCalls, [{ toolCallId: 'call_1', toolName: 'weather', input: { city: 'Paris' } }]);
  const bad = await call('generate_text', params('mode=tool;tool=nope', { tools }));
  const [tc] = bad.toolCalls;
  assert.equal(tc.invalid, true);
  assert.ok(tc.error instanceof AimuxError, 'the tool call error is decoded');
  assert.ok(NoSuchToolError.isInstance(tc.error));
  assert.deepEqual(tc.error.availableTools, ['weather']);
  assert.equal(JSON.parse(JSON.stringify(bad)).toolCalls[0].error.code, 15, 'serialises back to the envelope');
});

test('a streamed tool call with invalid input: InvalidToolInputError → JSONParseError → decoder error', async () => {
  const events = [];
  for await (const ev of stream('stream_text', params('mode=tool;args=badjson', { tools }))) events.push(ev);
  const tc = events.find((e) => e.type === 'tool-call');
  assert.ok(tc, JSON.stringify(events));
  assert.equal(tc.invalid, true);
  assert.ok(InvalidToolInputError.isInstance(tc.error));
  assert.ok(JSONParseError.isInstance(tc.error.cause));
  assert.ok(tc.error.cause.cause instanceof AimuxSourceError);
  assert.equal(events.at(-1).type, 'finish');
});

test('a stream cut before the terminal event ends with an error event, not a finish', async () => {
  for (const spec of ['mode=cut;after=1', 'mode=nodone;after=1']) {
    const events = [];
    for await (const ev of stream('stream_text', params(spec))) events.push(ev);
    assert.equal(events[0].type, 'text-delta', spec);
    assert.ok(events.some((e) => e.type === 'error' && e.error instanceof AimuxError), `${spec}: ${JSON.stringify(events)}`);
    assert.ok(!events.some((e) => e.type === 'finish'), `${spec}: no finish`);
  }
});

test('several streams and calls at once', async () => {
  const collect = async (spec) => {
    let text = '';
    for await (const ev of stream('stream_text', params(spec))) if (ev.type === 'text-delta') text += ev.text;
    return text;
  };
  const results = await Promise.all([
    collect('mode=ok;text=one two three;parts=3'),
    collect('mode=delay;delay_ms=200;text=four five'),
    collect('mode=ok;text=six'),
    call('generate_text', params('mode=delay;delay_ms=100;text=seven')).then((r) => r.text),
    call('aimux.version', {}).then((v) => v.name),
  ]);
  assert.deepEqual(results, ['one two three', 'four five', 'six', 'seven', 'aimux-ops']);
});

test('every string and error the library handed over was released exactly once', () => {
  assert.equal(ownedPointers(), 0);
});

// DESIGN.md "The host's exit": a Node process that exits while the core's stream threads are
// busy (20 fast streams, each read up to its first event: the first 8 on reader threads, the
// others on the stream loop) ends with its own exit code, every time: the C exit handlers run
// while the core's threads go on, and nothing they use is torn down. (native/tests/test_guest.c
// `exit` proves it deterministically, with OpenSSL on those threads, both ways.)
test('a process that exits while streams run ends with its own exit code', async () => {
  const script = `
    import { stream } from ${JSON.stringify(join(REPO, 'bindings', 'node', 'src', 'index.js'))};
    const p = (spec) => ({ model: { provider: 'openai', modelId: 'fault:' + spec,
      baseURL: ${JSON.stringify(baseURL)}, apiKey: 'sk-test' }, prompt: 'hi', maxRetries: 0 });
    const firsts = [];
    for (let i = 0; i < 20; i++) {
      firsts.push((async () => { for await (const ev of stream('stream_text', p('mode=chunks;n=20000'))) return ev; })());
    }
    await Promise.all(firsts);
    process.exit(7);
  `;
  for (let round = 0; round < 5; round++) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])));
    assert.deepEqual([code, signal], [7, null], `round ${round}: ${err}`);
  }
});
