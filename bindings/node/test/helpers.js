// Shared paths and small utilities for the node --test suites.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PKG_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const REPO = resolve(PKG_DIR, '..', '..');
export const VECTORS_DIR = join(REPO, 'contract-tests', 'vectors');
export const MANIFEST = join(REPO, 'schema', 'manifest.json');
export const RECORDING = join(REPO, 'recordings', 'demo.jsonl');

/** Every contract vector as [fileName, {description, envelope, chain}]. */
export function loadVectors() {
  if (!existsSync(VECTORS_DIR)) throw new Error(`contract vectors not found at ${VECTORS_DIR}`);
  const files = readdirSync(VECTORS_DIR).filter((f) => f.endsWith('.json')).sort();
  return files.map((f) => [f, JSON.parse(readFileSync(join(VECTORS_DIR, f), 'utf8'))]);
}

/** The raw next-link of a node per DESIGN.md (computed on the JSON, independent of the decoder). */
export function nextNode(node) {
  if (node.cause !== undefined && node.cause !== null) return node.cause;
  if (typeof node.kind === 'string' && node.error && node.error.name === 'AI_RetryError'
      && Array.isArray(node.error.errors) && node.error.errors.length > 0) {
    return node.error.errors[node.error.errors.length - 1];
  }
  return undefined;
}

/** The replay params of the shipped recording (recordings/README.md), path absolute. */
export function replayParams() {
  return {
    model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1' },
    prompt: 'Say hello in one word.',
    recording: { mode: 'replay', path: RECORDING },
  };
}

/** The failing call of recordings/README.md: port 1 on loopback is closed. */
export function failingParams() {
  return {
    model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1', apiKey: 'sk-test' },
    prompt: 'hi',
    maxRetries: 1,
    retry: { initialDelayMs: 10 },
  };
}

/** The Python the project's tools run on ($PYTHON, else the repo's .venv). */
export function python() {
  return process.env.PYTHON || join(REPO, '.venv', 'bin', 'python');
}
