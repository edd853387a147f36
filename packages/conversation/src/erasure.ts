import { type ErasureReport, type Scope, sessionPseudonym } from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";

/**
 * The value the audit trail stores as `sessionId` for this session: its keyed pseudonym under the
 * runner's trail key (`sessionPseudonym`, the function the trails themselves use), so the audit part
 * of an erasure finds exactly the events the session's turns wrote.
 */
export function auditSessionValue(config: ResolvedConfig, scope: Scope, sessionId: string): string {
  return sessionPseudonym(config.trailKey, scope, sessionId);
}

/**
 * Erases one session in every store of the runner (one transaction where the store allows; see
 * `SessionErasure`). A turn holding the session is fenced: its admission goes with the erasure.
 */
export async function eraseSession(
  config: ResolvedConfig,
  scope: Scope,
  sessionId: string,
): Promise<ErasureReport> {
  // async: a bad scope or id (the pseudonym derivation checks both) rejects, never throws synchronously.
  return await config.stores.erasure.eraseSession(scope, sessionId, {
    auditSessionId: auditSessionValue(config, scope, sessionId),
  });
}

/** Erases everything of a scope in every store of the runner. */
export async function eraseScope(config: ResolvedConfig, scope: Scope): Promise<ErasureReport> {
  return await config.stores.erasure.eraseScope(scope);
}
