// The aimux Node binding's stream row of `make bench` (bindings/node over libaimux; AIMUX_LIB).
//   node aimux_node_peer.mjs stream <baseURL> <streams> <warmup> <apiKey>
//     -> {"streams": n, "events": e, "seconds": s}
// One JSON line on stdout; the timing excludes process start-up and the warm-up streams.
import { stream } from '../../bindings/node/src/index.js';

const [mode, baseURL, countArg, warmArg, apiKey] = process.argv.slice(2);
const count = Number(countArg);
const warmup = Number(warmArg || '1');
const params = {
  model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL, apiKey },
  prompt: 'Say hello in one word.',
  maxRetries: 0,
};

async function oneStream() {
  let events = 0;
  for await (const ev of stream('stream_text', params)) {
    if (ev.type === 'text-delta') events += 1;
    else if (ev.type === 'error') throw ev.error;
  }
  return events;
}

if (mode !== 'stream') throw new Error(`unknown mode ${mode}`);
for (let i = 0; i < warmup; i++) await oneStream();
let events = 0;
const t0 = process.hrtime.bigint();
for (let i = 0; i < count; i++) events += await oneStream();
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
console.log(JSON.stringify({ streams: count, events, seconds }));
