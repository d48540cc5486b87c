import type { AimuxError } from './base.js';
import type * as Wire from './generated/ops.js';

export * from './base.js';
export * from './generated/variants.js';
export * from './decode.js';
/** The op types as they travel on the wire (generated from schema/ops). */
export type { Wire };

// The op params and results are the generated wire types; where the binding decodes an error
// envelope (a tool call's `error`, a stream's error event) the type says so.
export type Usage = Wire.Usage;
export type FinishReason = Wire.GenerateTextResult['finishReason'];
export type ModelSettings = Wire.ModelSpec;
export type Message = Wire.Message;
export type ToolSpec = Wire.ToolSpec;
export type ResponseInfo = Wire.ResponseInfo;
export type GenerateTextParams = Wire.GenerateTextParams;
export type StreamTextParams = Wire.StreamTextParams;
export type GenerateObjectParams = Wire.GenerateObjectParams;
/** The params of generate_text (and stream_text). */
export type GenerateParams = Wire.GenerateTextParams;

export type ToolCall = Omit<Wire.ToolCall, 'error'> & {
  /** Why it is not usable (e.g. NoSuchToolError, InvalidToolInputError), decoded. */
  error?: AimuxError | null;
};
export type GenerateTextResult = Omit<Wire.GenerateTextResult, 'toolCalls'> & { toolCalls: ToolCall[] };
export type GenerateObjectResult = Omit<Wire.GenerateObjectResult, 'toolCalls'> & { toolCalls?: ToolCall[] };
export type VersionResult = Wire.AimuxVersionResult;
export type Manifest = Wire.AimuxManifestResult;

export type TextDeltaEvent = Wire.TextDeltaEvent;
export type ToolCallEvent = { type: 'tool-call' } & ToolCall;
export type FinishEvent = Wire.FinishEvent;
/** A failure inside the stream, its envelope decoded. */
export type ErrorEvent = { type: 'error'; error: AimuxError };
export type StreamEvent = TextDeltaEvent | ToolCallEvent | FinishEvent | ErrorEvent;

export type ToolResultEvent = Wire.ToolResultEvent;
export type ToolErrorEvent = Wire.ToolErrorEvent;
export type StartStepEvent = Wire.StartStepEvent;
export type FinishStepEvent = Wire.FinishStepEvent;
/** Every event of a stream with host tools (the multi-step loop's events too). */
export type LoopEvent = StreamEvent | ToolResultEvent | ToolErrorEvent | StartStepEvent | FinishStepEvent;

/** A tool-level error an `execute` returns: the model reads it (a thrown error is a framework error). */
export declare class ToolResult {
  private constructor();
  static error(message: string): ToolResult;
  static errorWithData(message: string, data: unknown): ToolResult;
  readonly message: string;
  readonly data: unknown;
  /** The answer sent to the stream: `{error: {message, data?}}`. */
  toAnswer(): { error: { message: string; data?: unknown } };
}

export interface ToolExecuteOptions {
  /** Aborts when the stream is cancelled (the caller's signal) or left. */
  abortSignal: AbortSignal;
  toolCallId: string;
}

/** A host tool: its value goes to the model; `ToolResult.error…` is a tool-level error; a throw fails the call. */
export interface HostTool<Input = any> {
  execute(input: Input, options: ToolExecuteOptions): unknown;
}

/** Tool name → its host implementation (the params' `tools.<name>` gets `execute: true`). */
export type HostTools = Record<string, HostTool>;

export interface StreamOptions {
  /** Aborting it cancels the stream; the iteration then throws the signal's reason. */
  signal?: AbortSignal;
  /** Host tools: each `tool-call` of theirs runs its execute; a step's calls run concurrently. */
  tools?: HostTools;
}

export interface CallOptions {
  /** Aborting it cancels the call (and every running execute); the call rejects with its reason. */
  signal?: AbortSignal;
  /** Host tools (generate_text only): the loop runs, the result has every step. */
  tools?: HostTools;
}

