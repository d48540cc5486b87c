// Compiled by `tsc --noEmit` in `make test`: the declarations must allow what a
// user writes and refuse what is wrong (every @ts-expect-error must be an error).
import {
  call, stream, decodeEnvelope, nativeChain,
  AimuxError, AimuxCauseError, AimuxSourceError, APICallError, APICallErrorCause, RetryError,
  UnknownOpError, InvalidParamsError, NoSuchToolError, ErrorCode, VARIANTS,
  type AimuxEnvelope, type StreamEvent, type GenerateTextResult,
  ToolResult, type LoopResult, type HostTools,
  generateText, streamText, generateObject, type GenerateTextOutcome,
} from 'aimux-ops';

async function main(): Promise<void> {
  try {
    const result: GenerateTextResult = await call('generate_text', {
      model: { provider: 'openai', modelId: 'gpt-4o-mini', baseURL: 'http://127.0.0.1:1/v1' },
      prompt: 'hi',
      maxRetries: 1,
    });
    const text: string = result.text;
    // the op types come from schema/ops: generate_object takes tools and toolChoice too
    const obj = await call('generate_object', {
      model: { provider: 'openai', modelId: 'gpt-4o-mini' },
      prompt: 'hi',
      schema: { type: 'object' },
      tools: { lookup: { description: 'find', inputSchema: { type: 'object' } } },
      toolChoice: { type: 'tool', toolName: 'lookup' },
    });
    void obj.object;
    // @ts-expect-error an unknown param is refused
    void call('generate_text', { model: { provider: 'openai', modelId: 'm' }, promptt: 'typo' });
    const total: number | null | undefined = result.usage.totalTokens;
    for (const tc of result.toolCalls) if (tc.error && NoSuchToolError.isInstance(tc.error)) void tc.error.availableTools;
    void text; void total;
  } catch (e) {
    // In TypeScript `e` is unknown: narrow it first (plain JS can test e.cause directly).
    if (e instanceof Error && APICallError.isInstance(e.cause)) {
      const status: number | undefined = e.cause.statusCode;
      const retryable: boolean | undefined = e.cause.isRetryable;
      void status; void retryable;
    }
    if (RetryError.isInstance(e)) {
      const attempts = e.errors ?? [];
      for (const attempt of attempts) {
        if (APICallError.isInstance(attempt)) void attempt.responseBody;
      }
    }
    if (AimuxError.isInstance(e)) {
      const env: AimuxEnvelope = e.toJSON();
      const retryable: boolean = e.retryable;
      const hint: number | undefined = e.retryAfterMs;
      const kind: string = e.kind;
      const code: number = e.code;
      void env; void retryable; void hint; void kind; void code;
      for (const link of nativeChain(e)) {
        if (AimuxSourceError.isInstance(link)) { const t: string | null = link.type; void t; }
        else if (AimuxCauseError.isInstance(link)) { const c: number = link.code; void c; }
      }
      // @ts-expect-error a root's toJSON is an envelope, not a string
      const s: string = e.toJSON();
      void s;
    }
    if (e instanceof APICallError) {
      const asRoot: AimuxError = e;
      void asRoot;
    }
    if (APICallErrorCause.isInstance(e)) {
      // @ts-expect-error a cause node has no root-only `retryable`
      void e.retryable;
    }
    if (UnknownOpError.isInstance(e)) {
      const op: string | undefined = e.op;
      void op;
    }
    if (InvalidParamsError.isInstance(e)) void e.violations;
  }

  const controller = new AbortController();
  for await (const ev of stream('stream_text', {
    model: { provider: 'openai', modelId: 'gpt-4o-mini' },
    prompt: 'hi',
    recording: { mode: 'replay', path: 'recordings/demo.jsonl' },
  }, { signal: controller.signal })) {
    const event: StreamEvent = ev;
    switch (event.type) {
      case 'text-delta': { const t: string = event.text; void t; break; }
      case 'finish': { const r: string = event.finishReason; void r; break; }
      case 'error': { const err: AimuxError = event.error; void err; break; }
      default: break;
    }
  }

  // the second provider: the same params, one line changed
  const claude = await call('generate_text', {
    model: { provider: 'anthropic', modelId: 'claude-sonnet-4-5' },
    prompt: 'hi',
    recording: { mode: 'replay', path: 'recordings/anthropic.jsonl' },
  });
  void claude.text;

  const version = await call('aimux.version');
  const other: unknown = await call('some.future.op', { any: 1 });
  void other;
  // @ts-expect-error generate_text needs its params
  await call('generate_text');
  const abi: number = version.abiVersion;
  void abi;
  const decoded = decodeEnvelope('{"kind":"aimux","code":1,"message":"x","error":{},"retryable":false}');
  const apiCallCode: 11 = ErrorCode.API_CALL;
  void decoded; void apiCallCode; void VARIANTS;
  // @ts-expect-error the model settings are required for generate_text
  await call('generate_text', { prompt: 'hi' });
  // @ts-expect-error op names are strings
  await call(42);
  // @ts-expect-error the provider is 'openai' or 'anthropic'
  await call('generate_text', { model: { provider: 'gemini', modelId: 'm' }, prompt: 'hi' });

  // host tools: async execute functions with an AbortSignal; ToolResult for tool-level errors
  const tools: HostTools = {
    weather: {
      execute: async (input: { city: string }, { abortSignal }) => {
        if (abortSignal.aborted) return ToolResult.error('cancelled');
        return input.city === 'Atlantis' ? ToolResult.errorWithData('no such city', { city: input.city }) : `sunny in ${input.city}`;
      },
    },
  };
  const loop: LoopResult = await call('generate_text', { model: { provider: 'openai', modelId: 'm' }, prompt: 'hi' }, { tools });
  const firstStep: string = loop.steps[0]?.finishReason ?? 'none';
  void firstStep; void loop.toolResults[0]?.output;
  for await (const ev of stream('stream_text', { model: { provider: 'openai', modelId: 'm' }, prompt: 'hi' }, { tools })) {
    if (ev.type === 'tool-result') void ev.output;
    if (ev.type === 'finish-step') void ev.finishReason;
  }
  // @ts-expect-error execute must be a function
  await call('generate_text', { model: { provider: 'openai', modelId: 'm' }, prompt: 'hi' }, { tools: { weather: { execute: 1 } } });
  // @ts-expect-error ToolResult is made by ToolResult.error / errorWithData
  void new ToolResult();

  // the typed API: the AI SDK's names and one options object, a tool's execute beside its spec
  const model = { provider: 'openai', modelId: 'gpt-4o-mini' } as const;
  const typed: GenerateTextOutcome = await generateText({
    model, prompt: 'hi', stopWhen: { stepCount: 3 }, abortSignal: controller.signal,
    tools: { weather: { description: 'w', inputSchema: { type: 'object' }, execute: async (input: { city: string }) => input.city } },
  });
  void typed.steps?.[0]?.toolResults;
  // absent and null are told apart: both are in the type
  const reasoning: string | null | undefined = typed.reasoningText;
  void reasoning;
  // open where the provider may add values: a warning's type is any string
  const warningType: string | undefined = typed.warnings?.[0]?.type;
  void warningType;
  for await (const ev of streamText({ model, prompt: 'hi' })) {
    if (ev.type === 'text-delta') void ev.text;
    if (ev.type === 'error') { const err: AimuxError = ev.error; void err; }
  }
  const object = await generateObject({ model, prompt: 'hi', schema: { type: 'object' } });
  void object.object;
  // @ts-expect-error generateObject runs no host tools
  await generateObject({ model, prompt: 'hi', schema: {}, tools: { f: { description: 'f', inputSchema: {}, execute: async () => 1 } } });
  // @ts-expect-error an unknown option is refused at compile time (the core refuses it at run time)
  await generateText({ model, prompt: 'hi', promptt: 'typo' });
  // @ts-expect-error the model is required
  await generateText({ prompt: 'hi' });
  try {
    await generateText({ model, prompt: 'hi', maxRetries: 2 });
  } catch (e) {
    // the HTTP status on what was caught (a RetryError's: its last attempt's)
    if (AimuxError.isInstance(e)) { const status: number | undefined = e.statusCode; void status; }
    if (RetryError.isInstance(e)) { const status: number | undefined = e.statusCode; void status; }
  }
}

void main;
