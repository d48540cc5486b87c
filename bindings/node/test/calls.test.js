// The call-level shared fixtures (contract-tests/calls/cases.json) through this
// binding's public API, `call` / `stream` (DESIGN.md "Call-level fixtures").
// Node's API takes params as a value (always encoded by JSON.stringify, which
// escapes a NUL), never as JSON text: the raw-params-text cases do not apply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { call, stream, generateText, streamText, generateObject, AimuxError, ToolResult } from '../src/index.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '');
const { cases } = JSON.parse(readFileSync(`${REPO}/contract-tests/calls/cases.json`, 'utf8'));

/** `want` ⊆ `got`: objects member by member, arrays and scalars exactly. */
function subset(want, got) {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    return got !== null && typeof got === 'object' && !Array.isArray(got)
      && Object.entries(want).every(([k, v]) => k in got && subset(v, got[k]));
  }
  if (Array.isArray(want)) {
    return Array.isArray(got) && want.length === got.length && want.every((v, i) => subset(v, got[i]));
  }
  return want === got;
}

const resolve = (params) => JSON.parse(JSON.stringify(params).replaceAll('@REPO@', REPO));

// The typed API (generateText / streamText / generateObject) runs every case of its ops whose
// params are an object: the same outcome as `call` / `stream` (the wrong-mode cases do not apply:
// each typed function has its op's mode).
const TYPED = { generate_text: generateText, stream_text: streamText, generate_object: generateObject };
const isTyped = (c) => c.op in TYPED && (c.api === 'stream') === (c.op === 'stream_text')
  && c.params !== null && typeof c.params === 'object' && !Array.isArray(c.params);

async function outcome(c, typed = false) {
  try {
    if (typed) {
      const run = TYPED[c.op](resolve(c.params));
      if (c.api === 'call') return { result: await run };
      const events = [];
      for await (const ev of run) events.push(ev);
      return { events };
    }
    if (c.api === 'call') return { result: await call(c.op, resolve(c.params)) };
    const events = [];
    for await (const ev of stream(c.op, resolve(c.params))) events.push(ev);
    return { events };
  } catch (err) {
    if (!AimuxError.isInstance(err)) throw err;
    return { error: { kind: err.kind, code: err.code, name: err.errorName } };
  }
}

const applicable = cases.filter((c) => !('paramsText' in c));

test('the call fixtures are there (raw-text cases do not apply to Node)', () => {
  assert.ok(applicable.length >= 10, `only ${applicable.length} cases`);
  assert.ok(applicable.some((c) => c.key === 'nul-in-op'));
});

for (const c of applicable) {
  test(`call case ${c.key}: ${c.description}`, async () => {
    const got = await outcome(c);
    assert.ok(subset(c.expect, got), `want ${JSON.stringify(c.expect)}\n got ${JSON.stringify(got)}`);
  });
}

test('the typed API runs the call fixtures of its ops', () => {
  const keys = applicable.filter(isTyped).map((c) => c.key);
  for (const k of ['invalid-params-generate', 'replay-success', 'replay-success-stream', 'replay-failure']) assert.ok(keys.includes(k), k);
});

for (const c of applicable.filter(isTyped)) {
  test(`call case ${c.key} through ${TYPED[c.op].name}`, async () => {
    const got = await outcome(c, true);
    assert.ok(subset(c.expect, got), `want ${JSON.stringify(c.expect)}\n got ${JSON.stringify(got)}`);
  });
}

// The loop fixtures (contract-tests/calls/loops.json): host tools through `options.tools`,
// each behaviour in Node's idiom; the replay matches every request body byte for byte, so a
// wrong answer to the model finds no recorded exchange (a 102).
const loops = JSON.parse(readFileSync(`${REPO}/contract-tests/calls/loops.json`, 'utf8')).cases;
const MISSING_FILE = '/nonexistent/aimux/weather.json';

function loopTool(behaviour) {
  let osloStarted;
  const oslo = new Promise((r) => { osloStarted = r; });
  return {
    execute: async ({ city }) => {
      switch (behaviour) {
        case 'value': return `sunny in ${city}`;
        case 'tool-error': return ToolResult.error(`no weather for ${city}`);
        case 'tool-error-data': return ToolResult.errorWithData(`no weather for ${city}`, { city });
        case 'raise-io': return readFile(MISSING_FILE, 'utf8');
        case 'raise': throw new Error('weather service down');
        case 'value-paired': {
          if (city === 'Oslo') osloStarted();
          else {
            let timer;
            const late = new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error('the Oslo call never started: calls ran one by one')), 30000);
            });
            try { await Promise.race([oslo, late]); } finally { clearTimeout(timer); }
          }
          return `sunny in ${city}`;
        }
        default: throw new Error(`unknown behaviour ${behaviour}`);
      }
    },
  };
}

async function loopOutcome(c, typed = false) {
  const tools = Object.fromEntries(Object.entries(c.tools).map(([name, b]) => [name, loopTool(b)]));
  try {
    if (typed) {
      // the AI SDK's shape: each tool's execute beside its spec
      const params = resolve(c.params);
      for (const [name, { execute }] of Object.entries(tools)) params.tools[name] = { ...params.tools[name], execute };
      const run = TYPED[c.op](params);
      if (c.api === 'call') return { result: await run };
      const events = [];
      for await (const ev of run) events.push(ev);
      return { events };
    }
    if (c.api === 'call') return { result: await call(c.op, resolve(c.params), { tools }) };
    const events = [];
    for await (const ev of stream(c.op, resolve(c.params), { tools })) events.push(ev);
    return { events };
  } catch (err) {
    if (!AimuxError.isInstance(err)) throw err;
    if (c.tools.weather === 'raise-io') {
      // the very error readFile threw, never a copy
      assert.equal(err.cause?.code, 'ENOENT');
      assert.equal(err.cause?.path, MISSING_FILE);
      assert.ok(!AimuxError.isInstance(err.cause) && err.cause instanceof Error);
      assert.equal(err.toolName, 'weather');
    }
    return { error: { kind: err.kind, code: err.code, name: err.errorName } };
  }
}

test('the loop fixtures are there', () => {
  assert.ok(loops.length >= 14, `only ${loops.length} loop cases`);
});

for (const c of loops) {
  test(`loop case ${c.key}: ${c.description}`, async () => {
    const got = await loopOutcome(c);
    assert.ok(subset(c.expect, got), `want ${JSON.stringify(c.expect)}\n got ${JSON.stringify(got)}`);
  });
  test(`loop case ${c.key} through ${TYPED[c.op].name}`, async () => {
    const got = await loopOutcome(c, true);
    assert.ok(subset(c.expect, got), `want ${JSON.stringify(c.expect)}\n got ${JSON.stringify(got)}`);
  });
}
