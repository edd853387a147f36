import { createHash } from "node:crypto";
import { canonicalJson, type JsonValue, type Msg } from "@alma-harness/core";
import type {
  Continuation,
  OutputRef,
  StoredContinuation,
  TurnMessageOutput,
} from "./continuation.js";

/** Digests of frozen messages already hashed: a message is hashed once per process. */
const DIGESTS = new WeakMap<Msg, string>();

/** The digest a stored record refers to a message by: SHA-256 (hex) of its canonical JSON. */
export function messageDigest(message: Msg): string {
  const known = DIGESTS.get(message);
  if (known !== undefined) return known;
  const digest = digestOf(message as unknown as JsonValue);
  if (Object.isFrozen(message)) DIGESTS.set(message, digest);
  return digest;
}

/** SHA-256 (hex) of a JSON value's canonical text (the one rule for writing and checking). */
export function digestOf(value: JsonValue): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

/**
 * A continuation as a store keeps it (version 2): every message by reference to a turn output, and
 * the outputs the store does not hold yet (`held`: digests it stored for this turn), each once. A
 * boundary so writes only the messages that are new since the last one.
 */
export function referToOutputs(
  c: Continuation,
  held: ReadonlySet<string>,
): { readonly record: StoredContinuation; readonly outputs: readonly TurnMessageOutput[] } {
  const outputs: TurnMessageOutput[] = [];
  const added = new Set<string>();
  const messages = c.messages.map(({ message }): OutputRef => {
    const digest = messageDigest(message);
    if (!held.has(digest) && !added.has(digest)) {
      added.add(digest);
      outputs.push({ digest, message });
    }
    return { ref: "output", digest };
  });
  return { record: { ...c, messages }, outputs };
}
