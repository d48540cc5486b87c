// The typed API (generateText / streamText / generateObject) as a user meets it: forward
// compatible (what the core sends is kept as sent: no field dropped, null stays null, absent
// stays absent; a param this binding does not know still reaches the core), and the HTTP status
// on the caught error (for a RetryError, the last attempt's).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  generateText, streamText, generateObject,
  AimuxError, APICallError, RetryError, InvalidParamsError, UnsupportedFunctionalityError,
} from '../src/index.js';
import { nativeCall } from '../src/native.js';
import { REPO, RECORDING, python, replayParams } from './helpers.js';

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

const fault = (spec, extra = {}) => ({
  model: { provider: 'openai', modelId: `fault:${spec}`, baseURL, apiKey: 'sk-test' },
  prompt: 'hi',
  ...extra,
});

/** What the library itself returned for `params` (no binding code in between). */
async function raw(op, params) {
  const { error, text } = await nativeCall(op, JSON.stringify(params));
  assert.equal(error, null);
  return JSON.parse(text);
}

test('generateText keeps every field the core sent, as sent (none dropped, null kept as null)', async () => {
  for (const params of [replayParams(), {
    model: { provider: 'anthropic', modelId: 'claude-sonnet-4-5', baseURL: 'http://127.0.0.1:1/v1' },
    prompt: 'Say hello in one word.',
    recording: { mode: 'replay', path: RECORDING.replace(/demo\.jsonl$/, 'anthropic.jsonl') },
  }]) {
    const got = await generateText(params);
    assert.deepStrictEqual(got, await raw('generate_text', params));
  }
  // a result member the core sends as null stays null and one it leaves out stays out
  const ok = await generateText(fault('mode=ok', { maxRetries: 0 }));
  const wire = await raw('generate_text', fault('mode=ok', { maxRetries: 0 }));
  assert.deepStrictEqual(Object.keys(ok).sort(), Object.keys(wire).sort());
  for (const [k, v] of Object.entries(wire)) if (v === null) assert.strictEqual(ok[k], null, k);
});

test('streamText events are the core\'s, member for member', async () => {
  const events = [];
  for await (const e of streamText(replayParams())) events.push(e);
  assert.deepStrictEqual(events.map((e) => e.type), ['text-delta', 'text-delta', 'finish']);
  assert.strictEqual(events.at(-1).response.headers['content-type'], 'text/event-stream');
  delete events.at(-1).response.headers;
  assert.deepStrictEqual(events.at(-1), {
    type: 'finish', finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 2, totalTokens: 14 },
    response: { id: 'chatcmpl-demo-1', modelId: 'gpt-4o-mini' },
  });
});

test('a param this binding does not know reaches the core, which names it (301)', async () => {
  await assert.rejects(generateText({ ...replayParams(), promptt: 'typo' }), (e) => {
    assert.ok(InvalidParamsError.isInstance(e), e);
    assert.match(e.message, /promptt/);
    return true;
  });
});

test('a tool with execute beside its spec runs the loop; generateObject refuses one by name (8)', async () => {
  await assert.rejects(generateObject({
    ...replayParams(), schema: { type: 'object' },
    tools: { f: { description: 'f', inputSchema: { type: 'object' }, execute: async () => 1 } },
  }), (e) => {
    assert.ok(UnsupportedFunctionalityError.isInstance(e), e);
    assert.match(e.message, /generateObject/);
    return true;
  });
  await assert.rejects(generateText({ ...replayParams(), tools: { f: { execute: 'no' } } }),
    { name: 'TypeError', message: /generateText: tools\.f\.execute must be a function/ });
  await assert.rejects(generateText(null), { name: 'TypeError', message: /generateText\(options\)/ });
  assert.throws(() => streamText([]), { name: 'TypeError', message: /streamText\(options\)/ });
});

test('abortSignal: an aborted signal rejects with its reason', async () => {
  const reason = new Error('stop now');
  await assert.rejects(generateText({ ...fault('mode=ok', { maxRetries: 0 }),
    tools: { f: { description: 'f', inputSchema: { type: 'object' }, execute: async () => 1 } },
    abortSignal: AbortSignal.abort(reason) }), (e) => e === reason);
});

test('a 429 with retry-after: statusCode and the hint on the caught APICallError', async () => {
  await assert.rejects(generateText(fault('mode=status;status=429;retry_after=2', { maxRetries: 0 })), (e) => {
    assert.ok(APICallError.isInstance(e), e);
    assert.equal(e.statusCode, 429);
    assert.equal(e.retryAfterMs, 2000);
    assert.equal(e.retryable, true);
    return true;
  });
});

test('a retried 429: the caught RetryError has the last attempt\'s statusCode', async () => {
  await assert.rejects(generateText(fault('mode=status;statuses=500,429;retry_after_ms=1', {
    maxRetries: 1, retry: { initialDelayMs: 1 },
  })), (e) => {
    assert.ok(RetryError.isInstance(e) && AimuxError.isInstance(e), e);
    assert.deepStrictEqual(e.errors.map((a) => a.statusCode), [500, 429]);
    assert.equal(e.statusCode, 429);
    return true;
  });
});

test('a refused connection: no statusCode is made up, the chain reaches the OS error', async () => {
  await assert.rejects(generateText({ ...fault('mode=ok'), model: { provider: 'openai', modelId: 'm', baseURL: 'http://127.0.0.1:1/v1', apiKey: 'sk-test' },
    maxRetries: 1, retry: { initialDelayMs: 1 } }), (e) => {
    assert.ok(RetryError.isInstance(e), e);
    assert.ok(!('statusCode' in e), 'no HTTP status: none reported');
    let link = e;
    while (link.cause) link = link.cause;
    assert.equal(link.name, 'ConnectionRefusedError');
    return true;
  });
});
