// The generated catalogue (src/generated/, written by `make schema`): every variant's code, its
// kind by the generated rule, and the constants agree with the manifest the library reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, VARIANTS, ErrorCode, kindOfCode, RETIRED_CODES } from '../src/index.js';

test('kindOfCode gives every variant its kind, and null outside every range', () => {
  for (const v of VARIANTS) {
    assert.equal(kindOfCode(v.code), v.kind, `${v.className} (${v.code})`);
    assert.equal(ErrorCode[v.constant], v.code, v.constant);
  }
  for (const code of [0, -1, 400, 1000]) assert.equal(kindOfCode(code), null, String(code));
});

test('the generated tables are the library manifest', async () => {
  const m = await call('aimux.manifest');
  assert.deepEqual(
    VARIANTS.map((v) => [v.kind, v.code, v.name, v.constant, v.className]),
    m.errors.map((e) => [e.kind, e.code, e.name, e.constant, e.className]),
  );
  assert.deepEqual([...RETIRED_CODES], m.retiredCodes);
});
