import type { AimuxError } from './base.js';

export * from './base.js';
export * from './generated/variants.js';
export * from './decode.js';

export interface Usage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  totalTokens?: number | null;
}

export type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other' | 'unknown';

export interface ToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** The call is not usable: unknown tool or invalid input. */
  invalid?: boolean | null;
  /** Why it is not usable (e.g. NoSuchToolError, InvalidToolInputError), decoded. */
  error?: AimuxError | null;
}

export interface ModelSettings {
  /** The provider id: 'openai' (Chat Completions) or 'anthropic' (Messages API). */
  provider: 'openai' | 'anthropic';
  modelId: string;
  baseURL?: string | null;
  apiKey?: string | null;
  apiKeyEnv?: string | null;
  headers?: Record<string, string> | null;
}

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | Array<Record<string, unknown>> | null;
  toolCalls?: Array<{ toolCallId: string; toolName: string; input?: unknown }> | null;
  toolCallId?: string | null;
}

export interface ToolSpec {
  description?: string | null;
  /** JSON Schema of the tool's input. */
  inputSchema?: Record<string, unknown>;
}

export interface GenerateParams {
  model: ModelSettings;
  system?: string | null;
  prompt?: string | null;
  messages?: Message[] | null;
  maxOutputTokens?: number | null;
  temperature?: number | null;
  topP?: number | null;
  presencePenalty?: number | null;
  frequencyPenalty?: number | null;
  stopSequences?: string[] | null;
  seed?: number | null;
  headers?: Record<string, string> | null;
  tools?: Record<string, ToolSpec> | null;
  toolChoice?: 'auto' | 'none' | 'required' | { type: 'tool'; toolName: string } | null;
  /** Default 2. */
  maxRetries?: number;
  retry?: { initialDelayMs?: number; backoffFactor?: number } | null;
  timeoutMs?: number | null;
  recording?: { mode: 'record' | 'replay'; path: string } | null;
}

export interface GenerateObjectParams extends Omit<GenerateParams, 'tools' | 'toolChoice'> {
  /** JSON Schema of the object. */
  schema: Record<string, unknown>;
  schemaName?: string | null;
  schemaDescription?: string | null;
}

export interface ResponseInfo {
  id?: string | null;
  modelId?: string | null;
}

export interface GenerateTextResult {
  text: string;
  finishReason: FinishReason;
  usage: Usage;
  toolCalls: ToolCall[];
  response: ResponseInfo;
}

export interface GenerateObjectResult {
  object: unknown;
  finishReason: FinishReason;
  usage: Usage;
  response: ResponseInfo;
}

export interface VersionResult {
  name: string;
  version: string;
  abiVersion: number;
}

export type TextDeltaEvent = { type: 'text-delta'; text: string };
export type ToolCallEvent = { type: 'tool-call' } & ToolCall;
export type FinishEvent = { type: 'finish'; finishReason: FinishReason; usage: Usage; response?: ResponseInfo | null };
/** A failure inside the stream, its envelope decoded. */
export type ErrorEvent = { type: 'error'; error: AimuxError };
export type StreamEvent = TextDeltaEvent | ToolCallEvent | FinishEvent | ErrorEvent;

export interface StreamOptions {
  /** Aborting it cancels the stream; the iteration then throws the signal's reason. */
  signal?: AbortSignal;
}

/** The pinned call ops: their params (as an argument tuple) and results. */
export interface CallOps {
  'generate_text': { args: [params: GenerateParams]; result: GenerateTextResult };
  'generate_object': { args: [params: GenerateObjectParams]; result: GenerateObjectResult };
  'aimux.version': { args: [params?: Record<string, never>]; result: VersionResult };
  'aimux.manifest': { args: [params?: Record<string, never>]; result: Manifest };
}

/** The pinned stream ops. */
export interface StreamOps {
  'stream_text': { params: GenerateParams };
}

export interface Manifest {
  name: string;
  version: string;
  abiVersion: number;
  kinds: string[];
  ops: Array<{ name: string; mode: 'call' | 'stream'; params: object; result: object | null; event: object | null }>;
  errors: Array<{ kind: string; code: number; constant: string; name: string; className: string; fields: Array<{ name: string; type: unknown }>; description?: string }>;
  retiredCodes: number[];
}

type CallArgs<Op extends string> = Op extends keyof CallOps ? CallOps[Op]['args'] : [params?: object];
type CallResult<Op extends string> = Op extends keyof CallOps ? CallOps[Op]['result'] : unknown;
type StreamParams<Op extends string> = Op extends keyof StreamOps ? StreamOps[Op]['params'] : object | undefined;

/**
 * Calls a request/response op on libaimux (on koffi's worker pool: the event loop
 * never blocks). Resolves with the parsed result; rejects with the decoded AimuxError.
 */
export declare function call<Op extends string>(op: Op, ...args: CallArgs<Op>): Promise<CallResult<Op>>;

/** Streams the events of a stream op (e.g. "stream_text"). */
export declare function stream<Op extends string>(op: Op, params: StreamParams<Op>, options?: StreamOptions): AsyncGenerator<StreamEvent, void, undefined>;

/** The ABI version of the loaded libaimux. */
export declare function abiVersion(): number;
/** Library-owned strings/errors received and not yet released (0 between operations). */
export declare function ownedPointers(): number;
/**
 * The file libaimux was loaded from, loading it on first use: `$AIMUX_LIB`, else `libaimux.so.1`
 * through the system loader, else the in-repo build (development). Throws a 207 `RuntimeInitError`
 * when none loads.
 */
export declare function libraryPath(): string;
