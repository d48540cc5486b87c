import type { AimuxError, AimuxCauseError, AimuxSourceError, AimuxEnvelope, AimuxNodeJSON } from './base.js';
import type { ErrorCode, VariantInfo } from './generated/variants.js';

/** One link of the native chain as decode-chain prints it. */
export interface ChainEntry {
  kind: string;
  code: number;
  name: string | null;
  message: string;
}

/** The catalogue entry of an aimux node, or undefined when its kind/name/code is unknown. */
export declare function lookupVariant(node: AimuxNodeJSON): VariantInfo | undefined;
/** Decodes an envelope (JSON text, its bytes, or the parsed object) into its root error. */
export declare function decodeEnvelope(envelope: string | Uint8Array | AimuxEnvelope): AimuxError;
/** The native cause chain from `error` (inclusive), following `cause`. */
export declare function nativeChain(error: unknown): Array<AimuxError | AimuxCauseError | AimuxSourceError>;
export declare function chainEntry(error: unknown): ChainEntry;
/** decode → walk the native chain → entries (what `decode-chain` prints). */
export declare function decodeChain(envelope: string | Uint8Array | AimuxEnvelope): ChainEntry[];
/** The long-lived decode-chain answer for one envelope (DESIGN.md "decode-chain"). */
export type DecodeAnswer =
  | { chain: ChainEntry[]; root: { retryable: boolean; retryAfterMs: number | null } }
  | { rejected: { code: (typeof ErrorCode)['INVALID_WIRE_JSON']; message: string } };
export declare function decodeAnswer(envelope: string | Uint8Array | AimuxEnvelope): DecodeAnswer;
