// Host tools in Node's idiom (CONTRACT §2.2): async execute functions, their AbortSignal on a
// cancel, a thrown error reaching the caller as the very object thrown. Against a local HTTP
// server speaking OpenAI's streamed Chat Completions (what it was asked is counted).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  call, stream, ToolResult, ToolExecutionError, UnsupportedFunctionalityError, AimuxError, ownedPointers,
} from '../src/index.js';

const TOOLS = {
  weather: {
    description: 'The weather in a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

function sse(frames) {
  return frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join('') + 'data: [DONE]\n\n';
}

const toolCallReply = sse([
  { id: 'c1', model: 'm', choices: [{ index: 0, delta: { role: 'assistant' } }] },
  {
    id: 'c1',
    choices: [{
      index: 0,
      delta: { tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
    }],
  },
  { id: 'c1', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { id: 'c1', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } },
]);

/** A server whose every answer is one call of `weather`; `requests` counts what it was asked. */
async function toolServer() {
  const srv = { requests: 0 };
  srv.server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      srv.requests += 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(toolCallReply);
    });
  });
  await new Promise((r) => srv.server.listen(0, '127.0.0.1', r));
  srv.params = {
    model: { provider: 'openai', modelId: 'm', baseURL: `http://127.0.0.1:${srv.server.address().port}/v1`, apiKey: 'k' },
    prompt: 'What is the weather?',
    tools: TOOLS,
    stopWhen: { stepCount: 5 },
    maxRetries: 0,
  };
  srv.close = () => new Promise((r) => srv.server.close(r));
  return srv;
}

/** A tool that runs until its abortSignal aborts; `aborted` resolves with the signal's reason. */
function blockingTool() {
  let started;
  let aborted;
  const tool = {
    started: new Promise((r) => { started = r; }),
    aborted: new Promise((r) => { aborted = r; }),
    execute: (input, { abortSignal, toolCallId }) => new Promise((resolve) => {
      assert.equal(toolCallId, 't1');
      assert.ok(abortSignal instanceof AbortSignal && !abortSignal.aborted);
      started(input);
      abortSignal.addEventListener('abort', () => {
        aborted(abortSignal.reason);
        resolve('too late'); // an answer to a cancelled stream: dropped
      }, { once: true });
    }),
  };
  return tool;
}

test('leaving the loop while a tool runs aborts its signal; the model is not asked again', async () => {
  const srv = await toolServer();
  try {
    const weather = blockingTool();
    for await (const ev of stream('stream_text', srv.params, { tools: { weather } })) {
      if (ev.type === 'tool-call') break;
    }
    const reason = await weather.aborted;
    assert.equal(reason.name, 'AbortError');
    assert.deepEqual(await weather.started, { city: 'Paris' });
    await new Promise((r) => setImmediate(r));
    assert.equal(srv.requests, 1);
    assert.equal(ownedPointers(), 0);
  } finally {
    await srv.close();
  }
});

test("the caller's signal aborts a running tool and the call rejects with its reason", async () => {
  const srv = await toolServer();
  try {
    const weather = blockingTool();
    const controller = new AbortController();
    const why = new Error('the user gave up');
    weather.started.then(() => controller.abort(why));
    await assert.rejects(call('generate_text', srv.params, { tools: { weather }, signal: controller.signal }), (err) => err === why);
    assert.equal(await weather.aborted, why);
    assert.equal(srv.requests, 1);
  } finally {
    await srv.close();
  }
});

test('a thrown error reaches the caller as AI_ToolExecutionError caused by that very object', async () => {
  const srv = await toolServer();
  try {
    const root = new RangeError('disk quota');
    const thrown = new Error('cannot save the forecast', { cause: root });
    const err = await call('generate_text', srv.params, { tools: { weather: { execute: async () => { throw thrown; } } } })
      .then(() => assert.fail('resolved'), (e) => e);
    assert.ok(ToolExecutionError.isInstance(err) && AimuxError.isInstance(err));
    assert.equal(err.code, 22);
    assert.equal(err.toolName, 'weather');
    assert.equal(err.toolCallId, 't1');
    assert.deepEqual(err.input, { city: 'Paris' });
    assert.equal(err.cause, thrown);
    assert.equal(err.cause.cause, root);
    assert.match(err.message, /cannot save the forecast/);
    assert.equal(srv.requests, 1); // the model never saw it
  } finally {
    await srv.close();
  }
});

test('a synchronous throw and a non-Error throw are failures too', async () => {
  const srv = await toolServer();
  try {
    const err = await call('generate_text', srv.params, { tools: { weather: { execute: () => { throw 'boom'; } } } })
      .then(() => assert.fail('resolved'), (e) => e);
    assert.equal(err.code, 22);
    assert.equal(err.cause, 'boom');
    assert.match(err.message, /boom/);
  } finally {
    await srv.close();
  }
});

test('ToolResult spells a tool-level error; bad tools are refused before any call', async () => {
  assert.deepEqual(ToolResult.error('no such city').toAnswer(), { error: { message: 'no such city' } });
  assert.deepEqual(ToolResult.errorWithData('no such city', { city: 'X' }).toAnswer(), {
    error: { message: 'no such city', data: { city: 'X' } },
  });
  assert.equal(ToolResult.errorWithData('m', { a: 1 }).message, 'm');
  await assert.rejects(call('generate_text', {}, { tools: { weather: {} } }), /tools\.weather\.execute must be a function/);
  await assert.rejects(call('generate_object', {}, { tools: { weather: { execute: async () => 1 } } }),
    (err) => UnsupportedFunctionalityError.isInstance(err) && err.code === 8 && /generate_text or stream_text/.test(err.message));
});