export type ToolResultEntry = { toolCallId: string; toolName: string; input: unknown; output: unknown };
export type ToolErrorEntry = { toolCallId: string; toolName: string; input: unknown; error: unknown };
/** One step of a loop. */
export interface StepResult {
  text: string;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
  toolResults: ToolResultEntry[];
  toolErrors: ToolErrorEntry[];
  finishReason: FinishReason;
  usage: Usage;
  response?: ResponseInfo | null;
}
/** generate_text with host tools: the last step's text, calls and results; every step; usage summed. */
export interface LoopResult {
  text: string;
  finishReason: FinishReason;
  usage: Usage;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
  toolResults: ToolResultEntry[];
  response?: ResponseInfo | null;
  steps: StepResult[];
}

/** The call ops: their params (as an argument tuple) and results. */
export interface CallOps {
  'generate_text': { args: [params: GenerateTextParams]; result: GenerateTextResult };
  'generate_object': { args: [params: GenerateObjectParams]; result: GenerateObjectResult };
  'aimux.version': { args: [params?: Wire.AimuxVersionParams]; result: VersionResult };
  'aimux.manifest': { args: [params?: Wire.AimuxManifestParams]; result: Manifest };
}

/** The stream ops. */
export interface StreamOps {
  'stream_text': { params: StreamTextParams };
}

type CallArgs<Op extends string> = Op extends keyof CallOps ? CallOps[Op]['args'] : [params?: object];
type CallResult<Op extends string> = Op extends keyof CallOps ? CallOps[Op]['result'] : unknown;
type StreamParams<Op extends string> = Op extends keyof StreamOps ? StreamOps[Op]['params'] : object | undefined;

/**
 * Calls a request/response op on libaimux (on koffi's worker pool: the event loop
 * never blocks). Resolves with the parsed result; rejects with the decoded AimuxError.
 */
export declare function call<Op extends string>(op: Op, ...args: CallArgs<Op>): Promise<CallResult<Op>>;
/** generate_text with host tools: the loop on this event loop, resolved with every step. */
export declare function call(op: 'generate_text', params: GenerateTextParams, options: CallOptions & { tools: HostTools }): Promise<LoopResult>;

/** Streams the events of a stream op (e.g. "stream_text"). */
export declare function stream<Op extends string>(op: Op, params: StreamParams<Op>, options?: StreamOptions & { tools?: undefined }): AsyncGenerator<StreamEvent, void, undefined>;
/** A stream with host tools: the loop's events, each host call answered by its execute. */
export declare function stream<Op extends string>(op: Op, params: StreamParams<Op>, options: StreamOptions & { tools: HostTools }): AsyncGenerator<LoopEvent, void, undefined>;

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

// -- the typed API: the AI SDK's names, one options object -------------------------------------

/** A tool of the typed API: its spec, and `execute` when the host runs it. */
export type TypedTool<Input = any> = Omit<ToolSpec, 'execute'> & {
  /** Its value goes to the model; `ToolResult.error…` is a tool-level error; a throw fails the call. */
  execute?: (input: Input, options: ToolExecuteOptions) => unknown;
};
type TypedCommon = {
  tools?: Record<string, TypedTool> | null;
  /** Aborting it cancels the call (and every running execute). */
  abortSignal?: AbortSignal;
};
export type GenerateTextOptions = Omit<GenerateTextParams, 'tools'> & TypedCommon;
export type StreamTextOptions = Omit<StreamTextParams, 'tools'> & TypedCommon;
export type GenerateObjectOptions = Omit<GenerateObjectParams, 'tools'> & {
  /** generateObject runs no host tools: the model's calls are reported on `toolCalls`. */
  tools?: Record<string, Omit<ToolSpec, 'execute'> & { execute?: never }> | null;
  abortSignal?: AbortSignal;
};
/** A result of generateText: with host tools, `steps` and the last step's `toolResults` too. */
export type GenerateTextOutcome = GenerateTextResult & Partial<Pick<LoopResult, 'steps' | 'toolResults'>>;

/** generate_text as the AI SDK spells it: `generateText({model, prompt, tools, stopWhen, abortSignal})`. */
export declare function generateText(options: GenerateTextOptions): Promise<GenerateTextOutcome>;
/** stream_text as the AI SDK spells it: iterate it for the loop's events. */
export declare function streamText(options: StreamTextOptions): AsyncGenerator<LoopEvent, void, undefined>;
/** generate_object as the AI SDK spells it: `generateObject({model, prompt, schema})`. */
export declare function generateObject(options: GenerateObjectOptions): Promise<GenerateObjectResult>;
