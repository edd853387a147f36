import { createHash } from "node:crypto";
import {
  attributedDecision,
  canonicalJson,
  type JsonObject,
  type PolicyReason,
} from "@alma-harness/core";
import type { PendingAsk } from "./continuation.js";

/**
 * A person's (or the kernel's) answer to a parked ask. `by: "kernel"` is every answer no person
 * gave (an expiry, a missing resolver, a shutdown): the trail and the model never read it as an
 * operator's decision.
 */
export interface AskDecision {
  readonly allowed: boolean;
  readonly by: "operator" | "kernel";
  /** Why a denial happened, closed: `operator_denied` for a person's, `ask_expired` for the TTL. */
  readonly reason?: PolicyReason;
}

/**
 * Whether a decision is attributed honestly (core's rule, one owner): an allow carries no reason;
 * a person's denial is the operator's (`operator_denied` or none); any other denial is the
 * kernel's, with its closed reason.
 */
export function attributed(d: {
  readonly allowed?: unknown;
  readonly by?: unknown;
  readonly reason?: unknown;
}): d is AskDecision {
  return attributedDecision(d);
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * The digest an ask is bound to: SHA-256 of the canonical JSON of `[tool, callId, input]`. A
 * decision recorded for another digest (other input, another call) is refused by whoever records
 * it; a host computes it from the same three values.
 */
export function askDigest(tool: string, callId: string, input: JsonObject): string {
  return sha256(canonicalJson([tool, callId, input]));
}

/** The pending ask of one call of a turn: its id is derived, so parking again names the same ask. */
export function pendingAsk(
  turnId: string,
  call: { readonly id: string; readonly tool: string; readonly input: JsonObject },
  action: string,
): PendingAsk {
  return {
    askId: `ask_${sha256(`${turnId}\u0000${call.id}`).slice(0, 32)}`,
    callId: call.id,
    tool: call.tool,
    digest: askDigest(call.tool, call.id, call.input),
    action,
  };
}

/** A call's effect key: derived from the turn and the call, so every run of the turn mints the same. */
export function effectKey(turnId: string, callId: string): string {
  return `eff_${sha256(`effect\u0000${turnId}\u0000${callId}`).slice(0, 40)}`;
}
