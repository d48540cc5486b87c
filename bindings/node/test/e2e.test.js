// End to end through libaimux on the shipped recording, and the failing call of
// recordings/README.md (port 1 on loopback is closed) down to the OS error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import {
  call, stream, nativeChain, chainEntry,
  AimuxError, AimuxCauseError, AimuxSourceError, APICallError, APICallErrorCause, RetryError,
  RecordingOpenFileError, ErrorCode,
  ownedPointers,
} from '../src/index.js';
import { RECORDING, replayParams, failingParams } from './helpers.js';

test('the shipped recording is there', () => {
  assert.ok(existsSync(RECORDING), `${RECORDING} is missing`);
});

test('generate_text replays the shipped recording', async () => {
  const result = await call('generate_text', replayParams());
  // the recorded response's headers (redacted), as the live call had them
  assert.equal(result.response.headers['content-type'], 'application/json');
  delete result.response.headers;
  assert.deepEqual(result, {
    text: 'Hello!',
    content: [{ type: 'text', text: 'Hello!' }],
    finishReason: 'stop',
    usage: { inputTokens: 12, outputTokens: 2, totalTokens: 14 },
    toolCalls: [],
    response: { id: 'chatcmpl-demo-1', modelId: 'gpt-4o-mini' },
  });
});

test('stream_text replays the shipped recording: Hel, lo!, finish', async () => {
  const events = [];
  for await (const ev of stream('stream_text', replayParams())) events.push(ev);
  assert.deepEqual(events.filter((e) => e.type === 'text-delta').map((e) => e.text), ['Hel', 'lo!']);
  const last = events.at(-1);
  assert.equal(last.type, 'finish');
  assert.equal(last.finishReason, 'stop');
  assert.deepEqual(last.usage, { inputTokens: 12, outputTokens: 2, totalTokens: 14 });
  assert.equal(events.length, 3);
});

test('the second provider: recordings/anthropic.jsonl replays both ops', async () => {
  const params = {
    model: { provider: 'anthropic', modelId: 'claude-sonnet-4-5', baseURL: 'http://127.0.0.1:1/v1' },
    prompt: 'Say hello in one word.',
    recording: { mode: 'replay', path: RECORDING.replace(/demo\.jsonl$/, 'anthropic.jsonl') },
  };
  const result = await call('generate_text', params);
  assert.equal(result.text, 'Hello!');
  const { headers, ...response } = result.response;
  assert.deepEqual(response, { id: 'msg_01QC4g3HwBThD4BaNtBckFDJ', modelId: 'claude-sonnet-4-5' });
  assert.equal(headers['request-id'], 'req_011CSHoEeqs5C35K2UUqR7Fy');
  const events = [];
  for await (const ev of stream('stream_text', params)) events.push(ev);
  assert.deepEqual(events.map((e) => e.type), ['text-delta', 'text-delta', 'finish']);
  assert.equal(events.at(-1).finishReason, 'stop');
});

test('the failing call: RetryError → APICallError → … → "Connection refused"', async () => {
  let caught;
  try {
    await call('generate_text', failingParams());
    assert.fail('the call must fail');
  } catch (e) {
    caught = e;
  }
  const e = caught;
  assert.ok(e instanceof RetryError, `got ${e?.name}: ${e?.message}`);
  assert.ok(e instanceof AimuxError && e instanceof Error);
  assert.equal(e.code, ErrorCode.RETRY);
  assert.equal(e.reason, 'maxRetriesExceeded');
  assert.equal(e.errors.length, 2, 'maxRetries 1 → two attempts');
  assert.ok(e.errors.every((a) => APICallErrorCause.isInstance(a)));
  assert.equal(e.cause, e.errors[1], 'the last attempt is the cause');

  // What a user writes:
  assert.ok(APICallError.isInstance(e.cause));
  assert.ok(e.cause instanceof AimuxCauseError);
  assert.equal(e.cause.code, 11);
  assert.ok(!('statusCode' in e.cause), 'no status was observed, none is fabricated');

  const links = nativeChain(e);
  const last = links.at(-1);
  assert.ok(last instanceof AimuxSourceError);
  assert.match(last.message, /Connection refused/);
  assert.equal(last.type, 'ConnectionRefusedError');
  assert.ok(links.slice(2).every((l) => l instanceof AimuxSourceError), 'every transport layer kept as a source node');
  assert.ok(links.length >= 4, `chain too short: ${JSON.stringify(links.map(chainEntry))}`);
  for (const link of links) {
    assert.doesNotMatch(link.message, /https?:\/\//, 'no URL in any message');
    assert.doesNotMatch(link.message, /sk-test/, 'no key in any message');
  }
  assert.doesNotMatch(e.json, /sk-test/, 'no key anywhere in the envelope');
  assert.deepEqual(JSON.parse(e.json), e.toJSON());
});

test('a recording that cannot be opened: recording domain, OS error as cause', async () => {
  const params = { ...replayParams(), recording: { mode: 'replay', path: '/nonexistent/dir/demo.jsonl' } };
  await assert.rejects(call('generate_text', params), (e) => {
    assert.ok(RecordingOpenFileError.isInstance(e), `got ${e.name} ${e.code}: ${e.message}`);
    assert.equal(e.kind, 'recording');
    assert.equal(e.code, 101);
    assert.ok(e.cause instanceof AimuxSourceError || e.cause instanceof AimuxCauseError, 'has a cause');
    assert.match(nativeChain(e).at(-1).message, /No such file/);
    return true;
  });
});

test('replay and failing calls run concurrently', async () => {
  const [ok, failed] = await Promise.allSettled([
    call('generate_text', replayParams()),
    call('generate_text', failingParams()),
  ]);
  assert.equal(ok.status, 'fulfilled');
  assert.equal(ok.value.text, 'Hello!');
  assert.equal(failed.status, 'rejected');
  assert.ok(RetryError.isInstance(failed.reason));
});

test('every string and error the library handed over was released exactly once', () => {
  assert.equal(ownedPointers(), 0);
});
