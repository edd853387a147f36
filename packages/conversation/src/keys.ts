import { hash } from "node:crypto";
import {
  canonicalJson,
  type JsonValue,
  normalizeScope,
  type Scope,
  type TrailKey,
  trailHash,
  validateId,
} from "@alma-harness/core";

function sha256(text: string): string {
  // One-shot hashing (Node 20.12+; the engines floor is 20.19): the same digest without a Hash object.
  return hash("sha256", text, "hex");
}

/**
 * The root key of a conversation turn: a hash of the scope, the session and the host's delivery
 * key, so a host can `read` without loading content. 67 printable characters.
 */
export function conversationRootKey(
  scope: Scope,
  sessionId: string,
  idempotencyKey: string,
): string {
  const s = normalizeScope(scope);
  validateId("sessionId", sessionId);
  validateId("idempotencyKey", idempotencyKey);
  return `c1_${sha256(canonicalJson([s.org, s.uid, sessionId, idempotencyKey]))}`;
}

/** The bindings of a turn: what a retry under the same key must match. */
export function bindingOf(value: JsonValue): string {
  return `b1_${sha256(canonicalJson(value))}`;
}

/** Scopes whose prompt-cache key is remembered per runner before the memory starts again. */
const CACHE_KEYS_KEPT = 4096;

/**
 * OpenAI's `prompt_cache_key` for a runner: the scope's keyed hash, so requests of one person share
 * a cache route without the provider ever seeing the tenant's or the person's id. A pure function
 * of the key and the scope: one HMAC per scope (remembered, bounded), not one per model call.
 */
export function promptCacheKey(key: TrailKey): (scope: Scope) => string {
  const known = new Map<string, string>();
  return (scope) => {
    const s = normalizeScope(scope);
    const at = `${s.org}/${s.uid}`;
    let value = known.get(at);
    if (value === undefined) {
      value = trailHash(key, s, "prompt_cache_key");
      if (known.size >= CACHE_KEYS_KEPT) known.clear();
      known.set(at, value);
    }
    return value;
  };
}
