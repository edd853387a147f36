import {
  type BudgetCapName,
  type CostReceipt,
  type JsonObject,
  type JsonValue,
  type RefusalCategory,
  refusalCategory,
  type StopReason,
  type UncertainCause,
  type UnpricedReason,
} from "@alma-harness/core";
import { normalizeCostReceipt } from "@alma-harness/core/stores";
import { argumentsOf, type StepOutput } from "@alma-harness/execution";
import type { NormalizedStep } from "./request.js";

/** Why a paid answer did not give a valid object (closed: a host can switch on it). */
export type InvalidReason =
  /** No text and no tool call to read an object from. */
  | "empty"
  /** The text (or the tool call's arguments) is not a JSON object. */
  | "not_json"
  /** A JSON object that does not satisfy the output schema (`problem` says where). */
  | "schema"
  /** The answer was cut at the output ceiling. */
  | "max_tokens"
  /** The provider refused to answer (`refusal` carries the closed category). */
  | "refusal"
  /** A valid object larger than the runner's result ceiling (`maxResultChars`): paid, never truncated. */
  | "output_chars";

/** Why nothing was paid and nothing was answered. */
export type RefusedReason =
  /** The policy could not route the intent (or named a client the runner does not have): nothing durable. */
  | "not_admitted"
  /** A price row the call could reach is missing: zero cost, nothing claimed. */
  | "unpriced"
  /** The call's worst case does not fit under a block cap: zero cost, nothing claimed. */
  | "cap"
  /** The provider refused before anything streamed, attested by its own evidence: settled at zero (`receipt`). */
  | "rejected";

/**
 * What one governed step call came to. `completed`: the answer validated against the schema,
 * with its receipt. `invalid`: the model answered (and was paid: the receipt) but the answer did
 * not validate. `refused`: nothing was paid. `reconciliation_required`: the call may have been
 * sent, or its result could not be made durable: never sent again, never retried blindly.
 * `replayed` is true when the answer is the stored result of an earlier call under the same key.
 */
export type StepResult =
  | {
      readonly status: "completed";
      readonly operationId: string;
      readonly object: JsonObject;
      readonly stopReason: StopReason;
      readonly receipt: CostReceipt;
      readonly replayed: boolean;
    }
  | {
      readonly status: "invalid";
      readonly operationId: string;
      readonly reason: InvalidReason;
      /** With `schema`: the validator's first problem as `path message` (schema terms, never the answer's values). */
      readonly problem?: string;
      readonly refusal?: RefusalCategory;
      readonly stopReason: StopReason;
      readonly receipt: CostReceipt;
      readonly replayed: boolean;
    }
  | {
      readonly status: "refused";
      readonly operationId: string;
      readonly reason: RefusedReason;
      readonly cap?: BudgetCapName;
      readonly missing?: UnpricedReason;
      readonly receipt?: CostReceipt;
      readonly replayed: boolean;
    }
  | {
      readonly status: "reconciliation_required";
      readonly operationId: string;
      readonly cause: UncertainCause;
      readonly replayed: boolean;
    };

export type StoredResult = Exclude<StepResult, { readonly status: "reconciliation_required" }>;

/** The object a settled answer gives, or why it gives none. */
export function evaluate(
  step: NormalizedStep,
  output: StepOutput,
):
  | { readonly object: JsonObject }
  | {
      readonly reason: InvalidReason;
      readonly problem?: string;
      readonly refusal?: RefusalCategory;
    } {
  if (output.stopReason === "refusal")
    return { reason: "refusal", refusal: output.refusal ?? "unspecified" };
  if (output.stopReason === "max_tokens") return { reason: "max_tokens" };
  // A forced (or the only) tool call is the answer in tool mode; else the text is (native structured output).
  const call =
    output.stopReason === "tool_use" && output.toolCalls.length === 1
      ? output.toolCalls[0]
      : undefined;
  const text = call === undefined ? output.text.trim() : call.arguments;
  if (call === undefined && text.length === 0) return { reason: "empty" };
  const object = argumentsOf({ id: "answer", name: step.output.name, arguments: text });
  if (object === undefined) return { reason: "not_json" };
  const problem = step.compiled.check(object);
  if (problem !== undefined) return { reason: "schema", problem };
  return { object };
}

/** The stored envelope of a result (schema version 1). */
export function envelopeOf(result: StoredResult): JsonObject {
  const { replayed: _replayed, operationId: _op, ...rest } = result;
  return { v: 1, ...(rest as unknown as JsonObject) };
}

/** A stored envelope read back as the result it recorded, marked replayed. An unknown shape is `undefined`. */
export function resultOf(
  operationId: string,
  envelope: JsonValue | undefined,
): StoredResult | undefined {
  if (envelope === null || typeof envelope !== "object" || Array.isArray(envelope))
    return undefined;
  const e = envelope as Record<string, JsonValue>;
  if (e.v !== 1) return undefined;
  let receipt: ReturnType<typeof normalizeCostReceipt> | undefined;
  try {
    receipt = e.receipt === undefined ? undefined : normalizeCostReceipt(e.receipt);
  } catch {
    // A stored receipt that no longer reads as one: the envelope is not a result this version knows.
    return undefined;
  }
  const stopReason = typeof e.stopReason === "string" ? e.stopReason : "none";
  if (
    e.status === "completed" &&
    receipt &&
    e.object !== null &&
    typeof e.object === "object" &&
    !Array.isArray(e.object)
  ) {
    return {
      status: "completed",
      operationId,
      object: e.object as JsonObject,
      stopReason,
      receipt,
      replayed: true,
    };
  }
  if (e.status === "invalid" && receipt && typeof e.reason === "string") {
    return {
      status: "invalid",
      operationId,
      reason: e.reason as InvalidReason,
      ...(typeof e.problem === "string" ? { problem: e.problem } : {}),
      ...(e.refusal !== undefined ? { refusal: refusalCategory(e.refusal) } : {}),
      stopReason,
      receipt,
      replayed: true,
    };
  }
  if (e.status === "refused" && typeof e.reason === "string") {
    return {
      status: "refused",
      operationId,
      reason: e.reason as RefusedReason,
      ...(typeof e.cap === "string" ? { cap: e.cap as BudgetCapName } : {}),
      ...(typeof e.missing === "string" ? { missing: e.missing as UnpricedReason } : {}),
      ...(receipt ? { receipt } : {}),
      replayed: true,
    };
  }
  return undefined;
}
