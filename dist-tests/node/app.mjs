// The Node consumer of dist-tests/steps/60-node.sh: `node app.mjs <recording.jsonl>`.
import { call, libraryPath, stream } from 'aimux-ops';

const model = { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1' };
try {
  const r = await call('generate_text', { model, prompt: 'Say hello in one word.', recording: { mode: 'replay', path: process.argv[2] } });
  console.log(`text: ${r.text}`);
  console.log(`library: ${libraryPath()}`);
  let text = '';
  let last = 'none';
  for await (const ev of stream('stream_text', { model, prompt: 'Say hello in one word.', recording: { mode: 'replay', path: process.argv[2] } })) {
    if (ev.type === 'text-delta') text += ev.text;
    last = ev.type;
  }
  console.log(`stream: ${text} (${last})`);
} catch (e) {
  console.log(`error: ${e.code} ${e.name}: ${e.message}`);
  process.exit(3);
}
try {
  await call('generate_text', { model: { ...model, apiKey: 'sk-test' }, prompt: 'hi', maxRetries: 1, retry: { initialDelayMs: 10 } });
  console.log('the failing call succeeded');
} catch (e) {
  for (let link = e; link; link = link.cause) console.log(`chain: ${link.kind ?? 'source'} ${link.code ?? 0} ${link.name}: ${link.message}`);
}
