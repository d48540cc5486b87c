/** The domains of the error codes; a newer core may send a kind this list lacks. */
export type AimuxKind = 'aimux' | 'recording' | 'binding' | 'protocol' | (string & {});

/** A source node: a snapshot of an external exception (socket, TLS, JSON decoder, …). */
export interface AimuxSourceNodeJSON {
  message: string;
  /** The exception's class name, e.g. "ConnectionRefusedError". */
  type?: string;
  cause?: AimuxNodeJSON | AimuxSourceNodeJSON;
  truncated?: string[];
}

/** An aimux node: `{kind, code, message, error, cause?}`. */
export interface AimuxNodeJSON {
  kind: AimuxKind;
  code: number;
  message: string;
  /** The typed payload: `name` plus the variant's fields, camelCase. */
  error: { name?: string; [field: string]: unknown };
  cause?: AimuxNodeJSON | AimuxSourceNodeJSON;
  truncated?: string[];
}

/** The envelope: every failure that leaves the core (CONTRACT §1). */
export interface AimuxEnvelope extends AimuxNodeJSON {
  retryable: boolean;
  retryAfterMs?: number;
}

/** A node below the root of a decoded chain. */
export type AimuxChainError = AimuxCauseError | AimuxSourceError;

export interface AimuxErrorOptions {
  cause?: AimuxChainError;
  /** AI_RetryError: the decoded attempts. */
  errors?: ReadonlyArray<AimuxChainError>;
  /** The envelope text as received. */
  json?: string;
}

/** Marker carried by every node of a decoded chain. */
export declare const AIMUX_NODE_MARKER: unique symbol;
export declare function markerFor(className: string): symbol;
export declare function hasMarker(value: unknown, marker: symbol): boolean;
/** True for any node of a decoded chain (root, aimux cause, source), from any copy of the package. */
export declare function isAimuxNode(error: unknown): error is AimuxError | AimuxCauseError | AimuxSourceError;

/** The root of a decoded envelope. */
export declare class AimuxError extends Error {
  constructor(envelope: AimuxEnvelope, options?: AimuxErrorOptions);
  static readonly marker: symbol;
  /** True for a root error (any variant), from any copy of the package. */
  static isInstance(error: unknown): error is AimuxError;
  readonly kind: AimuxKind;
  readonly code: number;
  /** `error.name` (e.g. "AI_APICallError"), or the class's name when the node has none. */
  readonly name: string;
  /** `error.name` as sent, or null. */
  readonly errorName: string | null;
  readonly message: string;
  /** The typed payload as sent (`error`). */
  readonly payload: Readonly<Record<string, unknown>>;
  readonly retryable: boolean;
  /** The server's retry hint, only when one was observed. */
  readonly retryAfterMs?: number;
  /**
   * The HTTP status of what failed (`error.statusCode`), only when one was observed: an
   * AI_APICallError's own; an AI_RetryError's is its last attempt's.
   */
  readonly statusCode?: number;
  readonly truncated?: ReadonlyArray<string>;
  /** The next link of the native chain. */
  readonly cause?: AimuxChainError;
  readonly envelope: AimuxEnvelope;
  /** The envelope JSON text. */
  readonly json: string;
  /** The envelope object (a copy). */
  toJSON(): AimuxEnvelope;
}

/** An aimux node inside the chain. */
export declare class AimuxCauseError extends Error {
  constructor(node: AimuxNodeJSON, options?: AimuxErrorOptions);
  static readonly marker: symbol;
  static isInstance(error: unknown): error is AimuxCauseError;
  readonly kind: AimuxKind;
  readonly code: number;
  readonly name: string;
  readonly errorName: string | null;
  readonly message: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly truncated?: ReadonlyArray<string>;
  readonly cause?: AimuxChainError;
  readonly node: AimuxNodeJSON;
  toJSON(): AimuxNodeJSON;
}

/** A snapshot of an external exception inside the chain. */
export declare class AimuxSourceError extends Error {
  constructor(node: AimuxSourceNodeJSON, options?: { cause?: AimuxChainError });
  static readonly marker: symbol;
  static isInstance(error: unknown): error is AimuxSourceError;
  /** The exception's class name, or null. */
  readonly type: string | null;
  readonly message: string;
  readonly truncated?: ReadonlyArray<string>;
  readonly cause?: AimuxChainError;
  readonly node: AimuxSourceNodeJSON;
  toJSON(): AimuxSourceNodeJSON;
}

export type AimuxErrorClass = {
  new (envelope: AimuxEnvelope, options?: AimuxErrorOptions): AimuxError;
  readonly prototype: AimuxError;
};
export type AimuxCauseErrorClass = {
  new (node: AimuxNodeJSON, options?: AimuxErrorOptions): AimuxCauseError;
  readonly prototype: AimuxCauseError;
};
