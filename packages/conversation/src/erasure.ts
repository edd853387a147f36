import type { ErasureReport, Scope } from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";

/**
 * The value the audit trail stores as `sessionId` for this session: what the audit part of an
 * erasure removes. The one place the runner derives it — when trails store a keyed pseudonym of
 * the session id, this returns that pseudonym (the same function the trails use), and erasure keeps
 * finding the events.
 */
export function auditSessionValue(_config: ResolvedConfig, _scope: Scope, sessionId: string): string {
  return sessionId;
}

/**
 * Erases one session in every store of the runner (one transaction where the store allows; see
 * `SessionErasure`). A turn holding the session is fenced: its admission goes with the erasure.
 */
export function eraseSession(config: ResolvedConfig, scope: Scope, sessionId: string): Promise<ErasureReport> {
  return config.stores.erasure.eraseSession(scope, sessionId, { auditSessionId: auditSessionValue(config, scope, sessionId) });
}

/** Erases everything of a scope in every store of the runner. */
export function eraseScope(config: ResolvedConfig, scope: Scope): Promise<ErasureReport> {
  return config.stores.erasure.eraseScope(scope);
}
