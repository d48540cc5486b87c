// The 10-step tool loop of `make bench` (bench/loops.py): a no-op tool, `stopWhen` 10 steps,
// against bench/loops.py's loop server, by one of
//   node loops.mjs aisdk <baseURL> <loops> <warmup> <steps>          the AI SDK's generateText
//   node loops.mjs aimux <baseURL> <loops> <warmup> <steps> <apiKey> the aimux Node binding
//   node loops.mjs floor <baseURL> <loops> <warmup> <steps>          node:http + JSON.parse alone
// -> one JSON line {"loops": n, "seconds": s}; the timing excludes start-up and the warm-up.
import http from 'node:http';
import { generateText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { call } from '../../bindings/node/src/index.js';

const [who, baseURL, loopsArg, warmArg, stepsArg, apiKey] = process.argv.slice(2);
const loops = Number(loopsArg), warmup = Number(warmArg), steps = Number(stepsArg);
const modelId = `loop-${steps}`;
const prompt = 'Call noop until told to stop.';
const schema = { type: 'object', properties: {} };
const check = (text, n) => {
  if (text !== 'done' || n !== steps) throw new Error(`unexpected loop: ${n} steps, ${text}`);
};

const model = createOpenAI({ baseURL, apiKey: 'sk-bench' }).chat(modelId);
const aiTools = { noop: tool({ description: 'Does nothing.', inputSchema: jsonSchema(schema),
                               execute: async () => 'ok' }) };
async function aisdk() {
  const r = await generateText({ model, prompt, tools: aiTools, stopWhen: stepCountIs(steps),
                                 maxRetries: 0 });
  check(r.text, r.steps.length);
}

const params = {
  model: { provider: 'openai', modelId, baseURL, apiKey },
  prompt,
  tools: { noop: { description: 'Does nothing.', inputSchema: schema } },
  stopWhen: { stepCount: steps },
  maxRetries: 0,
};
const hostTools = { noop: { execute: async () => 'ok' } };
async function aimux() {
  const r = await call('generate_text', params, { tools: hostTools });
  check(r.text, r.steps.length);
}

// the floor: the same exchanges by hand, no SDK: node:http on one keep-alive connection,
// the request built, POSTed, the answer parsed
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const url = new URL(`${baseURL}/chat/completions`);
function post(body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: {
      'content-type': 'application/json', authorization: 'Bearer sk-bench',
      'content-length': Buffer.byteLength(body) } }, res => {
      const parts = [];
      res.on('data', d => parts.push(d));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(parts).toString('utf8'))));
    });
    req.on('error', reject);
    req.end(body);
  });
}
async function floor() {
  const messages = [{ role: 'user', content: prompt }];
  const tools = [{ type: 'function', function: { name: 'noop', description: 'Does nothing.',
                                                 parameters: schema } }];
  for (let step = 1; ; step++) {
    const msg = (await post(JSON.stringify({ model: modelId, messages, tools }))).choices[0].message;
    if (!msg.tool_calls) return check(msg.content, step);
    messages.push(msg);
    for (const c of msg.tool_calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'ok' });
  }
}

const one = { aisdk, aimux, floor }[who];
if (!one) throw new Error(`unknown runner ${who}`);
for (let i = 0; i < warmup; i++) await one();
const t0 = process.hrtime.bigint();
for (let i = 0; i < loops; i++) await one();
console.log(JSON.stringify({ loops, seconds: Number(process.hrtime.bigint() - t0) / 1e9 }));
