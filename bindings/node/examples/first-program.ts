import { generateText, streamText, AimuxError, RetryError, type ModelSettings } from 'aimux-ops';

// the key comes from OPENAI_API_KEY; any OpenAI-compatible server will do
const baseURL = process.argv[2] ?? 'https://api.openai.com/v1';
const model: ModelSettings = { provider: 'openai', modelId: 'gpt-4o-mini', baseURL };

const r = await generateText({ model, prompt: 'Say hello.' });
console.log(`text: ${r.text} (${r.finishReason}, ${r.usage.totalTokens ?? 0} tokens)`);

let streamed = '';
for await (const e of streamText({ model, prompt: 'Say hello.' })) {
  if (e.type === 'text-delta') streamed += e.text;
  else if (e.type === 'error') throw e.error;
}
console.log(`streamed: ${streamed}`);

try { // the fault server answers this model id with a 429 and retry-after: 1; one retry, as told
  await generateText({ model: { ...model, modelId: 'fault:mode=status;status=429;retry_after=1' }, prompt: 'hi', maxRetries: 1 });
} catch (e) {
  if (!(e instanceof RetryError)) throw e;
  console.log(`${e.name}: status ${e.statusCode}, retryable ${e.retryable}, retry after ${e.retryAfterMs} ms, ${e.errors?.length} attempts`);
}

try { // nothing listens on port 1: the retry error, its last attempt, down to the OS error
  await generateText({ model: { ...model, baseURL: 'http://127.0.0.1:1/v1' }, prompt: 'hi', retry: { initialDelayMs: 10 } });
} catch (e) {
  if (!AimuxError.isInstance(e)) throw e;
  for (let link: Error | undefined = e; link; link = link.cause as Error | undefined) console.log(`caused by ${link.name}: ${link.message}`);
}
