// src/ready.js: aimux_poll_ready's text decoded to exactly what JSON.parse gives, with the text
// deltas read without JSON.parse (the fast path a stream's events take).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseReady } from '../src/ready.js';

const delta = (text, type = 'text-delta') => JSON.stringify({ type, text });

/** An entry as the library writes it: [handle, ended, events | null, envelope | null]. */
const entry = (handle, ended, events, envelope = null) =>
  `[${handle},${ended},${events === null ? 'null' : `[${events.join(',')}]`},${envelope === null ? 'null' : JSON.stringify(envelope)}]`;
const ready = (...entries) => `[${entries.join(',')}]`;

/** Counts JSON.parse calls while `fn` runs. */
function parses(fn) {
  const real = JSON.parse;
  let n = 0;
  JSON.parse = (...args) => {
    n += 1;
    return real(...args);
  };
  try {
    fn();
  } finally {
    JSON.parse = real;
  }
  return n;
}

const TRICKY = [
  '', 'w0 ', 'Hello', ' ', 'say "hi"', 'back\\slash', 'a\nb\tc\r', '}', ']', ',', '{"type":"x"}',
  '"}', '\\"}', 'ünïcödé', '日本語', '🎉 emoji', '\u2028\u2029', '\u0000\u001f', 'lone \ud800 surrogate',
  '{"type":"text-delta","text":"nested"}', 'x'.repeat(5000),
];

test('every kind of entry decodes to what JSON.parse gives', () => {
  const finish = JSON.stringify({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 2 } });
  const toolCall = JSON.stringify({ type: 'tool-call', toolCallId: 'c1', toolName: 'w', input: { q: '"]}' } });
  const extraKey = JSON.stringify({ type: 'text-delta', text: 'x', id: '1' });
  const otherOrder = JSON.stringify({ text: 'x', type: 'text-delta' });
  const envelope = { kind: 'api', code: 100, message: 'a "quoted" ] message', error: { name: 'AI_APICallError', list: [1, '}'] } };
  const texts = [
    ready(entry(1, 0, TRICKY.map((t) => delta(t)))),
    ready(entry(1, 0, TRICKY.map((t) => delta(t, 'reasoning-delta')))),
    ready(entry(7, 1, [delta('a'), finish]), entry(8, 0, null), entry(9, 1, null, envelope)),
    ready(entry(2, 0, [toolCall, delta('b\\'), extraKey, otherOrder, delta('c')])),
    ready(entry(3, 0, [])),
    ready(entry(2 ** 52, 0, [delta('big handle')])),
    ready(entry(12345678901234567890n, 0, [delta('a handle past 2^53')])),
    // not the library's own layout: JSON.parse decides
    `[ [1, 0, [${delta('spaced')}], null] ]`,
    `[[1,0,[${delta('a')} ,${delta('b')}],null]]`,
    '[[1,true,null,null]]',
    '[]',
  ];
  for (const text of texts) assert.deepStrictEqual(parseReady(text), JSON.parse(text), text.slice(0, 200));
});

test('random texts of quotes, backslashes, brackets and non-ASCII decode as JSON.parse does', () => {
  const alphabet = ['a', ' ', '"', '\\', '}', ']', '{', '[', ',', ':', '\n', 'é', '🎉', '\u0001', 'text-delta'];
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 300; round += 1) {
    const events = [];
    for (let i = 0; i < 1 + Math.floor(next() * 8); i += 1) {
      let text = '';
      for (let k = Math.floor(next() * 12); k > 0; k -= 1) text += alphabet[Math.floor(next() * alphabet.length)];
      events.push(next() < 0.8 ? delta(text, next() < 0.5 ? 'text-delta' : 'reasoning-delta') : JSON.stringify({ type: 'x', text, n: [text] }));
    }
    const text = ready(entry(round + 1, round % 2, events));
    assert.deepStrictEqual(parseReady(text), JSON.parse(text), text);
  }
});

test('short text deltas without escapes are read without JSON.parse; the other events with it', () => {
  const deltas = ready(entry(1, 0, Array.from({ length: 100 }, (_, i) => delta(`w${i} `))));
  assert.equal(parses(() => parseReady(deltas)), 0);
  const mixed = ready(entry(1, 1, [delta('a'), delta('"q"'), JSON.stringify({ type: 'finish', finishReason: 'stop' })]));
  assert.equal(parses(() => parseReady(mixed)), 2); // the escaped delta and the finish, one each
  // a text of 13 characters or more: its string alone is parsed (a copy, not a view of the text)
  const long = ready(entry(1, 0, [delta('twelve chars'), delta('thirteen char'), delta('a'.repeat(400))]));
  assert.equal(parses(() => parseReady(long)), 2);
  assert.deepStrictEqual(parseReady(long), JSON.parse(long));
});

test('a text that is not JSON throws the SyntaxError JSON.parse throws', () => {
  for (const text of ['[[1,0,[{"type":"text-delta","text":"a}],null]]', '[[1,0,', '', 'nope']) {
    let expected;
    try {
      JSON.parse(text);
    } catch (err) {
      expected = err;
    }
    assert.throws(() => parseReady(text), (err) => err instanceof SyntaxError && err.message === expected.message);
  }
});
