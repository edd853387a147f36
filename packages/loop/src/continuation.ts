import {
  AlmaError,
  type ModelChoice,
  type Msg,
  type RoutingIntent,
  type Scope,
  type ToolResultBlock,
} from "@alma-harness/core";
import type { AccountState } from "@alma-harness/execution";
import type { TerminalReason, TurnCallFailure, TurnToolCall } from "./result.js";

/**
 * A turn's progress as data (issue 25): what a driver needs to go on from a step boundary, closed
 * and versioned. Version 1 holds the root, the main steps started, what the turn does next (with
 * the current step's calls and their states), the turn's own messages, the counters the limits
 * read, the money the governed call moved, the run-scoped grants and what the result reports.
 *
 * The driver holds the turn's messages whole (`inline`, frozen and certified as the log holds them).
 * Stored, a version-2 record refers to each by the digest of a turn output stored once beside it
 * (`{ ref: "output", digest }`, see `referToOutputs`), so a step boundary writes only its new
 * messages; version 1 carried every message inline at every boundary. Every reader keeps reading
 * version 1 (the corpora under `test/continuations/` pin both).
 */
export const CONTINUATION_VERSION = 2;

/** The versions `readContinuation` reads. */
export const CONTINUATION_VERSIONS: readonly number[] = Object.freeze([1, 2]);

/** Why a coming main step is its turn's last, as the continuation records it. */
export type ContinuationLast = "call" | "step" | "time";

/**
 * A permission ask the turn parked on: bound to a digest of the tool's name, the call id and the
 * canonical input, so a decision made for other input is refused. Content-free: the action is the
 * recorded trail value (a vocabulary word or its keyed hash), never the subject.
 */
export interface PendingAsk {
  readonly askId: string;
  readonly callId: string;
  readonly tool: string;
  /** SHA-256 (hex) of the canonical JSON of `[tool, callId, input]`. */
  readonly digest: string;
  readonly action: string;
}

interface CallBase {
  readonly id: string;
  readonly name: string;
  /** The arguments exactly as the model wrote them (parsed and checked when the call runs). */
  readonly arguments: string;
}

/**
 * A call of the current step and where it stands: not run yet (`requested`), waiting for a
 * person's decision (`asked`), or answered (`done`, with the result the model will read).
 */
export type ContinuationCall =
  | (CallBase & { readonly state: "requested" })
  | (CallBase & { readonly state: "asked"; readonly ask: PendingAsk })
  | (CallBase & { readonly state: "done"; readonly result: ToolResultBlock });

/** What the driver does next from this boundary. */
export type ContinuationNext =
  | { readonly kind: "call_model" }
  | {
      readonly kind: "run_tools";
      readonly step: number;
      readonly last: ContinuationLast | null;
      readonly calls: readonly ContinuationCall[];
    }
  | { readonly kind: "finish"; readonly terminalReason: TerminalReason };

/** A message of the turn, whole: what the driver holds, and what version 1 stored. */
export interface ContinuationMessage {
  readonly ref: "inline";
  readonly message: Msg;
}

/** A message stored once as a turn output (version 2): SHA-256 (hex) of its canonical JSON. */
export interface OutputRef {
  readonly ref: "output";
  readonly digest: string;
}

/** One stored turn output: the message and the digest a record refers to it by. */
export interface TurnMessageOutput {
  readonly digest: string;
  readonly message: Msg;
}

/** A continuation as a store keeps it: its messages whole or by reference to the turn's outputs. */
export interface StoredContinuation extends Omit<Continuation, "messages" | "version"> {
  readonly version: 1 | 2;
  readonly messages: readonly (ContinuationMessage | OutputRef)[];
}

export interface ContinuationCounters {
  readonly callsUsed: number;
  readonly operations: number;
  readonly requestedToolCalls: number;
  readonly modelTokens: number;
  readonly webSearches: number;
}

/** The turn's money at the boundary (nothing in flight): the governed call's own `AccountState`. */
export type ContinuationReservations = AccountState;

export interface Continuation {
  /** The record's version: a record read back is in the current one, its messages whole. */
  readonly version: typeof CONTINUATION_VERSION;
  readonly root: {
    readonly scope: Scope;
    readonly sessionId: string;
    readonly rootKey: string;
    readonly turnId: string;
  };
  /** The turn's intent: a resume must bring the same (its sensitivity bounds every call). */
  readonly intent: RoutingIntent;
  /** The turn's granted tool names (a profile), or null for every registered tool. */
  readonly grant: readonly string[] | null;
  /** The turn's main route, pinned for all its main steps (a resume never asks the policy again). */
  readonly choice: ModelChoice;
  /** Main steps started. */
  readonly step: number;
  readonly next: ContinuationNext;
  /** The session view's revision the turn started from, and whether the turn rotated it. */
  readonly baseRevision: number;
  readonly rotated: boolean;
  /** The turn's own messages, in order (a rotation's records first). */
  readonly messages: readonly ContinuationMessage[];
  readonly counters: ContinuationCounters;
  /** Every call id a model returned in the turn (children's too): a repeat is refused as before. */
  readonly callIds: readonly string[];
  readonly reservations: ContinuationReservations;
  /** Run-scoped permission grants from allowed asks (`action` and `subject`, joined). */
  readonly grants: readonly string[];
  readonly toolCalls: readonly TurnToolCall[];
  readonly warnings: readonly string[];
  /** Metrics already warned about at half their limit. */
  readonly warned: readonly string[];
  readonly failures: readonly TurnCallFailure[];
}

/**
 * Where a turn's continuation goes at each step boundary. Awaited; a throw makes the turn
 * uncertain (cause `continuation`). Absent from the engine: no continuation is built.
 */
export interface ContinuationWriter {
  write(continuation: Continuation): void | Promise<void>;
}

/** A stored continuation this runtime cannot read: its path and the rule it broke. */
export class ContinuationError extends AlmaError {
  readonly path: string;
  constructor(path: string, message: string, cause?: unknown) {
    super("invalid_continuation", `${path}: ${message}`, { cause });
    this.path = path;
  }
}

/** How large a stored continuation may be (core's bound: the stores hold it under the same). */
export { CONTINUATION_LIMITS } from "@alma-harness/core";
