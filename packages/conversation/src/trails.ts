import {
  type AuditQuery,
  type AuditRecord,
  normalizeScope,
  type Scope,
  sessionPseudonym,
} from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";

/** An audit query by the session's real id (the trails store only its keyed pseudonym). */
export type SessionTrailQuery = Omit<AuditQuery, "sessionId"> & { readonly sessionId?: string };

export interface AuditPage {
  readonly items: readonly AuditRecord[];
  readonly nextCursor?: string;
}

/** Translates the session id once, then reads the audit log as it is (scope-bound, paged). */
export async function readTrails(
  config: Pick<ResolvedConfig, "trailKey" | "stores">,
  scope: Scope,
  query: SessionTrailQuery = {},
): Promise<AuditPage> {
  const s = normalizeScope(scope);
  const { sessionId, ...rest } = query;
  const stored: AuditQuery =
    sessionId === undefined
      ? rest
      : { ...rest, sessionId: sessionPseudonym(config.trailKey, s, sessionId) };
  return config.stores.audit.query(s, stored);
}
