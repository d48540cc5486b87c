import { generateText, streamText, RetryError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

// the key comes from OPENAI_API_KEY; any OpenAI-compatible server will do
const baseURL = process.argv[2] ?? 'https://api.openai.com/v1';
const model = createOpenAI({ baseURL }).chat('gpt-4o-mini');

const r = await generateText({ model, prompt: 'Say hello.' });
console.log(`text: ${r.text} (${r.finishReason}, ${r.usage.totalTokens ?? 0} tokens)`);

let streamed = '';
for await (const e of streamText({ model, prompt: 'Say hello.' }).fullStream) {
  if (e.type === 'text-delta') streamed += e.text;
  else if (e.type === 'error') throw e.error;
}
console.log(`streamed: ${streamed}`);

try { // the fault server answers this model id with a 429 and retry-after: 1; one retry, as told
  await generateText({ model: createOpenAI({ baseURL }).chat('fault:mode=status;status=429;retry_after=1'), prompt: 'hi', maxRetries: 1 });
} catch (e) {
  if (!RetryError.isInstance(e)) throw e;
  const last = e.lastError;
  console.log(`${e.name}: status ${last.statusCode}, retryable ${last.isRetryable}, retry after ${last.responseHeaders?.['retry-after']} s, ${e.errors.length} attempts`);
}

try { // nothing listens on port 2 (fetch refuses port 1 as a 'bad port'): the chain to the OS error
  await generateText({ model: createOpenAI({ baseURL: 'http://127.0.0.1:2/v1' }).chat('gpt-4o-mini'), prompt: 'hi' });
} catch (e) {
  if (!(e instanceof Error)) throw e;
  for (let link = e; link; link = link.cause ?? link.lastError) console.log(`caused by ${link.name}: ${link.message}`);
}
