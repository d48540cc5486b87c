import { call, APICallError, RetryError } from 'aimux-ops';

try {
  await call('generate_text', {
    model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1', apiKey: 'sk-test' },
    prompt: 'hi',
    maxRetries: 1,
    retry: { initialDelayMs: 10 },
  });
} catch (e) {
  if (APICallError.isInstance(e.cause)) {
    // e is the RetryError; its cause is the last attempt (all of them are on e.errors).
    const attempts = RetryError.isInstance(e) ? e.errors.length : 1;
    console.log(`${e.name} after ${attempts} attempts; last: ${e.cause.message} (isRetryable=${e.cause.isRetryable})`);
  }
  // The whole native chain, down to the OS error:
  for (let link = e; link; link = link.cause) {
    console.log(`  ${link.kind ?? 'source'} ${link.code ?? 0} ${link.name}: ${link.message}`);
  }
}
