import type { AuditEvent, AuditLog } from "@alma-harness/core";

/**
 * Sees every trail record the audit log accepted, right after its append resolved, in the turn's
 * own async context (so an OpenTelemetry context the host entered is the active one). Called
 * synchronously; a throw is swallowed: an observer never fails or slows a turn. A record the log
 * refused is never observed.
 */
export type TrailObserver = (event: AuditEvent) => void;

/** The audit log with `observe` told of each accepted record; `query` untouched. */
export function observedAudit(audit: AuditLog, observe: TrailObserver): AuditLog {
  return {
    async append(event) {
      await audit.append(event);
      try {
        observe(event);
      } catch {
        // the trail is written; what an observer makes of it is not the turn's concern
      }
    },
    query: (scope, query) => audit.query(scope, query),
  };
}
