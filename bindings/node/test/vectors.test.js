// Every contract vector, through this binding's decoder: the walked native chain
// must equal the vector's `chain`, and every link must be the right native class.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  decodeEnvelope, decodeChain, decodeAnswer, nativeChain, lookupVariant,
  AimuxError, AimuxCauseError, AimuxSourceError, VARIANTS,
} from '../src/index.js';
import { loadVectors, nextNode } from './helpers.js';

const vectors = loadVectors();

test('the contract vectors are there', () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

/** The envelope as the vector runner sends it (its exact text when the vector has one). */
const wire = (vector) => vector.envelopeText ?? JSON.stringify(vector.envelope);

for (const [file, vector] of vectors.filter(([, v]) => 'rejected' in v)) {
  test(`rejected vector ${file}: ${vector.description}`, () => {
    assert.throws(() => decodeEnvelope(wire(vector)), TypeError);
    assert.equal(decodeAnswer(wire(vector)).rejected.code, vector.rejected);
  });
}

for (const [file, vector] of vectors.filter(([, v]) => !('rejected' in v))) {
  test(`vector ${file}: ${vector.description}`, () => {
    // From JSON text (what the library hands over) and from the parsed object.
    assert.deepEqual(decodeChain(wire(vector)), vector.chain);
    assert.deepEqual(decodeChain(vector.envelope), vector.chain);
    // The root's own retryable / retryAfterMs, as given (CONTRACT §4).
    assert.deepEqual(decodeAnswer(wire(vector)), { chain: vector.chain, root: vector.root });

    const root = decodeEnvelope(wire(vector));
    assert.ok(root instanceof AimuxError, 'root is an AimuxError');
    assert.ok(AimuxError.isInstance(root));
    assert.deepEqual(root.toJSON(), vector.envelope, 'toJSON() returns the envelope');
    assert.equal(root.retryable, vector.root.retryable);
    assert.equal(root.retryAfterMs ?? null, vector.root.retryAfterMs);

    const links = nativeChain(root);
    assert.equal(links.length, vector.chain.length);
    let node = vector.envelope;
    links.forEach((link, i) => {
      assert.ok(link instanceof Error, `link ${i} is an Error`);
      assert.equal(link.message, vector.chain[i].message);
      if (i > 0) {
        if (typeof node.kind === 'string') {
          assert.ok(link instanceof AimuxCauseError, `link ${i} is an AimuxCauseError`);
          assert.deepEqual(link.toJSON(), node);
        } else {
          assert.ok(link instanceof AimuxSourceError, `link ${i} is an AimuxSourceError`);
          assert.equal(link.type, vector.chain[i].name);
          assert.deepEqual(link.toJSON(), node);
        }
      }
      if (typeof node.kind === 'string') {
        // A known (kind, name) / (kind, code) decodes into its generated class,
        // root and cause alike; anything else into the generic class.
        const variant = lookupVariant(node);
        if (variant) {
          assert.ok(variant.Root.isInstance(link), `link ${i} is a ${variant.className}`);
          assert.ok(link instanceof (i === 0 ? variant.Root : variant.Cause));
          if (typeof node.error?.name === 'string') assert.equal(link.name, node.error.name);
        } else {
          assert.equal(Object.getPrototypeOf(link), i === 0 ? AimuxError.prototype : AimuxCauseError.prototype);
          assert.ok(VARIANTS.every((v) => !v.Root.isInstance(link)));
        }
        assert.equal(link.kind, node.kind);
        assert.deepEqual(link.payload, node.error);
      }
      node = nextNode(node);
    });
    assert.equal(links.at(-1).cause, undefined, 'the chain ends where the vector ends');
  });
}

test('decode-chain --lines answers every vector on one process', () => {
  const exe = fileURLToPath(new URL('../decode-chain', import.meta.url));
  const input = vectors.map(([, v]) => `${wire(v)}\n`).join('');
  const run = spawnSync(exe, ['--lines'], { input, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const answers = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(answers.length, vectors.length);
  vectors.forEach(([file, v], i) => {
    if ('rejected' in v) assert.equal(answers[i].rejected.code, v.rejected, file);
    else assert.deepEqual(answers[i], { chain: v.chain, root: v.root }, file);
  });
});
