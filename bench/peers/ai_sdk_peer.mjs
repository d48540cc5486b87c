// The Vercel AI SDK peer of `make bench` (ai + @ai-sdk/openai, pinned in package-lock.json).
//   node ai_sdk_peer.mjs generate <baseURL> <calls> <warmup>
//     -> {"calls": n, "seconds": s, "perCallUs": [...per-round not here...]}
//   node ai_sdk_peer.mjs stream <baseURL> <streams> <warmup>
//     -> {"streams": n, "events": e, "seconds": s}
// One JSON line on stdout; the timing excludes process start-up and the warm-up calls.
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const [mode, baseURL, countArg, warmArg] = process.argv.slice(2);
const count = Number(countArg);
const warmup = Number(warmArg || '20');
const provider = createOpenAI({ baseURL, apiKey: 'sk-bench' });
const model = provider.chat('gpt-4o-mini');

async function oneCall() {
  const r = await generateText({ model, prompt: 'Say hello in one word.', maxRetries: 0 });
  if (r.text !== 'Hello!') throw new Error(`unexpected text ${JSON.stringify(r.text)}`);
}

async function oneStream() {
  const r = streamText({ model, prompt: 'Say hello in one word.', maxRetries: 0 });
  let events = 0;
  for await (const part of r.fullStream) {
    if (part.type === 'text-delta') events += 1;
    else if (part.type === 'error') throw part.error;
  }
  return events;
}

if (mode === 'generate') {
  for (let i = 0; i < warmup; i++) await oneCall();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await oneCall();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ calls: count, seconds }));
} else if (mode === 'stream') {
  for (let i = 0; i < warmup; i++) await oneStream();
  let events = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) events += await oneStream();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ streams: count, events, seconds }));
} else {
  console.error('usage: ai_sdk_peer.mjs generate|stream <baseURL> <count> [warmup]');
  process.exit(2);
}
