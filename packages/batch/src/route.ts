import {
  type ModelChoice,
  type ModelJobTransport,
  type ModelPolicy,
  type ModelRequest,
  normalizeModelChoice,
  ValidationError,
} from "@alma-harness/core";
import type { CheckedItem, CheckedJob } from "./input.js";

/** An item routed: the policy's choice at the batch tier, and its request. */
export interface RoutedItem {
  readonly item: CheckedItem;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
}

/**
 * Routes every item by its own intent (tier × sensitivity), as any call is routed, then pins the
 * batch tier: a job is answered by the batch API, so it is priced, reserved and settled at that
 * tier's row, never another's. Every item must land on one transport (one provider batch); a
 * policy that throws, or a client with no transport, is a `ValidationError` before any I/O.
 */
export function routeJob(
  job: CheckedJob,
  policy: ModelPolicy,
  transports: ReadonlyMap<string, ModelJobTransport>,
): { readonly transport: ModelJobTransport; readonly items: readonly RoutedItem[] } {
  let transport: ModelJobTransport | undefined;
  const items = job.items.map((item, i): RoutedItem => {
    let resolved: ModelChoice;
    try {
      resolved = normalizeModelChoice(policy.resolve({ ...item.intent }));
    } catch (error) {
      throw new ValidationError(
        `job.items[${i}].intent`,
        "not_routed",
        `the policy refused item ${item.customId}: ${(error as Error)?.message ?? String(error)}`,
      );
    }
    const choice: ModelChoice = Object.freeze({ ...resolved, serviceTier: "batch" });
    const own = transports.get(choice.clientId);
    if (!own)
      throw new ValidationError(
        `job.items[${i}].intent`,
        "no_transport",
        `item ${item.customId} routes to ${choice.clientId}, which has no batch transport`,
      );
    if (transport && own !== transport)
      throw new ValidationError(
        `job.items[${i}].intent`,
        "one_transport",
        "a job's items route to one batch transport",
      );
    transport = own;
    const maxOutputTokens = Math.min(
      item.maxOutputTokens ?? choice.maxOutputTokens,
      choice.maxOutputTokens,
    );
    const request: ModelRequest = Object.freeze({
      ...item.draft,
      model: choice.model,
      maxOutputTokens,
      serviceTier: "batch",
    });
    return Object.freeze({ item, choice, request });
  });
  return { transport: transport as ModelJobTransport, items };
}
