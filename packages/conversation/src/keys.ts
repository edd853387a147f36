import { hash } from "node:crypto";
import { canonicalJson, type JsonValue, normalizeScope, type Scope, validateId } from "@alma-harness/core";

function sha256(text: string): string {
  // One-shot hashing (Node 20.12+; the engines floor is 20.19): the same digest without a Hash object.
  return hash("sha256", text, "hex");
}

/**
 * The root key of a conversation turn: a hash of the scope, the session and the host's delivery
 * key, so a host can `read` without loading content. 67 printable characters.
 */
export function conversationRootKey(scope: Scope, sessionId: string, idempotencyKey: string): string {
  const s = normalizeScope(scope);
  validateId("sessionId", sessionId);
  validateId("idempotencyKey", idempotencyKey);
  return `c1_${sha256(canonicalJson([s.org, s.uid, sessionId, idempotencyKey]))}`;
}

/** The bindings of a turn: what a retry under the same key must match. */
export function bindingOf(value: JsonValue): string {
  return `b1_${sha256(canonicalJson(value))}`;
}
