// Every contract vector, through this binding's decoder: the walked native chain
// must equal the vector's `chain`, and every link must be the right native class.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeEnvelope, decodeChain, nativeChain, lookupVariant,
  AimuxError, AimuxCauseError, AimuxSourceError, VARIANTS,
} from '../src/index.js';
import { loadVectors, nextNode } from './helpers.js';

const vectors = loadVectors();

test('the contract vectors are there', () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

for (const [file, vector] of vectors) {
  test(`vector ${file}: ${vector.description}`, () => {
    // From JSON text (what the library hands over) and from the parsed object.
    assert.deepEqual(decodeChain(JSON.stringify(vector.envelope)), vector.chain);
    assert.deepEqual(decodeChain(vector.envelope), vector.chain);

    const root = decodeEnvelope(JSON.stringify(vector.envelope));
    assert.ok(root instanceof AimuxError, 'root is an AimuxError');
    assert.ok(AimuxError.isInstance(root));
    assert.deepEqual(root.toJSON(), vector.envelope, 'toJSON() returns the envelope');
    assert.equal(root.retryable, vector.envelope.retryable);

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
