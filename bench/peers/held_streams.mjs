// Concurrent streams held by one Node process (make bench, section 6; issue 12).
//   node held_streams.mjs aimux|aisdk <baseURL> <streams> <eventsPerStream>
// Opens <streams> stream_text streams at once (aimux: the Node binding over
// libaimux's event-driven interface; aisdk: the Vercel AI SDK's streamText),
// drains them all concurrently, and prints one JSON line:
//   {streams, events, openSeconds, seconds, eventsPerSecond, threadsBaseline,
//    threadsMax, rssBaseline, rssMax, rssPerStreamKiB}
// openSeconds: until every stream delivered its first text delta (all held).
// Threads from /proc/self/task, RSS from process.memoryUsage(), sampled every
// 10 ms. The baseline is taken after one warm-up stream.
import { readdirSync } from 'node:fs';
import { streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { stream as aimuxStream } from '../../bindings/node/src/index.js';

const [mode, baseURL, countArg, eventsArg] = process.argv.slice(2);
const count = Number(countArg);
const perStream = Number(eventsArg);

function threads() {
  return readdirSync('/proc/self/task').length;
}

let open;
if (mode === 'aimux') {
  const params = {
    model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL, apiKey: 'sk-bench' },
    prompt: 'hi', maxRetries: 0, timeoutMs: 600_000,
  };
  open = async function* aimux() {
    for await (const ev of aimuxStream('stream_text', params)) {
      if (ev.type === 'text-delta') yield 1;
      else if (ev.type === 'error') throw ev.error;
    }
  };
} else if (mode === 'aisdk') {
  const model = createOpenAI({ baseURL, apiKey: 'sk-bench' }).chat('gpt-4o-mini');
  open = async function* aisdk() {
    const r = streamText({ model, prompt: 'hi', maxRetries: 0 });
    for await (const part of r.fullStream) {
      if (part.type === 'text-delta') yield 1;
      else if (part.type === 'error') throw part.error;
    }
  };
} else {
  console.error('usage: held_streams.mjs aimux|aisdk <baseURL> <streams> <eventsPerStream>');
  process.exit(2);
}

async function drain(onFirst) {
  let n = 0;
  for await (const one of open()) {
    if (n === 0) onFirst();
    n += one;
  }
  return n;
}

await drain(() => {}); // warm-up: the library / SDK loaded, one connection made
globalThis.gc?.();
const threadsBaseline = threads();
const rssBaseline = process.memoryUsage().rss;
let threadsMax = threadsBaseline;
let rssMax = rssBaseline;
const sampler = setInterval(() => {
  threadsMax = Math.max(threadsMax, threads());
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
}, 10);

let firsts = 0;
let allOpen = 0;
const t0 = process.hrtime.bigint();
const counts = await Promise.all(Array.from({ length: count }, () => drain(() => {
  firsts += 1;
  if (firsts === count) {
    allOpen = Number(process.hrtime.bigint() - t0) / 1e9;
    threadsMax = Math.max(threadsMax, threads());
    rssMax = Math.max(rssMax, process.memoryUsage().rss);
  }
})));
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
clearInterval(sampler);
const events = counts.reduce((a, b) => a + b, 0);
if (events !== count * perStream) {
  console.error(`expected ${count * perStream} text deltas, got ${events}`);
  process.exit(1);
}
console.log(JSON.stringify({
  mode, streams: count, events, openSeconds: allOpen, seconds, eventsPerSecond: events / seconds,
  threadsBaseline, threadsMax, rssBaseline, rssMax,
  rssPerStreamKiB: (rssMax - rssBaseline) / count / 1024,
}));
