import { ValidationError } from "../errors.js";
import { type JsonValue, snapshot } from "../snapshot.js";
import { CONTINUATION_LIMITS, type TurnOutput } from "./parked.js";
import { closedObject } from "./rules.js";

/** A parked turn's outputs (issue 25): the messages it stored once, under their digests. */

const DIGEST = /^[0-9a-f]{64}$/;

export function validateDigest(value: unknown, field: string): string {
  if (typeof value !== "string" || !DIGEST.test(value))
    throw new ValidationError(field, "digest", "a digest is 64 hex digits (SHA-256)");
  return value;
}

const NO_OUTPUTS: readonly TurnOutput[] = Object.freeze([]);

/** A write's outputs: `{ digest, message }` each, distinct digests, under the continuation's bounds. */
export function normalizeOutputs(raw: unknown): readonly TurnOutput[] {
  if (raw === undefined) return NO_OUTPUTS;
  if (!Array.isArray(raw))
    throw new ValidationError("outputs", "array", "outputs is an array of { digest, message }");
  const copy = snapshot(raw as JsonValue, CONTINUATION_LIMITS) as readonly JsonValue[];
  const seen = new Set<string>();
  return Object.freeze(
    copy.map((entry, i) => {
      const o = closedObject(`outputs[${i}]`, entry, ["digest", "message"]);
      const digest = validateDigest(o.digest, `outputs[${i}].digest`);
      if (seen.has(digest))
        throw new ValidationError("outputs", "distinct", "a write's output digests are distinct");
      seen.add(digest);
      if (o.message === undefined)
        throw new ValidationError(`outputs[${i}].message`, "required", "an output has a message");
      return Object.freeze({ digest, message: o.message as JsonValue });
    }),
  );
}

/** A turn's outputs as stores return them: the held ones, then a write's new digests, in digest order. */
export function mergedOutputs(
  held: readonly TurnOutput[],
  added: readonly TurnOutput[],
): readonly TurnOutput[] {
  const byDigest = new Map(held.map((o) => [o.digest, o]));
  for (const o of added) if (!byDigest.has(o.digest)) byDigest.set(o.digest, o);
  return Object.freeze([...byDigest.values()].sort(byDigestOrder));
}

const byDigestOrder = (a: TurnOutput, b: TurnOutput) =>
  a.digest < b.digest ? -1 : a.digest > b.digest ? 1 : 0;
