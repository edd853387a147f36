import {
  type JsonObject,
  type Usage,
  type UsageEvidence,
  canonicalJson,
  usageProblem,
} from "@alma-harness/core";
import { StreamInvalidError } from "./errors.js";

/** A stream's usage event: known or unpriced usage must be safe counts; any other status is closed. */
export function checkEvidence(evidence: UsageEvidence): void {
  if (evidence === null || typeof evidence !== "object")
    throw new StreamInvalidError("usage", "usage evidence must be an object");
  if (evidence.status === "known" || evidence.status === "unpriced") {
    const problem = usageProblem(evidence.usage);
    if (problem) throw new StreamInvalidError("usage", problem);
  } else if (evidence.status !== "unknown" && evidence.status !== "not_dispatched") {
    throw new StreamInvalidError("usage", "unknown usage evidence status");
  }
}

/**
 * The round's evidence from the usage event and the terminal frame's usage: both present must
 * agree (whatever order their keys came in), either alone is the evidence, neither is `unknown`.
 */
export function reconcileUsage(
  streamed: UsageEvidence | undefined,
  terminal: Usage | undefined,
): UsageEvidence {
  if (terminal !== undefined) {
    const problem = usageProblem(terminal);
    if (problem) throw new StreamInvalidError("usage", problem);
    if (
      streamed &&
      streamed.status === "known" &&
      !sameJsonObject(streamed.usage as unknown as JsonObject, terminal as unknown as JsonObject)
    ) {
      throw new StreamInvalidError("usage", "the usage event and the terminal frame disagree");
    }
    return streamed ?? { status: "known", usage: terminal };
  }
  return streamed ?? { status: "unknown" };
}

/** Key-order-free equality of two snapshotted objects: flat ones compared field by field, others canonically. */
function sameJsonObject(a: JsonObject, b: JsonObject): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    const x = a[key];
    if (typeof x === "object" && x !== null) return canonicalJson(a) === canonicalJson(b);
    if (!Object.hasOwn(b, key) || x !== b[key]) return false;
  }
  return true;
}
