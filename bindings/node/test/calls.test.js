// The call-level shared fixtures (contract-tests/calls/cases.json) through this
// binding's public API, `call` / `stream` (DESIGN.md "Call-level fixtures").
// Node's API takes params as a value (always encoded by JSON.stringify, which
// escapes a NUL), never as JSON text: the raw-params-text cases do not apply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { call, stream, AimuxError } from '../src/index.js';

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

async function outcome(c) {
  try {
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
